package otlpjson_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"time"

	"github.com/recourse-dev/recourse/chain"
	"github.com/recourse-dev/recourse/codecs/openai"
	"github.com/recourse-dev/recourse/layers/retry"
	"github.com/recourse-dev/recourse/otelbridge/otlpjson"
	"github.com/recourse-dev/recourse/recoursetest"
)

// A chain whose spans go to an OTLP/HTTP receiver (here a loopback one
// that counts them; in use, a collector or Jaeger's port 4318).
func ExampleNewTracing() {
	spans := make(chan int, 1)
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req otlpjson.Request
		json.NewDecoder(r.Body).Decode(&req)
		n := 0
		for _, rs := range req.ResourceSpans {
			for _, ss := range rs.ScopeSpans {
				n += len(ss.Spans)
			}
		}
		spans <- n
	}))
	defer receiver.Close()
	provider := recoursetest.NewServer(
		recoursetest.JSON(503, recoursetest.OpenAIError("server_error", "", "overloaded")),
		recoursetest.JSON(200, recoursetest.OpenAIChat("Hello!")))
	defer provider.Close()

	tracing, err := otlpjson.NewTracing(receiver.URL, "my-service", nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	policy := retry.Recommended()
	policy.BaseDelay = new(0 * time.Millisecond)
	ch, err := chain.Default(openai.New(), chain.WithPolicy(policy), chain.WithTracing(tracing.Layer()))
	if err != nil {
		fmt.Println(err)
		return
	}
	resp, err := (&http.Client{Transport: ch}).Post(provider.URL+"/v1/chat/completions", "application/json",
		strings.NewReader(`{"model":"gpt-4o-mini","messages":[{"role":"user","content":"hi"}]}`))
	if err != nil {
		fmt.Println(err)
		return
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	ch.CloseIdleConnections()

	tracing.Shutdown(context.Background()) // sends the batch
	fmt.Println("status:", resp.StatusCode, "spans:", <-spans)
	// Output:
	// status: 200 spans: 3
}

// New's Exporter is an sdktrace.SpanExporter for a TracerProvider of your
// own; an unusable endpoint is refused at once.
func ExampleNew() {
	_, err := otlpjson.New("127.0.0.1:4318", nil)
	fmt.Println(err)
	exp, err := otlpjson.New("http://127.0.0.1:4318", nil)
	fmt.Println(exp != nil, err)
	// Output:
	// otlpjson: the endpoint must be an http or https URL with a host and no query, for example http://127.0.0.1:4318
	// true <nil>
}
