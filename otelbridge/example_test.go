package otelbridge_test

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"time"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/recourse-dev/recourse/chain"
	"github.com/recourse-dev/recourse/chat"
	"github.com/recourse-dev/recourse/client"
	"github.com/recourse-dev/recourse/codecs/openai"
	"github.com/recourse-dev/recourse/layer"
	"github.com/recourse-dev/recourse/layers/retry"
	"github.com/recourse-dev/recourse/otelbridge"
	"github.com/recourse-dev/recourse/recoursetest"
)

// A completion that gets 503 and then 200 becomes one logical span with
// two attempt spans; the resend carries http.request.resend_count=1.
func ExampleNew() {
	srv := recoursetest.NewServer(
		recoursetest.JSON(503, recoursetest.OpenAIError("server_error", "server_error", "overloaded")),
		recoursetest.JSON(200, recoursetest.OpenAIChat("Hello.")),
	)
	defer srv.Close()
	spans := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
	defer func() { _ = tp.Shutdown(context.Background()) }()

	base := http.DefaultTransport.(*http.Transport).Clone()
	defer base.CloseIdleConnections()
	ch, err := chain.Default(openai.New(),
		chain.WithPerCall(otelbridge.New(otelbridge.WithTracerProvider(tp))),
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
	cl, _ := client.New(srv.URL, ch)
	_, err = cl.Complete(context.Background(), &chat.Request{
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

// The layer's metrics go to the meter provider given with
// WithMeterProvider; here a manual reader collects them after a completion
// that got 503 and then 200.
func ExampleWithMeterProvider() {
	srv := recoursetest.NewServer(
		recoursetest.JSON(503, recoursetest.OpenAIError("server_error", "server_error", "overloaded")),
		recoursetest.JSON(200, recoursetest.OpenAIChat("Hello.")),
	)
	defer srv.Close()
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer func() { _ = mp.Shutdown(context.Background()) }()

	base := http.DefaultTransport.(*http.Transport).Clone()
	defer base.CloseIdleConnections()
	ch, err := chain.Default(openai.New(),
		chain.WithPerCall(otelbridge.New(otelbridge.WithMeterProvider(mp))),
		chain.WithPolicy(retry.Policy{
			MaxAttempts: 2,
			// Skip the backoff wait in this example.
			Sleep: func(ctx context.Context, _ time.Duration) error { return ctx.Err() },
			Admit: func(context.Context, layer.AdmissionRequest) (layer.Decision, error) {
				return layer.Allow, nil
			},
		}),
		chain.WithTransport(base))
	if err != nil {
		fmt.Println(err)
		return
	}
	cl, _ := client.New(srv.URL, ch)
	if _, err := cl.Complete(context.Background(), &chat.Request{
		Model:    "gpt-4o-mini",
		Messages: []chat.Message{{Role: chat.User, Content: "Say hello."}},
	}); err != nil {
		fmt.Println(err)
		return
	}

	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		fmt.Println(err)
		return
	}
	var lines []string
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			line := m.Name + " (" + m.Unit + ")"
			switch d := m.Data.(type) {
			case metricdata.Sum[int64]:
				n := int64(0)
				for _, p := range d.DataPoints {
					n += p.Value
				}
				line += fmt.Sprintf(" total %d", n)
			case metricdata.Histogram[float64]:
				for _, p := range d.DataPoints {
					line += fmt.Sprintf(" samples %d", p.Count)
				}
			case metricdata.Histogram[int64]:
				var parts []string
				for _, p := range d.DataPoints {
					v, _ := p.Attributes.Value("gen_ai.token.type")
					parts = append(parts, fmt.Sprintf(" %s %d", v.AsString(), p.Sum))
				}
				slices.Sort(parts)
				for _, part := range parts {
					line += part
				}
			}
			lines = append(lines, line)
		}
	}
	slices.Sort(lines)
	for _, l := range lines {
		fmt.Println(l)
	}
	// Output:
	// gen_ai.client.operation.duration (s) samples 1
	// gen_ai.client.token.usage ({token}) input 12 output 7
	// recourse.client.admission.decisions ({decision}) total 1
	// recourse.client.attempts ({attempt}) total 2
	// recourse.client.outcomes ({completion}) total 1
	// recourse.client.resends ({resend}) total 1
	// recourse.client.retry.delay (s) samples 1
}

// A tracing layer whose spans and metrics name the route they serve, as
// recourse-proxy's do.
func ExampleWithAttributes() {
	sr := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(sr))
	defer func() { _ = tp.Shutdown(context.Background()) }()
	srv := recoursetest.NewServer(recoursetest.JSON(200, recoursetest.OpenAIChat("Hello.")))
	defer srv.Close()
	base := http.DefaultTransport.(*http.Transport).Clone()
	defer base.CloseIdleConnections()
	ch, err := chain.Default(openai.New(),
		chain.WithPerCall(otelbridge.New(otelbridge.WithTracerProvider(tp),
			otelbridge.WithAttributes(attribute.String("recourse.proxy.route", "openai")))),
		chain.WithTransport(base))
	if err != nil {
		fmt.Println(err)
		return
	}
	cl, _ := client.New(srv.URL, ch)
	if _, err := cl.Complete(context.Background(), &chat.Request{
		Model:    "gpt-4o-mini",
		Messages: []chat.Message{{Role: chat.User, Content: "Say hello."}},
	}); err != nil {
		fmt.Println(err)
		return
	}
	for _, s := range sr.Ended() {
		for _, kv := range s.Attributes() {
			if kv.Key == "recourse.proxy.route" {
				fmt.Println(s.Name(), kv.Value.AsString())
			}
		}
	}
	// Output:
	// POST openai
	// chat gpt-4o-mini openai
}
