package main

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"time"

	"github.com/recourse-dev/recourse/chain"
	"github.com/recourse-dev/recourse/chat"
	"github.com/recourse-dev/recourse/client"
	"github.com/recourse-dev/recourse/codec"
	"github.com/recourse-dev/recourse/layers/retry"
	"github.com/recourse-dev/recourse/recoursetest"
)

// The request log writes one record for a completion that took two wire
// attempts. (The time, the duration and the random logical request ID are
// left out here so that the output is stable.)
func ExampleNewRequestLog() {
	key := []byte("example key")
	gw := newGateway(key,
		recoursetest.JSON(http.StatusServiceUnavailable, recoursetest.OpenAIError("server_error", "", "upstream overloaded")),
		recoursetest.JSON(http.StatusOK, recoursetest.OpenAIChat("hello")),
	)
	defer gw.Close()
	logger := slog.New(slog.NewTextHandler(os.Stdout, &slog.HandlerOptions{
		ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			switch a.Key {
			case slog.TimeKey, "duration", "logical_request_id":
				return slog.Attr{}
			}
			return a
		},
	}))
	ch, err := chain.Default(NewGatewayCodec(),
		chain.WithPolicy(retry.Policy{MaxAttempts: 3, BaseDelay: new(time.Duration(0))}),
		chain.WithPerCall(NewRequestLog(logger)),
		chain.WithPerAttempt(NewSigner(key)))
	if err != nil {
		fmt.Println(err)
		return
	}
	cl, _ := client.New(gw.URL, ch)
	if _, err := cl.Complete(context.Background(), &chat.Request{
		Model: "gpt-4o-mini", Messages: []chat.Message{{Role: chat.User, Content: "hi"}},
	}); err != nil {
		fmt.Println(err)
	}
	// Output:
	// level=INFO msg=completion method=POST path=/openai/v1/chat status=200 wire_attempts=2
}

// The signer signs each wire attempt for its own attempt ID: the gateway
// verifies both attempts of a 503 → 200 call, and their attempt IDs differ.
func ExampleNewSigner() {
	key := []byte("example key")
	gw := newGateway(key,
		recoursetest.JSON(http.StatusServiceUnavailable, recoursetest.OpenAIError("server_error", "", "upstream overloaded")),
		recoursetest.JSON(http.StatusOK, recoursetest.OpenAIChat("hello")),
	)
	defer gw.Close()
	ch, err := chain.Default(NewGatewayCodec(),
		chain.WithPolicy(retry.Policy{MaxAttempts: 3, BaseDelay: new(time.Duration(0))}),
		chain.WithPerAttempt(NewSigner(key)))
	if err != nil {
		fmt.Println(err)
		return
	}
	cl, _ := client.New(gw.URL, ch)
	comp, err := cl.Complete(context.Background(), &chat.Request{
		Model: "gpt-4o-mini", Messages: []chat.Message{{Role: chat.User, Content: "hi"}},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	got := gw.Received()
	for i, r := range got {
		verdict := "signature ok"
		if r.Problem != "" {
			verdict = r.Problem
		}
		fmt.Printf("attempt %d: %s, answered %d\n", i+1, verdict, r.Status)
	}
	fmt.Println("different attempt IDs:", got[0].AttemptID != got[1].AttemptID)
	fmt.Println("answer:", comp.Message.Content)
	// Output:
	// attempt 1: signature ok, answered 503
	// attempt 2: signature ok, answered 200
	// different attempt IDs: true
	// answer: hello
}

// The gateway codec speaks OpenAI's bodies at its own path and declares its
// own provider and capabilities.
func ExampleNewGatewayCodec() {
	gw := NewGatewayCodec()
	fmt.Println(gw.Provider(), "POST", gw.Path())
	caps := gw.Capabilities()
	for _, k := range codec.AllCapabilities() {
		fmt.Printf("  %s: %s\n", k, caps.Get(k))
	}
	body, _ := gw.Encode(&chat.Request{Model: "gpt-4o-mini", Messages: []chat.Message{{Role: chat.User, Content: "hi"}}})
	fmt.Println(string(body))
	// Output:
	// gateway POST /openai/v1/chat
	//   client_abort: unknown
	//   request_cancellation: unsupported
	//   request_status: unsupported
	//   idempotency: unsupported
	//   exact_attempt_termination: unknown
	// {"model":"gpt-4o-mini","messages":[{"role":"user","content":"hi"}]}
}
