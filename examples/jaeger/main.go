// Command jaeger shows recourse's retries as OpenTelemetry spans in a real
// Jaeger. It runs two completions through
// chain.Default(openai.New(), chain.WithPerCall(otelbridge.New(...)), ...)
// against a scripted OpenAI-compatible provider on 127.0.0.1 and exports
// the spans with OTLP/HTTP:
//
//   - an ordinary completion that gets 503, then 200;
//   - a streamed completion that gets 503, then a Server-Sent Events stream.
//
// Each becomes one trace: a logical span "chat gpt-4o-mini" with one "POST"
// child span per wire attempt; the second attempt carries
// http.request.resend_count=1, and admission, backoff and retry appear as
// span events (Jaeger's "logs") on the logical span.
//
// Start a Jaeger first (see README.md in this directory), then:
//
//	go -C examples run ./jaeger -otlp 127.0.0.1:4318
//
// The program prints the trace IDs and the Jaeger API URLs to read them back.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"

	"github.com/recourse-dev/recourse/chain"
	"github.com/recourse-dev/recourse/chat"
	"github.com/recourse-dev/recourse/client"
	"github.com/recourse-dev/recourse/codecs/openai"
	"github.com/recourse-dev/recourse/layer"
	"github.com/recourse-dev/recourse/layers/retry"
	"github.com/recourse-dev/recourse/otelbridge"
	"github.com/recourse-dev/recourse/recoursetest"
)

// The canaries: the API key and the prompt are sent to the scripted
// provider and must never reach Jaeger (the end-to-end test checks).
const (
	apiKey = "sk-JAEGER-CANARY-5b1e9d7c3a2f4e60"
	prompt = "PROMPT-CANARY-jaeger-tell-me-the-secret-plan"
	model  = "gpt-4o-mini"
)

// config is what a run needs.
type config struct {
	// otlp is the host:port of the OTLP/HTTP receiver (plain HTTP).
	otlp string
	// service is the service.name of the exported spans.
	service string
	// query is the base URL of Jaeger's query API, for the printed links.
	query string
}

func main() {
	var cfg config
	flag.StringVar(&cfg.otlp, "otlp", "127.0.0.1:4318", "host:port of Jaeger's OTLP/HTTP receiver")
	flag.StringVar(&cfg.service, "service", "recourse-jaeger-example", "service.name of the exported spans")
	flag.StringVar(&cfg.query, "query", "http://127.0.0.1:16686", "base URL of Jaeger's query API (for the printed links)")
	flag.Parse()
	if _, err := run(context.Background(), os.Stdout, cfg); err != nil {
		fmt.Fprintln(os.Stderr, "jaeger:", err)
		os.Exit(1)
	}
}

// traces maps each call of a run to its trace ID (hex).
type traces struct {
	Completion string
	Stream     string
}

// run sends both completions, flushes the spans to the OTLP receiver and
// returns the trace IDs.
func run(ctx context.Context, w io.Writer, cfg config) (traces, error) {
	var out traces
	exp, err := otlptracehttp.New(ctx, otlptracehttp.WithEndpoint(cfg.otlp), otlptracehttp.WithInsecure())
	if err != nil {
		return out, err
	}
	roots := &rootRecorder{}
	tp := sdktrace.NewTracerProvider(
		sdktrace.WithBatcher(exp),
		sdktrace.WithSpanProcessor(roots),
		sdktrace.WithResource(resource.NewSchemaless(semconv.ServiceName(cfg.service))),
	)
	defer func() {
		sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = tp.Shutdown(sctx)
	}()

	// The scripted provider stands in for api.openai.com.
	busy := recoursetest.JSON(503, recoursetest.OpenAIError("server_error", "server_error", "The server is overloaded."))
	srv := recoursetest.NewServer(
		busy, recoursetest.JSON(200, recoursetest.OpenAIChat("Hello from the second attempt.")),
		busy, recoursetest.SSE(recoursetest.OpenAIStream("Hello ", "from ", "a ", "stream.")...),
	)
	defer srv.Close()

	ch, err := chain.Default(openai.New(),
		chain.WithPerCall(otelbridge.New(otelbridge.WithTracerProvider(tp))),
		chain.WithPolicy(retry.Policy{
			MaxAttempts: 3,
			BaseDelay:   new(20 * time.Millisecond),
			Admit: func(context.Context, layer.AdmissionRequest) (layer.Decision, error) {
				return layer.Allow, nil
			},
		}))
	if err != nil {
		return out, err
	}
	cl, err := client.New(srv.URL, ch, client.WithAPIKey(apiKey))
	if err != nil {
		return out, err
	}
	req := &chat.Request{Model: model, Messages: []chat.Message{{Role: chat.User, Content: prompt}}}

	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	comp, err := cl.Complete(cctx, req)
	if err != nil {
		return out, fmt.Errorf("completion: %w", err)
	}
	fmt.Fprintf(w, "completion (503, then 200): %q\n", comp.Message.Content)

	var text strings.Builder
	for chunk, err := range cl.Stream(cctx, req) {
		if err != nil {
			return out, fmt.Errorf("stream: %w", err)
		}
		text.WriteString(chunk.Content)
	}
	fmt.Fprintf(w, "stream (503, then SSE): %q\n", text.String())

	ids := roots.ids()
	if len(ids) != 2 {
		return out, fmt.Errorf("expected 2 traces, recorded %d", len(ids))
	}
	out = traces{Completion: ids[0], Stream: ids[1]}
	sctx, scancel := context.WithTimeout(ctx, 10*time.Second)
	defer scancel()
	if err := tp.ForceFlush(sctx); err != nil {
		return out, fmt.Errorf("export to %s: %w", cfg.otlp, err)
	}
	fmt.Fprintf(w, "exported to %s as service %q:\n", cfg.otlp, cfg.service)
	fmt.Fprintf(w, "  completion trace %s: %s/api/traces/%s\n", out.Completion, cfg.query, out.Completion)
	fmt.Fprintf(w, "  stream trace     %s: %s/api/traces/%s\n", out.Stream, cfg.query, out.Stream)
	return out, nil
}

// rootRecorder is a span processor that remembers the trace ID of every
// root span, in the order they end.
type rootRecorder struct {
	mu  sync.Mutex
	got []string
}

func (r *rootRecorder) OnStart(context.Context, sdktrace.ReadWriteSpan) {}

func (r *rootRecorder) OnEnd(s sdktrace.ReadOnlySpan) {
	if s.Parent().IsValid() {
		return
	}
	r.mu.Lock()
	r.got = append(r.got, s.SpanContext().TraceID().String())
	r.mu.Unlock()
}

func (r *rootRecorder) Shutdown(context.Context) error   { return nil }
func (r *rootRecorder) ForceFlush(context.Context) error { return nil }

func (r *rootRecorder) ids() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.got...)
}
