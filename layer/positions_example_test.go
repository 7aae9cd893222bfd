package layer_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"time"

	"github.com/recourse-dev/recourse/chain"
	"github.com/recourse-dev/recourse/codecs/openai"
	"github.com/recourse-dev/recourse/layer"
	"github.com/recourse-dev/recourse/layers/retry"
)

// NewPerCall adapts a function to a layer that sees each logical
// completion once, whatever the engine below it retries.
func ExampleNewPerCall() {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"id":"c1","object":"chat.completion","model":"gpt-4o-mini","choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}]}`)
	}))
	defer srv.Close()
	calls := 0
	count := layer.NewPerCall("call-counter", func(next http.RoundTripper) http.RoundTripper {
		return layer.RoundTripperFunc(func(req *http.Request) (*http.Response, error) {
			calls++
			return next.RoundTrip(req)
		})
	})
	ch, err := chain.Default(openai.New(), chain.WithPolicy(retry.Recommended()), chain.WithPerCall(count))
	if err != nil {
		panic(err)
	}
	resp, err := (&http.Client{Transport: ch}).Post(srv.URL+"/v1/chat/completions", "application/json",
		strings.NewReader(`{"model":"gpt-4o-mini","messages":[{"role":"user","content":"hi"}]}`))
	if err != nil {
		panic(err)
	}
	resp.Body.Close()
	fmt.Println(ch.Order())
	fmt.Println(resp.StatusCode, calls)
	// Output:
	// call-counter > retry > capture > progress > redirectguard > sender
	// 200 1
}

// NewPerAttempt adapts a function to a layer that sees every wire attempt,
// here one that names the attempt in a header of a clone of the request.
func ExampleNewPerAttempt() {
	var seen []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen = append(seen, r.Header.Get("X-Attempt"))
		if len(seen) == 1 {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"id":"c1","object":"chat.completion","model":"gpt-4o-mini","choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}]}`)
	}))
	defer srv.Close()
	tag := layer.NewPerAttempt("attempt-tag", func(next http.RoundTripper) http.RoundTripper {
		return layer.RoundTripperFunc(func(req *http.Request) (*http.Response, error) {
			out := req.Clone(req.Context())
			if a := layer.AttemptFrom(req.Context()); a != nil {
				out.Header.Set("X-Attempt", fmt.Sprint(a.Identity().WireAttempt))
			}
			return next.RoundTrip(out)
		})
	})
	p := retry.Recommended()
	p.BaseDelay = new(time.Duration(0))
	ch, err := chain.Default(openai.New(), chain.WithPolicy(p), chain.WithPerAttempt(tag))
	if err != nil {
		panic(err)
	}
	resp, err := (&http.Client{Transport: ch}).Post(srv.URL+"/v1/chat/completions", "application/json",
		strings.NewReader(`{"model":"gpt-4o-mini","messages":[{"role":"user","content":"hi"}]}`))
	if err != nil {
		panic(err)
	}
	resp.Body.Close()
	fmt.Println(ch.Order())
	fmt.Println(resp.StatusCode, seen)
	// Output:
	// retry > capture > progress > attempt-tag > redirectguard > sender
	// 200 [1 2]
}
