package fallback_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/recourse-dev/recourse/chain"
	"github.com/recourse-dev/recourse/codec"
	"github.com/recourse-dev/recourse/codecs/openai"
	"github.com/recourse-dev/recourse/event"
	"github.com/recourse-dev/recourse/layer"
	"github.com/recourse-dev/recourse/layers/fallback"
	"github.com/recourse-dev/recourse/layers/retry"
	"github.com/recourse-dev/recourse/recoursetest"
)

// New builds the fallback layer; chain.WithPerCall places it above the
// engine. An SDK's request for gpt-4o meets an overloaded provider three
// times, then the same request for gpt-4o-mini is answered: the SDK reads
// that answer in its own wire format.
func ExampleNew() {
	busy := recoursetest.JSON(503, recoursetest.OpenAIError("server_error", "", "overloaded"))
	srv := recoursetest.NewServer(busy, busy, busy, recoursetest.JSON(200, recoursetest.OpenAIChat("hello from mini")))
	defer srv.Close()
	fl, err := fallback.New(fallback.Config{
		Codec:   openai.New(),
		Targets: []fallback.Target{{Model: "gpt-4o-mini"}},
		OnEvent: func(ev event.Event) error {
			if ev.Type == event.Fallback {
				fmt.Printf("falling back from %s to %s after %s (%d attempts)\n",
					ev.Fallback.From, ev.Fallback.To, ev.Fallback.Outcome, ev.Fallback.Attempts)
			}
			return nil
		},
	})
	if err != nil {
		panic(err)
	}
	p := retry.Policy{MaxAttempts: 3, BaseDelay: new(time.Duration(0))}
	ch, _ := chain.Default(openai.New(), chain.WithPolicy(p), chain.WithPerCall(fl))
	fmt.Println(ch.Order())
	sdk := &http.Client{Transport: ch} // what an SDK is given
	resp, err := sdk.Post(srv.URL+"/v1/chat/completions", "application/json",
		strings.NewReader(`{"model":"gpt-4o","messages":[{"role":"user","content":"hi"}]}`))
	if err != nil {
		panic(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	fmt.Println(resp.StatusCode, strings.Contains(string(body), "hello from mini"))
	fmt.Println("requests:", srv.Count())
	// Output:
	// fallback > retry > capture > progress > redirectguard > sender
	// falling back from gpt-4o to gpt-4o-mini after exhausted (3 attempts)
	// 200 true
	// requests: 4
}

// NewRun walks a call through its targets: the native client runs one per
// call (client.WithFallback). After each failed target, After says whether
// the call may go on to the next.
func ExampleNewRun() {
	run := fallback.NewRun(fallback.Rules{Statuses: []int{404}}, []string{"gpt-4o", "gpt-4o-mini", "llama3"},
		[]codec.Facts{{}, {}, {LocalInference: true}}, nil)
	notFound := layer.NewRecoveryError(event.OutcomeInterrupted, event.Failure{Category: event.CategoryHTTP, HTTPStatus: 404}, nil, nil)
	next, _, _ := run.After(context.Background(), 0, notFound, event.Event{})
	fmt.Println("after a named 404:", next)
	cancelled := layer.NewRecoveryError(event.OutcomeCancelled, event.Failure{Category: event.CategoryCancellation}, nil, context.Canceled)
	next, final, _ := run.After(context.Background(), 1, cancelled, event.Event{})
	fmt.Println("after cancelled:", next, final.Outcome, len(final.Targets))
	// Output:
	// after a named 404: true
	// after cancelled: false cancelled 2
}
