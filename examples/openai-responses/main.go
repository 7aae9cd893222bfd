// Command openai-responses runs openai-go v3's Responses API through
// recourse's default chain with the Responses codec as the HTTP transport:
// one background stream (client.Responses.NewStreaming with Background and
// Store set) that the scripted server cuts at 40 % of its answer, which
// recourse resumes from the last event it delivered — the program prints
// every delta once and the lifecycle events that show the resume.
//
// The chain is an http.RoundTripper, so it drops into the SDK through
// option.WithHTTPClient; the SDK's own retries are off
// (option.WithMaxRetries(0)), so recourse is the only thing that reads or
// sends again. The program is offline: the server is recourse's scripted
// provider on 127.0.0.1.
//
//	go -C examples run ./openai-responses
package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"

	"github.com/recourse-dev/recourse/chain"
	respcodec "github.com/recourse-dev/recourse/codecs/openai/responses"
	"github.com/recourse-dev/recourse/event"
	"github.com/recourse-dev/recourse/examples/internal/demo"
	"github.com/recourse-dev/recourse/layers/retry"
	"github.com/recourse-dev/recourse/recoursetest"
)

func main() { demo.Main("openai-responses", run) }

// answer is the scripted answer, ten deltas; the cut comes after four.
var answer = []string{"Recourse ", "resumes ", "a ", "background ", "stream ", "from ", "the ", "last ", "event ", "delivered."}

// run starts the scripted server, streams one background response and
// prints what happened to w.
func run(w io.Writer) error {
	const id = "resp_demo"
	evs := recoursetest.ResponsesEvents(id, answer...)
	// Events 0–3 are lifecycle, 4–13 the deltas: cut after the fourth delta.
	srv := recoursetest.NewServer(recoursetest.ResponsesBackground(id, evs...).CutEvents(8), recoursetest.ResponsesResume(id))
	defer srv.Close()
	fmt.Fprintf(w, "offline: scripted server at %s (a background stream cut at 40 %%)\n", srv.URL)
	client, err := newClient(srv.URL+"/v1/", "sk-offline-demo", func(ev event.Event) error {
		printEvent(w, ev)
		return nil
	})
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	text, err := streamBackground(ctx, client, "Explain recourse in one sentence.")
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "answer: %s\n", text)
	return nil
}

// newClient returns an openai-go client for apiBase (the API root, for
// example "https://api.openai.com/v1/") whose transport is the default
// recourse chain with the Responses codec: at most 4 wire attempts (a
// resume read is one), events sent to onEvent.
func newClient(apiBase, key string, onEvent func(event.Event) error) (openai.Client, error) {
	ch, err := chain.Default(respcodec.New(), chain.WithPolicy(retry.Policy{
		MaxAttempts: 4,
		BaseDelay:   new(50 * time.Millisecond),
		OnEvent:     onEvent,
	}))
	if err != nil {
		return openai.Client{}, err
	}
	return openai.NewClient(
		option.WithBaseURL(apiBase),
		option.WithAPIKey(key),
		option.WithHTTPClient(&http.Client{Transport: ch}),
		option.WithMaxRetries(0), // recourse is the only retry loop
	), nil
}

// streamBackground streams one background response and returns its text,
// the deltas joined in order.
func streamBackground(ctx context.Context, client openai.Client, prompt string) (string, error) {
	stream := client.Responses.NewStreaming(ctx, responses.ResponseNewParams{
		Model:      "gpt-4.1-mini",
		Input:      responses.ResponseNewParamsInputUnion{OfString: openai.String(prompt)},
		Background: openai.Bool(true),
		Store:      openai.Bool(true),
	})
	defer stream.Close()
	var text string
	for stream.Next() {
		if ev := stream.Current(); ev.Type == "response.output_text.delta" {
			text += ev.Delta
		}
	}
	return text, stream.Err()
}

// printEvent prints the safe fields of a lifecycle event: never a body,
// header, credential or response ID (R10.5).
func printEvent(w io.Writer, ev event.Event) {
	line := fmt.Sprintf("event %-17s attempt %d/%d", ev.Type, ev.WireAttempt, ev.MaxAttempts)
	if f := ev.Failure; f != nil && ev.Type == event.AttemptFailed {
		line += fmt.Sprintf("  %s (%s)", f.Category, f.Classification.Reason)
	}
	if r := ev.Resume; r != nil && ev.Type == event.RetryStarted {
		line += fmt.Sprintf("  resuming after event %d", r.Cursor)
	}
	fmt.Fprintln(w, line)
}
