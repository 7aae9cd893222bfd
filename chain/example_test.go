package chain_test

import (
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/recourse-dev/recourse/chain"
	"github.com/recourse-dev/recourse/codecs/openai"
	"github.com/recourse-dev/recourse/event"
	"github.com/recourse-dev/recourse/layer"
	"github.com/recourse-dev/recourse/layers/retry"
	"github.com/recourse-dev/recourse/recoursetest"
)

// New assembles a chain by hand with a user layer per call and one per
// attempt; it installs the stages the engine depends on, and refuses a
// chain that would break a wire invariant.
func ExampleNew() {
	engine, err := retry.New(openai.New(), &retry.Policy{MaxAttempts: 3})
	if err != nil {
		panic(err)
	}
	pass := func(next http.RoundTripper) http.RoundTripper { return next }
	ch, err := chain.New(
		layer.NewPerCall("request-log", pass),
		engine,
		layer.NewPerAttempt("signer", pass),
	)
	if err != nil {
		panic(err)
	}
	fmt.Println(ch.Order())

	_, err = chain.New(layer.NewPerAttempt("signer", pass), engine)
	fmt.Println(err)
	// Output:
	// request-log > retry > capture > progress > signer > redirectguard > sender
	// chain: layer 1 (retry, engine) must come before the per-attempt layers (order: per-call, engine, capture, progress, per-attempt, redirect guard, sender)
}

// Default drops into a plain http.Client: a 503 is retried once and the
// caller sees one successful response.
func ExampleDefault() {
	srv := recoursetest.NewServer(
		recoursetest.JSON(503, recoursetest.OpenAIError("server_error", "", "busy")),
		recoursetest.JSON(200, recoursetest.OpenAIChat("hello")),
	)
	defer srv.Close()
	ch, err := chain.Default(openai.New(), chain.WithPolicy(retry.Policy{
		MaxAttempts: 2,
		BaseDelay:   new(time.Duration(0)),
		OnEvent: func(e event.Event) error {
			fmt.Println(e.Type)
			return nil
		},
	}))
	if err != nil {
		panic(err)
	}
	client := &http.Client{Transport: ch}
	resp, err := client.Post(srv.URL+"/v1/chat/completions", "application/json",
		strings.NewReader(`{"model":"gpt-4o-mini","messages":[{"role":"user","content":"hi"}]}`))
	if err != nil {
		panic(err)
	}
	resp.Body.Close()
	fmt.Println(resp.StatusCode, srv.Count(), "POSTs")
	// Output:
	// attempt_started
	// attempt_failed
	// delay_scheduled
	// retry_started
	// attempt_started
	// attempt_succeeded
	// 200 2 POSTs
}
