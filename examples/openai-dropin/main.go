// Command openai-dropin runs one chat completion through openai-go v3 with
// recourse's default chain as the HTTP transport.
//
// The chain is an http.RoundTripper, so it drops into the SDK through
// option.WithHTTPClient. The SDK's own retry loop is switched off with
// option.WithMaxRetries(0): recourse is then the only thing that may send a
// request again (R2.1), and it does so under its policy (here at most 3 wire
// attempts), reporting every step to OnEvent.
//
// By default the program starts a tiny scripted server on 127.0.0.1 that
// answers 503 and then 200, so it runs offline and shows one recovered
// failure. Set OPENAI_BASE_URL (for example https://api.openai.com/v1) to
// talk to a real endpoint instead; OPENAI_API_KEY is then the key and
// OPENAI_MODEL the model (default gpt-4o-mini).
//
//	go -C examples run ./openai-dropin
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/recourse-dev/recourse/chain"
	openaicodec "github.com/recourse-dev/recourse/codecs/openai"
	"github.com/recourse-dev/recourse/event"
	"github.com/recourse-dev/recourse/examples/internal/demo"
	"github.com/recourse-dev/recourse/layer"
	"github.com/recourse-dev/recourse/layers/retry"
)

func main() { demo.Main("openai-dropin", run) }

// run picks the endpoint (the local scripted server unless OPENAI_BASE_URL
// is set), runs one completion and prints what happened to w.
func run(w io.Writer) error {
	ep, stop := demo.OpenAI(w, "503, then 200", demo.Recovered503()...)
	defer stop()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	return complete(ctx, w, ep.APIBase, ep.Key, ep.Model)
}

// newClient returns an openai-go client for apiBase (the API root, for
// example "https://api.openai.com/v1/") whose transport is the default
// recourse chain: at most 3 wire attempts, events sent to onEvent.
func newClient(apiBase, key string, onEvent func(event.Event) error) (openai.Client, error) {
	ch, err := chain.Default(openaicodec.New(), chain.WithPolicy(retry.Policy{
		MaxAttempts: 3,
		OnEvent:     onEvent,
	}))
	if err != nil {
		return openai.Client{}, err
	}
	return openai.NewClient(
		option.WithBaseURL(strings.TrimRight(apiBase, "/")+"/"),
		option.WithAPIKey(key),
		option.WithHTTPClient(&http.Client{Transport: ch}),
		option.WithMaxRetries(0), // recourse is the only retry loop
	), nil
}

// complete runs one ordinary completion and prints the events, the answer
// or the way it failed.
func complete(ctx context.Context, w io.Writer, apiBase, key, model string) error {
	client, err := newClient(apiBase, key, func(ev event.Event) error {
		demo.EventFormat{Width: 17}.Print(w, ev)
		return nil
	})
	if err != nil {
		return err
	}
	comp, err := client.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{
		Model:    model,
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Say hello in one short sentence.")},
	})
	var rerr *layer.RecoveryError
	var aerr *openai.Error
	switch {
	case err == nil:
		if len(comp.Choices) == 0 {
			return errors.New("the completion has no choices")
		}
		fmt.Fprintf(w, "answer (%s, finish %s): %s\n", comp.Model, comp.Choices[0].FinishReason, comp.Choices[0].Message.Content)
		return nil
	case errors.As(err, &rerr):
		// The chain gave up without a complete HTTP failure to hand over
		// (a refused redirect, a dropped connection, ...): the SDK hands
		// back our typed error inside a *url.Error.
		fmt.Fprintf(w, "recovery ended: outcome %s, HTTP %d, %d wire attempt(s)\n",
			rerr.Outcome, rerr.Failure.HTTPStatus, len(rerr.History))
		return err
	case errors.As(err, &aerr):
		// A final complete HTTP failure (a 400, a 404, or a 503 after
		// recovery gave up) passes through, so the SDK builds its own
		// error from it; X-Recourse-Outcome names the outcome, and a
		// layer.Call in the context would hold the typed error.
		fmt.Fprintf(w, "provider error: HTTP %d, type %q, code %q\n", aerr.StatusCode, aerr.Type, aerr.Code)
		return err
	default:
		return err
	}
}
