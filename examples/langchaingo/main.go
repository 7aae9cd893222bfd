// Command langchaingo runs langchaingo's OpenAI LLM (github.com/tmc/langchaingo
// v0.1.14, package llms/openai) with recourse's default chain as the HTTP
// transport: one ordinary completion and one streamed completion.
//
// The chain is an http.RoundTripper, so it drops into langchaingo through
// openai.WithHTTPClient(&http.Client{Transport: chain}). langchaingo has no
// retry loop of its own, so recourse is the only thing that may send a
// request again (R2.1), under its policy (here at most 3 wire attempts).
//
// It matters most for streams. langchaingo reads a stream with a
// bufio.Scanner that stops at "data: [DONE]" but treats a clean end of the
// body without it as a complete answer, and it drops in-band error events
// ({"error":…} in a 200 stream) as chunks without choices. Through the
// chain both end GenerateContent with an error that wraps recourse's
// *layer.RecoveryError (outcome interrupted), and a stream that fails before
// any content is resumed from a new attempt without the streaming function
// seeing anything twice (R13).
//
// By default the program starts a tiny scripted server on 127.0.0.1, so it
// runs offline: a 503 then a 200 for the ordinary completion, and for the
// stream a keep-alive followed by a dropped connection, then a full stream.
// Set OPENAI_BASE_URL (for example https://api.openai.com/v1) to talk to a
// real endpoint instead; OPENAI_API_KEY is then the key and OPENAI_MODEL the
// model (default gpt-4o-mini).
//
//	go -C examples run ./langchaingo
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/tmc/langchaingo/llms"
	"github.com/tmc/langchaingo/llms/openai"

	"github.com/recourse-dev/recourse/chain"
	openaicodec "github.com/recourse-dev/recourse/codecs/openai"
	"github.com/recourse-dev/recourse/event"
	"github.com/recourse-dev/recourse/examples/internal/demo"
	"github.com/recourse-dev/recourse/layer"
	"github.com/recourse-dev/recourse/layers/retry"
)

func main() { demo.Main("langchaingo", run) }

// run picks the endpoint (the local scripted server unless OPENAI_BASE_URL
// is set), runs one ordinary and one streamed completion and prints what
// happened to w.
func run(w io.Writer) error {
	ep, stop := demo.OpenAI(w, "503, then 200; a cut stream, then a full one",
		append(demo.Recovered503(), demo.RecoveredStream("Hello", " from", " a", " resumed", " stream.")...)...)
	defer stop()
	events := demo.EventFormat{Indent: "  ", Width: 17}
	llm, err := newLLM(ep.APIBase, ep.Key, ep.Model, func(ev event.Event) error {
		events.Print(w, ev)
		return nil
	})
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	fmt.Fprintln(w, "ordinary completion:")
	resp, err := llm.GenerateContent(ctx, prompt("Say hello in one short sentence."))
	if err != nil {
		return report(w, err)
	}
	fmt.Fprintf(w, "answer (finish %s): %s\n", resp.Choices[0].StopReason, resp.Choices[0].Content)

	fmt.Fprintln(w, "streamed completion:")
	var streamed strings.Builder
	resp, err = llm.GenerateContent(ctx, prompt("Say hello in a few words."),
		llms.WithStreamingFunc(func(_ context.Context, chunk []byte) error {
			streamed.Write(chunk)
			return nil
		}))
	if err != nil {
		return report(w, err)
	}
	fmt.Fprintf(w, "streamed (finish %s): %s\n", resp.Choices[0].StopReason, streamed.String())
	return nil
}

// newLLM returns a langchaingo OpenAI LLM for apiBase (the API root, for
// example "https://api.openai.com/v1") whose HTTP client's transport is
// the default recourse chain: at most 3 wire attempts, events sent to
// onEvent.
func newLLM(apiBase, key, model string, onEvent func(event.Event) error) (*openai.LLM, error) {
	ch, err := chain.Default(openaicodec.New(), chain.WithPolicy(retry.Policy{
		MaxAttempts: 3,
		OnEvent:     onEvent,
	}))
	if err != nil {
		return nil, err
	}
	return openai.New(
		openai.WithHTTPClient(&http.Client{Transport: ch}),
		openai.WithBaseURL(strings.TrimRight(apiBase, "/")),
		openai.WithToken(key),
		openai.WithModel(model),
	)
}

// prompt is a one-message conversation.
func prompt(text string) []llms.MessageContent {
	return []llms.MessageContent{llms.TextParts(llms.ChatMessageTypeHuman, text)}
}

// report prints how a completion failed and returns err.
//
// A stream that recourse ends (interrupted after content, or cut before
// [DONE]) reaches the caller as langchaingo's "error reading streaming
// response: %w", so errors.As finds the *layer.RecoveryError (langchaingo
// skips the in-band error event the chain puts before it, and reports the
// read error). When recovery gives up on a complete HTTP failure (an
// exhausted 503) the final response passes through and langchaingo reports
// "API returned unexpected status code: 503: <message>". Any other error
// from the request itself (a refused redirect, a connection that never
// answered) does not carry the typed error: langchaingo replaces every
// error that is a net.Error, which http.Client's *url.Error is, with a
// fixed "network error: failed to reach API server". A *layer.Call in the
// request context receives the typed error in every case.
func report(w io.Writer, err error) error {
	var rerr *layer.RecoveryError
	if errors.As(err, &rerr) {
		fmt.Fprintf(w, "recovery ended: outcome %s, %s, %d wire attempt(s)\n",
			rerr.Outcome, rerr.Failure.Category, len(rerr.History))
	}
	return err
}
