// Command custom-chain builds a recourse chain by hand from a newcomer's own
// parts: a per-call layer (a log/slog request log, requestlog.go), a
// per-attempt layer (an HMAC request signer, signer.go) and a codec of its
// own (an OpenAI-compatible gateway with its own path, codec.go). Each part
// is written against recourse's public API only and proves the layer or
// codec contract in its tests (layer/layertest, codec/codectest).
//
// The program prints the chain's order, shows a composition chain.New
// refuses, and runs one completion through the native client against a
// scripted gateway on 127.0.0.1 that checks every attempt's signature and
// answers 503, then 200. It always runs offline:
//
//	go -C examples run ./custom-chain
//
// The chain, outermost first (chain.New places and checks it):
//
//	requestlog     per-call: one slog record per logical completion
//	retry          the engine: classification, backoff, events
//	capture        engine-owned: sensitive OnWire snapshots (none here)
//	progress       engine-owned: raw, observed and delivered counters
//	signer         per-attempt: signs each wire attempt
//	redirectguard  a 3xx is a failure that nothing follows
//	sender         exactly one POST per attempt
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"time"

	"github.com/recourse-dev/recourse/chain"
	"github.com/recourse-dev/recourse/chat"
	"github.com/recourse-dev/recourse/client"
	"github.com/recourse-dev/recourse/codec"
	"github.com/recourse-dev/recourse/event"
	"github.com/recourse-dev/recourse/examples/internal/demo"
	"github.com/recourse-dev/recourse/layers/retry"
	"github.com/recourse-dev/recourse/recoursetest"
)

// The demo's secrets. A real program reads them from its configuration; the
// tests check that neither reaches the request log.
const (
	demoAPIKey     = "sk-gateway-demo-0b7c1e"
	demoSigningKey = "signing-key-demo-5f2a9d"
)

func main() { demo.Main("custom-chain", run) }

// newEngine returns the engine for codec: at most 3 wire attempts, a short
// base delay, events sent to onEvent. The gateway codec's Facts declare a
// hosted provider, so no admission hook is needed for the resend.
func newEngine(cdc codec.Codec, onEvent func(event.Event) error) (*retry.Layer, error) {
	return retry.New(cdc, &retry.Policy{
		MaxAttempts: 3,
		BaseDelay:   new(50 * time.Millisecond),
		OnEvent:     onEvent,
	})
}

// buildChain assembles the chain by hand: the request log per call, the
// engine, the signer per attempt. chain.New adds capture, progress, the
// redirect guard and the sender.
func buildChain(logger *slog.Logger, key []byte, onEvent func(event.Event) error) (*chain.Chain, error) {
	engine, err := newEngine(NewGatewayCodec(), onEvent)
	if err != nil {
		return nil, err
	}
	return chain.New(NewRequestLog(logger), engine, NewSigner(key))
}

// newLogger returns a text logger on w without the time, so that the
// program's output reads like the rest of it.
func newLogger(w io.Writer) *slog.Logger {
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{
		ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
			if len(groups) == 0 && a.Key == slog.TimeKey {
				return slog.Attr{}
			}
			return a
		},
	}))
}

func run(w io.Writer) error {
	key := []byte(demoSigningKey)
	onEvent := func(ev event.Event) error {
		switch {
		case ev.HTTPStatus != 0:
			fmt.Fprintf(w, "  event %s (attempt %d, HTTP %d)\n", ev.Type, ev.WireAttempt, ev.HTTPStatus)
		case ev.NextAttempt != 0:
			fmt.Fprintf(w, "  event %s (attempt %d next)\n", ev.Type, ev.NextAttempt)
		default:
			fmt.Fprintf(w, "  event %s (attempt %d)\n", ev.Type, ev.WireAttempt)
		}
		return nil
	}
	ch, err := buildChain(newLogger(w), key, onEvent)
	if err != nil {
		return err
	}
	fmt.Fprintln(w, "chain:", ch.Order())

	// A per-attempt layer outside the engine would sign the logical call
	// once, not each attempt: chain.New refuses it with a typed error.
	engine, err := newEngine(NewGatewayCodec(), nil)
	if err != nil {
		return err
	}
	_, err = chain.New(NewSigner(key), engine)
	var cerr *chain.CompositionError
	if !errors.As(err, &cerr) {
		return fmt.Errorf("chain.New accepted the signer outside the engine (err %v)", err)
	}
	fmt.Fprintln(w, "refused:", err)

	// One completion through the hand-built chain.
	gw := newGateway(key,
		recoursetest.JSON(http.StatusServiceUnavailable, recoursetest.OpenAIError("server_error", "", "upstream overloaded")),
		recoursetest.JSON(http.StatusOK, recoursetest.OpenAIChat("Hello through a custom chain."), "X-Gateway-Request-Id", "gw-demo-1"),
	)
	defer gw.Close()
	cl, err := client.New(gw.URL, ch, client.WithAPIKey(demoAPIKey))
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	fmt.Fprintf(w, "completion against %s%s (503, then 200):\n", gw.URL, ch.Codec().Path())
	comp, err := cl.Complete(ctx, &chat.Request{
		Model:    "gpt-4o-mini",
		Messages: []chat.Message{{Role: chat.User, Content: "Say hello."}},
	})
	if err != nil {
		return err
	}
	for i, r := range gw.Received() {
		verdict := "signature ok"
		if r.Problem != "" {
			verdict = "refused: " + r.Problem
		}
		fmt.Fprintf(w, "gateway: request %d, attempt %s, %s, answered %d\n", i+1, shortID(r.AttemptID), verdict, r.Status)
	}
	fmt.Fprintf(w, "answer (%s, finish %s): %s\n", comp.Model, comp.FinishReason, comp.Message.Content)
	return nil
}

// shortID returns the first 8 characters of an attempt ID, for display.
func shortID(id string) string {
	if len(id) <= 8 {
		return id
	}
	return id[:8] + "…"
}
