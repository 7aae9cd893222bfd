package stall_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"time"

	"github.com/recourse-dev/recourse/chain"
	"github.com/recourse-dev/recourse/chat"
	"github.com/recourse-dev/recourse/client"
	"github.com/recourse-dev/recourse/codecs/openai"
	"github.com/recourse-dev/recourse/event"
	"github.com/recourse-dev/recourse/layers/retry"
	"github.com/recourse-dev/recourse/layers/stall"
	"github.com/recourse-dev/recourse/recoursetest"
)

// New adds stall limits to the default chain. The provider's first stream
// sends one keepalive and goes silent: the idle limit ends that attempt
// (no output yet, so it is eligible) and the second attempt answers.
func ExampleNew() {
	var attempts atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		if attempts.Add(1) == 1 {
			_, _ = io.WriteString(w, ": keep-alive\n\n")
			http.NewResponseController(w).Flush()
			<-r.Context().Done() // silent until the client gives up
			return
		}
		for _, e := range recoursetest.OpenAIStream("Hel", "lo") {
			_, _ = io.WriteString(w, e)
		}
	}))
	defer srv.Close()

	limits, err := stall.New(stall.Limits{
		Header:      30 * time.Second,
		FirstOutput: 5 * time.Minute,
		Idle:        100 * time.Millisecond, // short for the example; see the package documentation
	})
	if err != nil {
		panic(err)
	}
	ch, err := chain.Default(openai.New(),
		chain.WithPolicy(retry.Policy{
			MaxAttempts: 2,
			BaseDelay:   new(time.Duration(0)),
			OnEvent: func(ev event.Event) error {
				if ev.Type == event.AttemptFailed {
					fmt.Println("attempt", ev.WireAttempt, "failed:", ev.Failure.Stall, "eligible:", ev.Failure.Classification.Eligible)
				}
				return nil
			},
		}),
		chain.WithPerAttempt(limits))
	if err != nil {
		panic(err)
	}
	fmt.Println(ch.Order())
	cl, err := client.New(srv.URL, ch)
	if err != nil {
		panic(err)
	}
	text := ""
	for c, err := range cl.Stream(context.Background(), &chat.Request{Model: "gpt-4o-mini", Messages: []chat.Message{{Role: chat.User, Content: "hi"}}}) {
		if err != nil {
			fmt.Println(err)
			return
		}
		text += c.Content
	}
	fmt.Println(text)
	// Output:
	// retry > capture > progress > stall > redirectguard > sender
	// attempt 1 failed: idle_timeout eligible: true
	// Hello
}
