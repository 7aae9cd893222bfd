// Command anthropic-dropin runs anthropic-sdk-go v2 through recourse's
// default chain with the Messages API codec as the HTTP transport: one
// streamed message whose first attempt is overloaded in-band right after
// message_start — before any content, so recourse sends it again — and
// whose second attempt answers. The program prints the lifecycle events
// and the answer.
//
// The chain is an http.RoundTripper, so it drops into the SDK through
// option.WithHTTPClient; the SDK's own retries are off
// (option.WithMaxRetries(0)), so recourse is the only thing that sends
// again. The program is offline: the server is recourse's scripted
// provider on 127.0.0.1.
//
//	go -C examples run ./anthropic-dropin
package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"

	"github.com/recourse-dev/recourse/chain"
	anthropiccodec "github.com/recourse-dev/recourse/codecs/anthropic"
	"github.com/recourse-dev/recourse/event"
	"github.com/recourse-dev/recourse/examples/internal/demo"
	"github.com/recourse-dev/recourse/layers/retry"
	"github.com/recourse-dev/recourse/recoursetest"
)

func main() { demo.Main("anthropic-dropin", run) }

// answer is the scripted answer, in deltas.
var answer = []string{"Recourse ", "resends ", "an ", "overloaded ", "stream ", "before ", "its ", "first ", "block."}

// run starts the scripted server, streams one message and prints what
// happened to w.
func run(w io.Writer) error {
	overloaded := append(recoursetest.AnthropicStart(), recoursetest.AnthropicErrorEvent("overloaded_error", "Overloaded"))
	srv := recoursetest.NewServer(recoursetest.AnthropicStream(overloaded...), recoursetest.AnthropicStream(recoursetest.AnthropicEvents(answer...)...))
	defer srv.Close()
	fmt.Fprintf(w, "offline: scripted server at %s (an overload after message_start)\n", srv.URL)
	client, err := newClient(srv.URL, "sk-ant-offline-demo", retry.Policy{
		MaxAttempts: 3,
		BaseDelay:   new(50 * time.Millisecond),
		OnEvent: func(ev event.Event) error {
			printEvent(w, ev)
			return nil
		},
	})
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	text, err := stream(ctx, client, "Explain recourse in one sentence.")
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "answer: %s\n", text)
	return nil
}

// newClient returns an anthropic-sdk-go client for baseURL (the API root,
// for example "https://api.anthropic.com/") whose transport is the default
// recourse chain with the Messages API codec under policy p.
func newClient(baseURL, key string, p retry.Policy) (anthropic.Client, error) {
	ch, err := chain.Default(anthropiccodec.New(), chain.WithPolicy(p))
	if err != nil {
		return anthropic.Client{}, err
	}
	return anthropic.NewClient(
		option.WithBaseURL(baseURL),
		option.WithAPIKey(key),
		option.WithHTTPClient(&http.Client{Transport: ch}),
		option.WithMaxRetries(0), // recourse is the only retry loop
	), nil
}

// stream streams one message and returns its text, accumulated by the
// SDK.
func stream(ctx context.Context, client anthropic.Client, prompt string) (string, error) {
	s := client.Messages.NewStreaming(ctx, anthropic.MessageNewParams{
		Model:     recoursetest.AnthropicModel,
		MaxTokens: 256,
		Messages:  []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock(prompt))},
	})
	defer s.Close()
	var msg anthropic.Message
	for s.Next() {
		if err := msg.Accumulate(s.Current()); err != nil {
			return "", err
		}
	}
	if err := s.Err(); err != nil {
		return "", err
	}
	var text string
	for _, b := range msg.Content {
		text += b.Text
	}
	return text, nil
}

// printEvent prints the safe fields of a lifecycle event: never a body,
// header or credential (R10.5).
func printEvent(w io.Writer, ev event.Event) {
	line := fmt.Sprintf("event %-17s attempt %d/%d", ev.Type, ev.WireAttempt, ev.MaxAttempts)
	if f := ev.Failure; f != nil && ev.Type == event.AttemptFailed {
		line += fmt.Sprintf("  HTTP %d %s (%s)", f.HTTPStatus, f.ProviderCode, f.Classification.Reason)
	}
	fmt.Fprintln(w, line)
}
