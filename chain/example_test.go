package chain_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/recourse-dev/recourse/chain"
	"github.com/recourse-dev/recourse/chat"
	"github.com/recourse-dev/recourse/codecs/openai"
	"github.com/recourse-dev/recourse/internal/scripted"
	"github.com/recourse-dev/recourse/layer"
	"github.com/recourse-dev/recourse/layers/admission"
	"github.com/recourse-dev/recourse/layers/capture"
	"github.com/recourse-dev/recourse/layers/progress"
	"github.com/recourse-dev/recourse/layers/retry"
)

// New assembles a chain by hand; it adds the redirect guard and the sender
// that every chain needs, and prints the onion order.
func ExampleNew() {
	rl, err := retry.New(openai.New(), &retry.Policy{MaxAttempts: 3})
	if err != nil {
		panic(err)
	}
	allow := func(context.Context, admission.Request) (admission.Decision, error) { return admission.Allow, nil }
	ch, err := chain.New(rl, admission.New(allow), capture.New(), progress.New())
	if err != nil {
		panic(err)
	}
	fmt.Println(ch.Order())

	_, err = chain.New(capture.New(), rl)
	fmt.Println(err)
	// Output:
	// retry > admission > capture > progress > redirectguard > sender
	// chain: retry layer must come before the capture layer (order: tracing, retry, admission, capture, progress, redirectguard, sender)
}

// Default drops into a plain http.Client: a 503 is retried once and the
// caller sees one successful response.
func ExampleDefault() {
	srv := scripted.New(
		scripted.JSON(503, scripted.OpenAIError("server_error", "", "busy")),
		scripted.JSON(200, scripted.OpenAIChat("hello")),
	)
	defer srv.Close()
	ch, err := chain.Default(openai.New(), chain.WithPolicy(retry.Policy{
		MaxAttempts: 2,
		BaseDelay:   retry.Duration(0),
		OnEvent: func(e layer.Event) error {
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

// NewClient is the native typed client: a permanent failure comes back as a
// *layer.RecoveryError with a safe message.
func ExampleNewClient() {
	srv := scripted.New(scripted.JSON(400, scripted.OpenAIError("invalid_request_error", "invalid_request_error", "bad")))
	defer srv.Close()
	ch, _ := chain.Default(openai.New(), chain.WithPolicy(retry.Policy{MaxAttempts: 3}))
	client, _ := chain.NewClient(srv.URL, ch, chain.WithAPIKey("sk-example"))
	_, err := client.Complete(context.Background(), &chat.Request{
		Model:    "gpt-4o-mini",
		Messages: []chat.Message{{Role: chat.User, Content: "hi"}},
	})
	var re *layer.RecoveryError
	if errors.As(err, &re) {
		fmt.Println(re.Outcome, re.Failure.HTTPStatus, re.Failure.Classification.Reason)
	}
	fmt.Println(err)
	// Output:
	// interrupted 400 permanent
	// recourse: recovery interrupted (http/permanent, HTTP 400, wire attempt 1)
}
