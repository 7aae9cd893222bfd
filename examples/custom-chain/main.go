// Command custom-chain assembles a recourse chain layer by layer with
// chain.New instead of chain.Default, prints its order, shows the error New
// returns for a chain in the wrong order, and runs one completion through
// the chain with recourse's native typed client.
//
// The layers, outermost first (chain.New checks this order):
//
//	retry          the engine: classification, admission, budget, backoff, events
//	capture        sensitive OnWire snapshots (none configured here)
//	progress       counts raw, observed and delivered bytes
//	redirectguard  a 3xx is a failure that nothing follows
//	sender         exactly one POST per attempt
//
// The chain speaks Ollama's /api/chat. The program starts a tiny scripted
// server on 127.0.0.1 (503 busy, then 200), so it always runs offline.
//
//	go -C examples run ./custom-chain
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"time"

	"github.com/recourse-dev/recourse/chain"
	"github.com/recourse-dev/recourse/chat"
	"github.com/recourse-dev/recourse/codecs/ollama"
	"github.com/recourse-dev/recourse/examples/internal/loopback"
	"github.com/recourse-dev/recourse/layer"
	"github.com/recourse-dev/recourse/layers/capture"
	"github.com/recourse-dev/recourse/layers/progress"
	"github.com/recourse-dev/recourse/layers/redirectguard"
	"github.com/recourse-dev/recourse/layers/retry"
	"github.com/recourse-dev/recourse/layers/sender"
)

func main() {
	if err := run(os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "custom-chain:", err)
		os.Exit(1)
	}
}

// newRetry returns the engine: Ollama's codec, at most 3 wire attempts, a
// short base delay, the admission hook and events sent to onEvent.
func newRetry(hook layer.AdmissionHook, onEvent func(layer.Event) error) (*retry.Layer, error) {
	return retry.New(ollama.New(), &retry.Policy{
		MaxAttempts: 3,
		BaseDelay:   new(50 * time.Millisecond),
		Admit:       hook,
		OnEvent:     onEvent,
	})
}

// buildChain assembles the full chain by hand. The policy's hook decides
// every resend.
func buildChain(hook layer.AdmissionHook, onEvent func(layer.Event) error) (*chain.Chain, error) {
	rl, err := newRetry(hook, onEvent)
	if err != nil {
		return nil, err
	}
	return chain.New(
		rl,
		capture.New(),
		progress.New(),
		redirectguard.New(),
		sender.New(nil), // nil: a private HTTP/1.1 transport
	)
}

// allowBusy allows a resend after Ollama's 503 "server busy" only.
func allowBusy(_ context.Context, req layer.AdmissionRequest) (layer.Decision, error) {
	if req.Failure.HTTPStatus == http.StatusServiceUnavailable {
		return layer.Allow, nil
	}
	return layer.Reject, nil
}

func run(w io.Writer) error {
	onEvent := func(ev layer.Event) error {
		fmt.Fprintf(w, "  event %s (attempt %d)\n", ev.Type, ev.WireAttempt)
		return nil
	}
	c, err := buildChain(allowBusy, onEvent)
	if err != nil {
		return err
	}
	fmt.Fprintln(w, "chain:", c.Order())

	// The wrong order is refused with a typed error that says why.
	rl, err := newRetry(nil, nil)
	if err != nil {
		return err
	}
	_, err = chain.New(capture.New(), rl)
	var oerr *chain.CompositionError
	if !errors.As(err, &oerr) {
		return fmt.Errorf("chain.New accepted capture before retry (err %v)", err)
	}
	fmt.Fprintln(w, "wrong order:", err)

	// One completion through the hand-built chain.
	srv := loopback.New(
		loopback.JSON(http.StatusServiceUnavailable, loopback.OllamaError(loopback.OllamaBusy)),
		loopback.JSON(http.StatusOK, loopback.OllamaChat("Hello through a hand-built chain.")),
	)
	defer srv.Close()
	client, err := chain.NewClient(srv.URL, c)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	fmt.Fprintf(w, "completion against %s (503 busy, then 200):\n", srv.URL)
	comp, err := client.Complete(ctx, &chat.Request{
		Model:    "llama3.2",
		Messages: []chat.Message{{Role: chat.User, Content: "Say hello."}},
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "answer (%s, finish %s): %s\n", comp.Model, comp.FinishReason, comp.Message.Content)
	return nil
}
