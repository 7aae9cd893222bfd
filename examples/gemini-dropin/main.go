// Command gemini-dropin runs one generateContent call through Google's Go
// SDK (google.golang.org/genai) with recourse's default chain as the HTTP
// transport.
//
// The chain is an http.RoundTripper, so it drops into the SDK through
// genai.ClientConfig.HTTPClient. The SDK retries nothing unless
// HTTPOptions.RetryOptions is set, so recourse is the only thing that may
// send a request again, under its policy (here at most 3 wire attempts),
// reporting every step to OnEvent. The codec reads the model from the
// request path and the wait of a 429 from its body (RetryInfo.retryDelay).
//
// By default the program starts a tiny scripted server on 127.0.0.1 that
// answers a 429 RESOURCE_EXHAUSTED whose body says "retry in 1s" (and no
// Retry-After header), then 200, so it runs offline. Set GEMINI_API_KEY to
// talk to the real Gemini API instead; GEMINI_MODEL is then the model
// (default gemini-2.5-flash).
//
//	go -C examples run ./gemini-dropin
package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"time"

	"google.golang.org/genai"

	"github.com/recourse-dev/recourse/chain"
	"github.com/recourse-dev/recourse/codecs/gemini"
	"github.com/recourse-dev/recourse/event"
	"github.com/recourse-dev/recourse/examples/internal/demo"
	"github.com/recourse-dev/recourse/layers/retry"
	"github.com/recourse-dev/recourse/recoursetest"
)

func main() { demo.Main("gemini-dropin", run) }

// sleep is the policy's backoff sleep; nil is a timer. A test replaces it.
var sleep func(context.Context, time.Duration) error

// run picks the endpoint (the local scripted server unless GEMINI_API_KEY
// is set), runs one call and prints what happened to w.
func run(w io.Writer) error {
	key, model, base := os.Getenv("GEMINI_API_KEY"), os.Getenv("GEMINI_MODEL"), ""
	if model == "" {
		model = "gemini-2.5-flash"
	}
	if key == "" {
		srv := recoursetest.NewServer(
			recoursetest.GeminiRateLimit("1s", "GenerateRequestsPerMinutePerProjectPerModel-FreeTier"),
			recoursetest.JSON(http.StatusOK, recoursetest.GeminiChat("Hello from the scripted server.")),
		)
		defer srv.Close()
		key, base = "offline-demo-key", srv.URL
		fmt.Fprintf(w, "offline: scripted server at %s (429 with retryDelay 1s in the body, then 200)\n", srv.URL)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	client, err := newClient(ctx, base, key, retry.Policy{MaxAttempts: 3, Sleep: sleep, OnEvent: func(ev event.Event) error {
		demo.EventFormat{Width: 17}.Print(w, ev)
		return nil
	}})
	if err != nil {
		return err
	}
	resp, err := client.Models.GenerateContent(ctx, model, genai.Text("Say hello."), nil)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "answer: %s\n", resp.Text())
	return nil
}

// newClient returns a genai client for the Gemini API at base (the
// default endpoint when empty) whose transport is the default recourse
// chain with the Gemini codec under policy p.
func newClient(ctx context.Context, base, key string, p retry.Policy) (*genai.Client, error) {
	ch, err := chain.Default(gemini.New(), chain.WithPolicy(p))
	if err != nil {
		return nil, err
	}
	return genai.NewClient(ctx, &genai.ClientConfig{
		APIKey:      key,
		Backend:     genai.BackendGeminiAPI,
		HTTPClient:  &http.Client{Transport: ch},
		HTTPOptions: genai.HTTPOptions{BaseURL: base},
	})
}
