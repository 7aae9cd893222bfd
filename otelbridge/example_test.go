package otelbridge_test

import (
	"context"
	"fmt"
	"net/http"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/recourse-dev/recourse/chain"
	"github.com/recourse-dev/recourse/chat"
	"github.com/recourse-dev/recourse/codecs/openai"
	"github.com/recourse-dev/recourse/internal/scripted"
	"github.com/recourse-dev/recourse/layer"
	"github.com/recourse-dev/recourse/layers/retry"
	"github.com/recourse-dev/recourse/otelbridge"
)

// A completion that gets 503 and then 200 becomes one logical span with
// two attempt spans; the resend carries http.request.resend_count=1.
func ExampleNew() {
	srv := scripted.New(
		scripted.JSON(503, scripted.OpenAIError("server_error", "server_error", "overloaded")),
		scripted.JSON(200, scripted.OpenAIChat("Hello.")),
	)
	defer srv.Close()
	spans := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
	defer func() { _ = tp.Shutdown(context.Background()) }()

	base := http.DefaultTransport.(*http.Transport).Clone()
	defer base.CloseIdleConnections()
	ch, err := chain.Default(openai.New(),
		chain.WithTracing(otelbridge.New(otelbridge.WithTracerProvider(tp))),
		chain.WithPolicy(retry.Policy{
			MaxAttempts: 2,
			BaseDelay:   new(time.Millisecond),
			Admit: func(context.Context, layer.AdmissionRequest) (layer.Decision, error) {
				return layer.Allow, nil
			},
		}),
		chain.WithTransport(base))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(ch.Order())
	client, _ := chain.NewClient(srv.URL, ch)
	_, err = client.Complete(context.Background(), &chat.Request{
		Model:    "gpt-4o-mini",
		Messages: []chat.Message{{Role: chat.User, Content: "Say hello."}},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, s := range spans.Ended() {
		line := s.Name() + " " + s.Status().Code.String()
		for _, kv := range s.Attributes() {
			switch kv.Key {
			case "http.response.status_code", "http.request.resend_count", "recourse.outcome", "recourse.attempts":
				line += " " + string(kv.Key) + "=" + kv.Value.String()
			}
		}
		fmt.Println(line)
	}
	// Output:
	// tracing > retry > capture > progress > redirectguard > sender
	// POST Error http.response.status_code=503
	// POST Unset http.request.resend_count=1 http.response.status_code=200
	// chat gpt-4o-mini Unset recourse.outcome=success recourse.attempts=2
}
