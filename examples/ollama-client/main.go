// Command ollama-client runs one non-streaming chat through the official
// Ollama Go client (github.com/ollama/ollama/api) with recourse's default
// chain as the HTTP transport.
//
// A failed Ollama request is an ambiguous local execution: the model may
// have run. So, unlike OpenAI, recourse never resends an Ollama request on
// its own (R8.3); the application must say so through an admission hook.
// This program's hook allows a resend only after Ollama's 503 "server busy"
// (its queue was full, so the request never reached a model) and rejects
// anything else.
//
// By default the program starts a tiny scripted server on 127.0.0.1 that
// answers 503 (busy) and then 200, so it runs offline. Set OLLAMA_HOST (for
// example http://127.0.0.1:11434) to talk to a real Ollama instead;
// OLLAMA_MODEL picks the model (default llama3.2).
//
//	go -C examples run ./ollama-client
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"time"

	"github.com/ollama/ollama/api"

	"github.com/recourse-dev/recourse/chain"
	"github.com/recourse-dev/recourse/codecs/ollama"
	"github.com/recourse-dev/recourse/event"
	"github.com/recourse-dev/recourse/examples/internal/demo"
	"github.com/recourse-dev/recourse/layer"
	"github.com/recourse-dev/recourse/layers/retry"
	"github.com/recourse-dev/recourse/recoursetest"
)

func main() { demo.Main("ollama-client", run) }

// ollamaBusy is the message of Ollama's 503 when its queue is full.
const ollamaBusy = "server busy, please try again.  maximum pending requests exceeded"

// run picks the endpoint (the local scripted server unless OLLAMA_HOST is
// set), runs one chat and prints what happened to w.
func run(w io.Writer) error {
	host, model := os.Getenv("OLLAMA_HOST"), os.Getenv("OLLAMA_MODEL")
	if model == "" {
		model = "llama3.2"
	}
	if host == "" {
		srv := recoursetest.NewServer(
			recoursetest.JSON(http.StatusServiceUnavailable, recoursetest.OllamaError(ollamaBusy)),
			recoursetest.JSON(http.StatusOK, recoursetest.OllamaChat("Hello from the scripted server.")),
		)
		defer srv.Close()
		host = srv.URL
		fmt.Fprintf(w, "offline: scripted server at %s (503 busy, then 200)\n", srv.URL)
	}
	base, err := url.Parse(host)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	return chatOnce(ctx, w, base, model)
}

// allowBusy is the admission hook: it allows a resend after Ollama's 503
// (the queue was full; nothing ran) and rejects every other failure. A real
// application might ask a person here; the hook may block until ctx is done.
func allowBusy(_ context.Context, req layer.AdmissionRequest) (layer.Decision, error) {
	if req.Failure.HTTPStatus == http.StatusServiceUnavailable {
		return layer.Allow, nil
	}
	return layer.Reject, nil
}

// newClient returns an Ollama API client for base whose transport is the
// default recourse chain for Ollama's /api/chat: at most 3 wire attempts,
// resends decided by admit (nil means none: an eligible failure then ends
// with outcome admission_required), events sent to onEvent.
func newClient(base *url.URL, admit layer.AdmissionHook, onEvent func(event.Event) error) (*api.Client, error) {
	ch, err := chain.Default(ollama.New(), chain.WithPolicy(retry.Policy{
		MaxAttempts: 3,
		Admit:       admit,
		OnEvent:     onEvent,
	}))
	if err != nil {
		return nil, err
	}
	return api.NewClient(base, &http.Client{Transport: ch}), nil
}

// chatRequest is a non-streaming chat request. For a streaming one leave
// Stream nil (Ollama's default) or set it to true, and call chatStream.
func chatRequest(model, prompt string) *api.ChatRequest {
	stream := false
	return &api.ChatRequest{
		Model:    model,
		Messages: []api.Message{{Role: "user", Content: prompt}},
		Stream:   &stream,
	}
}

// chatStream runs one streaming Chat (req.Stream nil or true) through
// client and returns recourse's typed error where the Ollama client drops
// it.
//
// Through the chain a stream that fails before any content is resumed from
// a new attempt (only when the admission hook allows it) without fn seeing
// anything twice; a stream that fails after content, or ends before its
// done:true line, ends with a *layer.RecoveryError (R13). The Ollama client
// (v0.17.4) stops at a body read error without returning it: it never
// checks its scanner's error. So the chain ends such a body with an
// in-band Ollama error line, {"error":"<the RecoveryError's safe text>"},
// before the read error, and Chat returns that text as a plain error
// (errors.New): it fails, but the typed error is not reachable from it.
// chatStream places a *layer.Call in the request context, whose Result the
// chain fills in with the typed error, and returns that error when Chat
// returned nil or just the in-band line's text.
//
// The Call leaves TypedErrors false, so the chain still passes a complete
// HTTP failure (a 400, a 404, an exhausted 503) through and Chat returns
// its api.StatusError, as it would without recourse; any other error Chat
// returns wins.
func chatStream(ctx context.Context, client *api.Client, req *api.ChatRequest, fn api.ChatResponseFunc) error {
	var lc layer.Call
	err := client.Chat(layer.WithCall(ctx, &lc), req, fn)
	if rerr := lc.Result.Err; rerr != nil && (err == nil || err.Error() == rerr.Error()) {
		return rerr
	}
	return err
}

// chatOnce runs one chat and prints the events, the answer or the way it
// failed.
func chatOnce(ctx context.Context, w io.Writer, base *url.URL, model string) error {
	client, err := newClient(base, allowBusy, func(ev event.Event) error {
		demo.EventFormat{Width: 19, Next: true}.Print(w, ev)
		return nil
	})
	if err != nil {
		return err
	}
	var answer api.ChatResponse
	err = client.Chat(ctx, chatRequest(model, "Say hello in one short sentence."), func(r api.ChatResponse) error {
		answer = r
		return nil
	})
	var rerr *layer.RecoveryError
	var serr api.StatusError
	switch {
	case err == nil:
		fmt.Fprintf(w, "answer (%s, done %s): %s\n", answer.Model, answer.DoneReason, answer.Message.Content)
		return nil
	case errors.As(err, &rerr):
		// The chain gave up without a complete HTTP failure to hand over;
		// the Ollama client returns http.Client's *url.Error, and our
		// typed error is inside it.
		fmt.Fprintf(w, "recovery ended: outcome %s, HTTP %d, %d wire attempt(s)\n",
			rerr.Outcome, rerr.Failure.HTTPStatus, len(rerr.History))
		return err
	case errors.As(err, &serr):
		// A final complete HTTP failure (a 400, a 404, or a 503 after
		// recovery gave up) passes through,
		// so the Ollama client builds its own api.StatusError.
		fmt.Fprintf(w, "ollama error: HTTP %d\n", serr.StatusCode)
		return err
	default:
		return err
	}
}
