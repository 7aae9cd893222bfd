// Command go-openai runs one chat completion and one streamed completion
// through github.com/sashabaranov/go-openai (v1.43.0) with recourse's
// default chain as the HTTP transport.
//
// The chain is an http.RoundTripper, so it drops into go-openai through
// ClientConfig.HTTPClient. go-openai has no retry loop of its own, so
// recourse is the only thing that may send a request again (R2.1), under
// its policy (here at most 3 wire attempts).
//
// What the caller sees:
//   - a recovered failure (a 503, a 429 with Retry-After, a stream cut
//     before any content) is invisible: one successful call;
//   - when recovery gives up on a complete HTTP failure (an exhausted 503)
//     the final response passes through, so go-openai returns its own
//     *openai.APIError (status, code, message); the typed
//     *layer.RecoveryError is in a *layer.Call placed in the context;
//   - a 200 whose body is an error object fails closed: an error that
//     errors.As unwraps to *layer.RecoveryError;
//   - a stream cut after content ends with an in-band OpenAI error event
//     carrying the RecoveryError's safe text: go-openai's Recv returns it
//     as an *openai.APIError (type "recourse_error"); the typed error is in
//     the layer.Call.
//
// By default the program starts a tiny scripted server on 127.0.0.1 (a 503
// then a 200, then a stream cut before content and a full stream), so it
// runs offline. Set OPENAI_BASE_URL (for example https://api.openai.com/v1)
// to talk to a real endpoint; OPENAI_API_KEY is then the key and
// OPENAI_MODEL the model (default gpt-4o-mini).
//
//	go -C examples run ./go-openai
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/recourse-dev/recourse/chain"
	openaicodec "github.com/recourse-dev/recourse/codecs/openai"
	"github.com/recourse-dev/recourse/event"
	"github.com/recourse-dev/recourse/examples/internal/demo"
	"github.com/recourse-dev/recourse/layer"
	"github.com/recourse-dev/recourse/layers/retry"
)

func main() { demo.Main("go-openai", run) }

// run picks the endpoint, runs one completion and one stream and prints
// what happened to w.
func run(w io.Writer) error {
	ep, stop := demo.OpenAI(w, "", append(demo.Recovered503(), demo.RecoveredStream("Hello ", "again.")...)...)
	defer stop()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	client, err := newClient(ep.APIBase, ep.Key, retry.Policy{MaxAttempts: 3, OnEvent: func(ev event.Event) error {
		fmt.Fprintf(w, "event %s attempt %d/%d\n", ev.Type, ev.WireAttempt, ev.MaxAttempts)
		return nil
	}})
	if err != nil {
		return err
	}
	req := openai.ChatCompletionRequest{
		Model:    ep.Model,
		Messages: []openai.ChatCompletionMessage{{Role: openai.ChatMessageRoleUser, Content: "Say hello in one short sentence."}},
	}
	var lc layer.Call
	resp, err := client.CreateChatCompletion(layer.WithCall(ctx, &lc), req)
	if err != nil {
		return explain(w, err, &lc)
	}
	if len(resp.Choices) == 0 {
		return errors.New("the completion has no choices")
	}
	fmt.Fprintf(w, "answer: %s\n", resp.Choices[0].Message.Content)

	lc = layer.Call{}
	text, err := stream(layer.WithCall(ctx, &lc), client, req)
	if err != nil {
		return explain(w, err, &lc)
	}
	fmt.Fprintf(w, "streamed: %s\n", text)
	return nil
}

// newClient returns a go-openai client for apiBase (the API root, for
// example "https://api.openai.com/v1") whose transport is the default
// recourse chain under policy p.
func newClient(apiBase, key string, p retry.Policy) (*openai.Client, error) {
	ch, err := chain.Default(openaicodec.New(), chain.WithPolicy(p))
	if err != nil {
		return nil, err
	}
	cfg := openai.DefaultConfig(key)
	cfg.BaseURL = strings.TrimRight(apiBase, "/")
	cfg.HTTPClient = &http.Client{Transport: ch}
	return openai.NewClientWithConfig(cfg), nil
}

// stream runs one streamed completion and returns its text. go-openai's
// Recv returns io.EOF after "data: [DONE]".
func stream(ctx context.Context, client *openai.Client, req openai.ChatCompletionRequest) (string, error) {
	st, err := client.CreateChatCompletionStream(ctx, req)
	if err != nil {
		return "", err
	}
	defer st.Close()
	var b strings.Builder
	for {
		r, err := st.Recv()
		if errors.Is(err, io.EOF) {
			return b.String(), nil
		}
		if err != nil {
			return b.String(), err
		}
		for _, c := range r.Choices {
			b.WriteString(c.Delta.Content)
		}
	}
}

// explain prints how a call failed: the SDK's own error when there is one,
// and the typed recovery outcome from the call's Result.
func explain(w io.Writer, err error, lc *layer.Call) error {
	var aerr *openai.APIError
	if errors.As(err, &aerr) {
		fmt.Fprintf(w, "provider error: HTTP %d, type %q\n", aerr.HTTPStatusCode, aerr.Type)
	}
	if re := lc.Result.Err; re != nil {
		fmt.Fprintf(w, "recovery ended: outcome %s, %d wire attempt(s)\n", re.Outcome, len(re.History))
	}
	return err
}
