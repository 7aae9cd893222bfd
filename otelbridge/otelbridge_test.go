package otelbridge_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/recourse-dev/recourse/chain"
	"github.com/recourse-dev/recourse/codecs/ollama"
	"github.com/recourse-dev/recourse/codecs/openai"
	"github.com/recourse-dev/recourse/event"
	"github.com/recourse-dev/recourse/layer"
	"github.com/recourse-dev/recourse/layer/layertest"
	"github.com/recourse-dev/recourse/layers/retry"
	"github.com/recourse-dev/recourse/otelbridge"
	"github.com/recourse-dev/recourse/recoursetest"
)

const model = "gpt-4o-mini"

func busy() recoursetest.Step {
	return recoursetest.JSON(503, recoursetest.OpenAIError("server_error", "server_error", "overloaded"))
}

func TestPosition(t *testing.T) {
	assert.Equal(t, layer.PerCall, otelbridge.New().Position())
	ch, err := chain.Default(openai.New(), chain.WithPerCall(otelbridge.New()))
	require.NoError(t, err)
	assert.Equal(t, "tracing > retry > capture > progress > redirectguard > sender", ch.Order())
}

// 503 → 503 → 200 with an allowing hook: one logical span, three POST
// children, resend counts absent/1/2, statuses Error/Error/Unset, the
// decision plane as events on the logical span.
func TestRetriesAreChildSpans(t *testing.T) {
	f := newFixture(t, openai.New(), retry.Policy{MaxAttempts: 3, Admit: allow}, nil,
		busy(), busy(), recoursetest.JSON(200, recoursetest.OpenAIChat("hello")))
	start := time.Now()
	comp, err := f.client.Complete(context.Background(), request(model))
	require.NoError(t, err)
	assert.Equal(t, "hello", comp.Message.Content)

	logical, attempts := f.tree()
	require.Len(t, attempts, 3)
	assert.Equal(t, "chat "+model, logical.Name())
	assert.Equal(t, trace.SpanKindClient, logical.SpanKind())
	assert.Equal(t, codes.Unset, logical.Status().Code, "a recovered failure is not an error of the logical span")
	assert.False(t, logical.StartTime().Before(start.Add(-time.Millisecond)))

	la := attrs(logical.Attributes())
	assert.Equal(t, "chat", la["gen_ai.operation.name"].AsString())
	assert.Equal(t, "openai", la["gen_ai.provider.name"].AsString())
	assert.Equal(t, model, la["gen_ai.request.model"].AsString())
	assert.Equal(t, recoursetest.OpenAIModel, la["gen_ai.response.model"].AsString())
	assert.Equal(t, []string{"stop"}, la["gen_ai.response.finish_reasons"].AsStringSlice())
	assert.Equal(t, int64(12), la["gen_ai.usage.input_tokens"].AsInt64())
	assert.Equal(t, int64(7), la["gen_ai.usage.output_tokens"].AsInt64())
	assert.Equal(t, "success", la["recourse.outcome"].AsString())
	assert.Equal(t, int64(3), la["recourse.attempts"].AsInt64())
	assert.Equal(t, "127.0.0.1", la["server.address"].AsString())
	assert.Equal(t, int64(f.port()), la["server.port"].AsInt64())
	assert.NotContains(t, la, attribute.Key("error.type"))
	assert.NotContains(t, la, attribute.Key("gen_ai.request.stream"))

	wantStatus := []codes.Code{codes.Error, codes.Error, codes.Unset}
	wantCode := []int64{503, 503, 200}
	for i, a := range attempts {
		aa := attrs(a.Attributes())
		assert.Equal(t, trace.SpanKindClient, a.SpanKind())
		assert.Equal(t, wantStatus[i], a.Status().Code, "attempt %d", i+1)
		assert.Equal(t, wantCode[i], aa["http.response.status_code"].AsInt64())
		assert.Equal(t, "POST", aa["http.request.method"].AsString())
		assert.Equal(t, f.endpoint(), aa["url.full"].AsString())
		assert.Equal(t, "127.0.0.1", aa["server.address"].AsString())
		assert.Equal(t, int64(f.port()), aa["server.port"].AsInt64())
		if i == 0 {
			assert.NotContains(t, aa, attribute.Key("http.request.resend_count"))
		} else {
			assert.Equal(t, int64(i), aa["http.request.resend_count"].AsInt64())
		}
		if wantStatus[i] == codes.Error {
			assert.Equal(t, "503", aa["error.type"].AsString())
		} else {
			assert.NotContains(t, aa, attribute.Key("error.type"))
		}
		assert.False(t, a.StartTime().Before(logical.StartTime()))
		assert.False(t, a.EndTime().After(logical.EndTime()))
		if i > 0 {
			assert.False(t, a.StartTime().Before(attempts[i-1].EndTime()), "attempts do not overlap")
		}
	}

	round := []string{"recourse.admission.pending", "recourse.admission.allowed", "recourse.delay.scheduled", "recourse.retry.started"}
	assert.Equal(t, append(append([]string{}, round...), round...), eventNames(logical))
	sleeps := f.clock.Sleeps()
	require.Len(t, sleeps, 2)
	var delays []int64
	for _, e := range logical.Events() {
		ea := attrs(e.Attributes)
		if e.Name == "recourse.delay.scheduled" {
			delays = append(delays, ea["recourse.delay_ms"].AsInt64())
		}
		if e.Name == "recourse.admission.pending" {
			assert.Equal(t, "http", ea["recourse.failure.category"].AsString())
			assert.Equal(t, "transient", ea["recourse.failure.reason"].AsString())
			assert.Equal(t, int64(503), ea["http.response.status_code"].AsInt64())
			assert.Contains(t, []int64{2, 3}, ea["recourse.next_attempt"].AsInt64())
		}
	}
	assert.Equal(t, []int64{sleeps[0].Milliseconds(), sleeps[1].Milliseconds()}, delays)
}

// The exhausted call's logical span is an error with the final status.
func TestExhaustedIsAnError(t *testing.T) {
	f := newFixture(t, openai.New(), retry.Policy{MaxAttempts: 2}, nil, busy(), busy())
	_, err := f.client.Complete(context.Background(), request(model))
	var re *layer.RecoveryError
	require.ErrorAs(t, err, &re)
	require.Equal(t, event.OutcomeExhausted, re.Outcome)

	logical, attempts := f.tree()
	require.Len(t, attempts, 2)
	assert.Equal(t, codes.Error, logical.Status().Code)
	assert.Equal(t, re.Error(), logical.Status().Description)
	la := attrs(logical.Attributes())
	assert.Equal(t, "503", la["error.type"].AsString())
	assert.Equal(t, "exhausted", la["recourse.outcome"].AsString())
	assert.Equal(t, int64(2), la["recourse.attempts"].AsInt64())
	assert.NotContains(t, la, attribute.Key("gen_ai.response.model"))
	names := eventNames(logical)
	require.NotEmpty(t, names)
	assert.Equal(t, "recourse.exhausted", names[len(names)-1])
	last := attrs(logical.Events()[len(names)-1].Attributes)
	assert.Equal(t, "exhausted", last["recourse.outcome"].AsString())
	assert.Equal(t, int64(2), last["recourse.attempt"].AsInt64())
	for _, a := range attempts {
		assert.Equal(t, codes.Error, a.Status().Code)
	}
}

// A deadline reported through the exhausted event keeps its exact outcome.
func TestDelayCeilingOutcome(t *testing.T) {
	f := newFixture(t, openai.New(), retry.Policy{MaxAttempts: 3, DelayCeiling: new(time.Second)}, nil,
		busy().WithHeader("Retry-After", "60"))
	_, err := f.client.Complete(context.Background(), request(model))
	require.Error(t, err)
	logical, _ := f.tree()
	la := attrs(logical.Attributes())
	assert.Equal(t, "delay_ceiling", la["recourse.outcome"].AsString())
	assert.Equal(t, "recourse.exhausted", eventNames(logical)[len(logical.Events())-1])
}

// A streamed completion's logical span ends with the stream, not when
// RoundTrip returns.
func TestStreamSpanEndsWithTheBody(t *testing.T) {
	for _, how := range []string{"drain", "close-after-done"} {
		t.Run(how, func(t *testing.T) {
			gate := make(chan struct{})
			events := recoursetest.OpenAIStream("Hel", "lo")
			f := newFixture(t, openai.New(), retry.Policy{MaxAttempts: 2, Admit: allow}, nil,
				busy(), recoursetest.SSE(events...).Gated(len(events)-1, gate))
			req := request(model)
			req.Stream = true
			resp, err := f.http.Do(f.post(context.Background(), f.endpoint(), req))
			require.NoError(t, err)
			require.Equal(t, 200, resp.StatusCode)
			assert.False(t, f.ended("chat "+model), "the logical span is open while the stream is")
			assert.Len(t, f.sr.Ended(), 1, "only the failed attempt ended")
			close(gate)
			if how == "drain" {
				b, err := io.ReadAll(resp.Body)
				require.NoError(t, err)
				assert.Contains(t, string(b), "[DONE]")
				assert.True(t, f.ended("chat "+model), "EOF ends the logical span")
			} else {
				// Read up to the terminal frame, then close.
				buf := make([]byte, 1<<16)
				var got strings.Builder
				for !strings.Contains(got.String(), "[DONE]") {
					n, err := resp.Body.Read(buf)
					got.Write(buf[:n])
					require.NoError(t, err)
				}
				assert.False(t, f.ended("chat "+model))
				require.NoError(t, resp.Body.Close())
			}
			require.NoError(t, resp.Body.Close())
			logical, attempts := f.tree()
			require.Len(t, attempts, 2)
			la := attrs(logical.Attributes())
			assert.True(t, la["gen_ai.request.stream"].AsBool())
			assert.Equal(t, "streaming", la["recourse.operation"].AsString())
			assert.Equal(t, "success", la["recourse.outcome"].AsString())
			assert.Equal(t, codes.Unset, logical.Status().Code)
			assert.False(t, attempts[1].EndTime().After(logical.EndTime()))
			assert.Equal(t, int64(1), attrs(attempts[1].Attributes())["http.request.resend_count"].AsInt64())
			assert.Equal(t, codes.Unset, attempts[1].Status().Code)
		})
	}
}

// A stream the caller closes before its end is recorded as closed.
func TestStreamClosedEarly(t *testing.T) {
	gate := make(chan struct{})
	events := recoursetest.OpenAIStream("Hel", "lo")
	f := newFixture(t, openai.New(), retry.Policy{}, nil, recoursetest.SSE(events...).Gated(2, gate))
	req := request(model)
	req.Stream = true
	resp, err := f.http.Do(f.post(context.Background(), f.endpoint(), req))
	require.NoError(t, err)
	buf := make([]byte, 1<<16)
	_, err = resp.Body.Read(buf)
	require.NoError(t, err)
	assert.False(t, f.ended("chat "+model))
	require.NoError(t, resp.Body.Close())
	close(gate)
	logical, attempts := f.tree()
	require.Len(t, attempts, 1)
	assert.Equal(t, "closed", attrs(logical.Attributes())["recourse.outcome"].AsString())
	assert.Equal(t, codes.Unset, logical.Status().Code)
}

// The native stream reads frames from layer.CallResult.Stream: the span ends with
// the frame reader and carries the response evidence.
func TestNativeStream(t *testing.T) {
	f := newFixture(t, openai.New(), retry.Policy{}, nil, recoursetest.SSE(recoursetest.OpenAIStream("Hel", "lo")...))
	req := request(model)
	var text strings.Builder
	for ch, err := range f.client.Stream(context.Background(), req) {
		require.NoError(t, err)
		text.WriteString(ch.Content)
		assert.False(t, f.ended("chat "+model), "open while the consumer reads")
	}
	assert.Equal(t, "Hello", text.String())
	logical, attempts := f.tree()
	require.Len(t, attempts, 1)
	la := attrs(logical.Attributes())
	assert.Equal(t, "success", la["recourse.outcome"].AsString())
	assert.True(t, la["gen_ai.request.stream"].AsBool())
	assert.Equal(t, recoursetest.OpenAIModel, la["gen_ai.response.model"].AsString())
	assert.Equal(t, []string{"stop"}, la["gen_ai.response.finish_reasons"].AsStringSlice())
	assert.Equal(t, int64(12), la["gen_ai.usage.input_tokens"].AsInt64())
}

// The RoundTrip-level view of the native stream: the call result's frame
// reader is wrapped, and the span is open until it ends.
func TestCallStreamEndsTheSpan(t *testing.T) {
	f := newFixture(t, openai.New(), retry.Policy{}, nil, recoursetest.SSE(recoursetest.OpenAIStream("Hi")...))
	req := request(model)
	req.Stream = true
	lc := &layer.Call{}
	report := &lc.Result
	resp, err := f.chain.RoundTrip(f.post(layer.WithCall(context.Background(), lc), f.endpoint(), req))
	require.NoError(t, err)
	require.NotNil(t, report.Stream)
	assert.False(t, f.ended("chat "+model))
	for {
		_, err := report.Stream.NextFrame()
		if err == io.EOF {
			break
		}
		require.NoError(t, err)
	}
	assert.True(t, f.ended("chat "+model))
	require.NoError(t, report.Stream.Close())
	require.NoError(t, resp.Body.Close())
}

// An Ollama stream through a drop-in client gets its response evidence
// from the call's result and its usage from the metrics event.
func TestOllamaStreamUsage(t *testing.T) {
	f := newFixture(t, ollama.New(), retry.Policy{}, nil, recoursetest.NDJSON(recoursetest.OllamaStream("Hi")...))
	req := request("llama3.2")
	req.Stream = true
	resp, err := f.http.Do(f.post(context.Background(), f.endpoint(), req))
	require.NoError(t, err)
	_, err = io.Copy(io.Discard, resp.Body)
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	logical, _ := f.tree()
	la := attrs(logical.Attributes())
	assert.Equal(t, "chat llama3.2", logical.Name())
	assert.Equal(t, "ollama", la["gen_ai.provider.name"].AsString())
	assert.Equal(t, int64(12), la["gen_ai.usage.input_tokens"].AsInt64())
	assert.Equal(t, int64(7), la["gen_ai.usage.output_tokens"].AsInt64())
	assert.Equal(t, "llama3.2", la["gen_ai.response.model"].AsString(), "the layer's own Report collects the evidence")
}

// A cancelled call's span records outcome cancelled; the caller's own
// cancellation is not an error, a deadline is.
func TestCancelled(t *testing.T) {
	t.Run("cancel during admission", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		hook := func(context.Context, layer.AdmissionRequest) (layer.Decision, error) {
			cancel()
			return layer.Allow, nil
		}
		f := newFixture(t, openai.New(), retry.Policy{MaxAttempts: 3, Admit: hook}, nil, busy(), recoursetest.JSON(200, recoursetest.OpenAIChat("x")))
		_, err := f.client.Complete(ctx, request(model))
		require.ErrorIs(t, err, context.Canceled)
		logical, attempts := f.tree()
		require.Len(t, attempts, 1)
		la := attrs(logical.Attributes())
		assert.Equal(t, "cancelled", la["recourse.outcome"].AsString())
		assert.Equal(t, codes.Unset, logical.Status().Code)
		assert.NotContains(t, la, attribute.Key("error.type"))
		names := eventNames(logical)
		assert.Equal(t, "recourse.cancelled", names[len(names)-1])
		assert.Equal(t, "cancelled", attrs(logical.Events()[len(names)-1].Attributes)["recourse.outcome"].AsString())
	})
	t.Run("deadline before the first attempt", func(t *testing.T) {
		ctx, cancel := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
		defer cancel()
		f := newFixture(t, openai.New(), retry.Policy{}, nil, recoursetest.JSON(200, recoursetest.OpenAIChat("x")))
		_, err := f.client.Complete(ctx, request(model))
		require.ErrorIs(t, err, context.DeadlineExceeded)
		logical, attempts := f.tree()
		assert.Empty(t, attempts)
		assert.Equal(t, "chat "+model, logical.Name())
		la := attrs(logical.Attributes())
		assert.Equal(t, "cancelled", la["recourse.outcome"].AsString())
		assert.Equal(t, int64(0), la["recourse.attempts"].AsInt64())
		assert.Equal(t, codes.Error, logical.Status().Code)
		assert.Equal(t, "timeout", la["error.type"].AsString())
		assert.Equal(t, 0, f.srv.Count())
	})
}

// A non-retryable final response passed through to a drop-in client (no
// Report) still makes the logical span an error.
func TestPassThroughFailure(t *testing.T) {
	f := newFixture(t, openai.New(), retry.Policy{MaxAttempts: 3}, nil,
		recoursetest.JSON(400, recoursetest.OpenAIError("invalid_request_error", "", "bad")))
	resp, err := f.http.Do(f.post(context.Background(), f.endpoint(), request(model)))
	require.NoError(t, err)
	assert.Equal(t, 400, resp.StatusCode, "the tracing layer does not change what a drop-in client sees")
	assert.False(t, f.ended("chat "+model))
	_, _ = io.Copy(io.Discard, resp.Body)
	require.NoError(t, resp.Body.Close())
	logical, attempts := f.tree()
	require.Len(t, attempts, 1)
	la := attrs(logical.Attributes())
	assert.Equal(t, codes.Error, logical.Status().Code)
	assert.Equal(t, "400", la["error.type"].AsString())
	assert.Equal(t, "interrupted", la["recourse.outcome"].AsString())
	assert.Equal(t, "400", attrs(attempts[0].Attributes())["error.type"].AsString())
}

// Without recovery the retry layer emits no events: only the logical span.
func TestWithoutRecovery(t *testing.T) {
	srv := recoursetest.NewServer(busy())
	defer srv.Close()
	sr := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(sr))
	defer func() { _ = tp.Shutdown(context.Background()) }()
	base := http.DefaultTransport.(*http.Transport).Clone()
	defer base.CloseIdleConnections()
	ch, err := chain.Default(openai.New(), chain.WithPerCall(otelbridge.New(otelbridge.WithTracerProvider(tp))), chain.WithoutRecovery(), chain.WithTransport(base))
	require.NoError(t, err)
	body, _ := openai.New().Encode(request(model))
	req, _ := http.NewRequest(http.MethodPost, srv.URL+"/v1/chat/completions", strings.NewReader(string(body)))
	resp, err := (&http.Client{Transport: ch}).Do(req)
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	spans := sr.Ended()
	require.Len(t, spans, 1)
	assert.Equal(t, "chat", spans[0].Name())
	assert.Equal(t, codes.Error, spans[0].Status().Code)
	assert.Equal(t, "503", attrs(spans[0].Attributes())["error.type"].AsString())
}

// An invalid per-call policy ends the span at once with a typed error.type.
func TestPolicyError(t *testing.T) {
	f := newFixture(t, openai.New(), retry.Policy{}, nil)
	ctx := retry.WithPolicy(context.Background(), &retry.Policy{MaxAttempts: -1})
	_, err := f.client.Complete(ctx, request(model))
	var pe *layer.PolicyError
	require.ErrorAs(t, err, &pe)
	spans := f.sr.Ended()
	require.Len(t, spans, 1)
	assert.Equal(t, "policy_error", attrs(spans[0].Attributes())["error.type"].AsString())
	assert.Equal(t, "error", attrs(spans[0].Attributes())["recourse.outcome"].AsString())
}

// Propagation is off by default: the provider sees no trace header and
// every attempt is byte-identical.
func TestNoPropagationByDefault(t *testing.T) {
	f := newFixture(t, openai.New(), retry.Policy{MaxAttempts: 2}, nil, busy(), recoursetest.JSON(200, recoursetest.OpenAIChat("x")))
	_, err := f.client.Complete(context.Background(), request(model))
	require.NoError(t, err)
	reqs := f.srv.Requests()
	require.Len(t, reqs, 2)
	for _, r := range reqs {
		for _, h := range []string{"Traceparent", "Tracestate", "Baggage"} {
			assert.Empty(t, r.Header.Values(h), h)
		}
	}
	assert.Equal(t, reqs[0].Header, reqs[1].Header)
	assert.Equal(t, reqs[0].Body, reqs[1].Body)
}

// With propagation every attempt carries the same traceparent, naming the
// logical span; the caller's request is not modified.
func TestPropagation(t *testing.T) {
	f := newFixture(t, openai.New(), retry.Policy{MaxAttempts: 3, Admit: allow},
		[]otelbridge.Option{otelbridge.WithPropagation(propagation.TraceContext{})},
		busy(), busy(), recoursetest.JSON(200, recoursetest.OpenAIChat("x")))
	hreq := f.post(context.Background(), f.endpoint(), request(model))
	before := hreq.Header.Clone()
	resp, err := f.http.Do(hreq)
	require.NoError(t, err)
	_, _ = io.Copy(io.Discard, resp.Body)
	require.NoError(t, resp.Body.Close())
	assert.Equal(t, before, hreq.Header, "the caller's request is unchanged")

	logical, attempts := f.tree()
	require.Len(t, attempts, 3)
	assert.Equal(t, "chat "+model, logical.Name(), "renamed once the model is known")
	assert.Equal(t, model, attrs(logical.Attributes())["gen_ai.request.model"].AsString())
	want := fmt.Sprintf("00-%s-%s-01", logical.SpanContext().TraceID(), logical.SpanContext().SpanID())
	reqs := f.srv.Requests()
	require.Len(t, reqs, 3)
	for _, r := range reqs {
		assert.Equal(t, []string{want}, r.Header.Values("Traceparent"))
	}
	assert.Equal(t, reqs[0].Header, reqs[2].Header, "attempts stay identical to each other")
}

// The caller's span is the logical span's parent.
func TestCallerSpanIsParent(t *testing.T) {
	f := newFixture(t, openai.New(), retry.Policy{}, nil, recoursetest.JSON(200, recoursetest.OpenAIChat("x")))
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(f.sr))
	defer func() { _ = tp.Shutdown(context.Background()) }()
	ctx, parent := tp.Tracer("test").Start(context.Background(), "caller")
	_, err := f.client.Complete(ctx, request(model))
	require.NoError(t, err)
	parent.End()
	for _, s := range f.sr.Ended() {
		if s.Name() == "chat "+model {
			assert.Equal(t, parent.SpanContext().SpanID(), s.Parent().SpanID())
			return
		}
	}
	t.Fatal("no logical span")
}

// The original request is never modified, and a nil error result never
// carries a response.
func TestRequestUnchanged(t *testing.T) {
	f := newFixture(t, openai.New(), retry.Policy{}, nil, recoursetest.JSON(200, recoursetest.OpenAIChat("x")))
	hreq := f.post(context.Background(), f.endpoint(), request(model))
	ctx, u, h := hreq.Context(), *hreq.URL, hreq.Header.Clone()
	resp, err := f.chain.RoundTrip(hreq)
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	assert.Equal(t, ctx, hreq.Context())
	assert.Equal(t, u, *hreq.URL)
	assert.Equal(t, h, hreq.Header)
	assert.Nil(t, layer.CallFrom(hreq.Context()), "the caller's context gains no per-call value")
}

// Concurrent calls through one layer get separate trees.
func TestConcurrentCalls(t *testing.T) {
	const n = 8
	var steps []recoursetest.Step
	for range n {
		steps = append(steps, recoursetest.JSON(200, recoursetest.OpenAIChat("x")))
	}
	f := newFixture(t, openai.New(), retry.Policy{}, nil, steps...)
	errs := make(chan error, n)
	for range n {
		go func() {
			_, err := f.client.Complete(context.Background(), request(model))
			errs <- err
		}()
	}
	for range n {
		require.NoError(t, <-errs)
	}
	logical := map[trace.SpanID]bool{}
	for _, s := range f.sr.Ended() {
		if s.Name() != "POST" {
			logical[s.SpanContext().SpanID()] = true
		}
	}
	require.Len(t, logical, n)
	for _, s := range f.sr.Ended() {
		if s.Name() == "POST" {
			assert.True(t, logical[s.Parent().SpanID()])
		}
	}
}

var errObserver = errors.New("observer says no")

// An OnEvent error ends the call with error.type observer_error and never
// records the observer's message.
func TestObserverError(t *testing.T) {
	f := newFixture(t, openai.New(), retry.Policy{}, nil, recoursetest.JSON(200, recoursetest.OpenAIChat("x")))
	ctx := retry.WithPolicy(context.Background(), &retry.Policy{OnEvent: func(ev event.Event) error {
		if ev.Type == event.AttemptSucceeded {
			return errObserver
		}
		return nil
	}})
	_, err := f.client.Complete(ctx, request(model))
	require.ErrorIs(t, err, errObserver)
	logical, attempts := f.tree()
	require.Len(t, attempts, 1)
	assert.Equal(t, "observer_error", attrs(logical.Attributes())["error.type"].AsString())
	assert.NotContains(t, logical.Status().Description, errObserver.Error())
	assert.Equal(t, "observer_error", attrs(attempts[0].Attributes())["error.type"].AsString(), "the attempt left open ends with the call's error")
}

// A stream cut before any content is resent: the cut lands on the attempt
// that broke (status 200, error.type transport), the resend is a sibling.
func TestStreamCutIsAFailedAttempt(t *testing.T) {
	events := recoursetest.OpenAIStream("Hel", "lo")
	f := newFixture(t, openai.New(), retry.Policy{MaxAttempts: 2, Admit: allow}, nil,
		recoursetest.SSE(events...).Cut(10), recoursetest.SSE(events...))
	req := request(model)
	req.Stream = true
	resp, err := f.http.Do(f.post(context.Background(), f.endpoint(), req))
	require.NoError(t, err)
	_, err = io.Copy(io.Discard, resp.Body)
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	logical, attempts := f.tree()
	require.Len(t, attempts, 2)
	first := attrs(attempts[0].Attributes())
	assert.Equal(t, codes.Error, attempts[0].Status().Code)
	assert.Equal(t, "transport", first["error.type"].AsString())
	assert.Equal(t, int64(200), first["http.response.status_code"].AsInt64())
	assert.Equal(t, int64(1), attrs(attempts[1].Attributes())["http.request.resend_count"].AsInt64())
	assert.Equal(t, codes.Unset, attempts[1].Status().Code)
	assert.Equal(t, "success", attrs(logical.Attributes())["recourse.outcome"].AsString())
}

// A rejected resend ends the call: the admission event keeps its name and
// gets the outcome; the logical span is an error with the failure's status.
func TestAdmissionRejected(t *testing.T) {
	reject := func(context.Context, layer.AdmissionRequest) (layer.Decision, error) { return layer.Reject, nil }
	f := newFixture(t, openai.New(), retry.Policy{MaxAttempts: 3, Admit: reject}, nil, busy())
	_, err := f.client.Complete(context.Background(), request(model))
	var re *layer.RecoveryError
	require.ErrorAs(t, err, &re)
	logical, attempts := f.tree()
	require.Len(t, attempts, 1)
	assert.Equal(t, []string{"recourse.admission.pending", "recourse.admission.rejected"}, eventNames(logical))
	last := attrs(logical.Events()[1].Attributes)
	assert.Equal(t, "admission_rejected", last["recourse.outcome"].AsString())
	assert.Equal(t, int64(2), last["recourse.next_attempt"].AsInt64())
	la := attrs(logical.Attributes())
	assert.Equal(t, codes.Error, logical.Status().Code)
	assert.Equal(t, "503", la["error.type"].AsString())
	assert.Equal(t, "admission_rejected", la["recourse.outcome"].AsString())
}

// The shared RoundTripper contract, with and without propagation.
func TestLayerContract(t *testing.T) {
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(tracetest.NewSpanRecorder()))
	defer func() { _ = tp.Shutdown(context.Background()) }()
	t.Run("default", func(t *testing.T) { layertest.Layer(t, otelbridge.New(otelbridge.WithTracerProvider(tp))) })
	t.Run("propagation", func(t *testing.T) {
		layertest.Layer(t, otelbridge.New(otelbridge.WithTracerProvider(tp), otelbridge.WithPropagation(propagation.TraceContext{})))
	})
	t.Run("global provider", func(t *testing.T) { layertest.Layer(t, otelbridge.New()) })
}

// A drop-in client keeps its pass-through 400 although the layer collects
// response evidence, and a successful drop-in call gets response attributes.
func TestDropInGetsResponseEvidenceAndKeepsPassThrough(t *testing.T) {
	f := newFixture(t, openai.New(), retry.Policy{MaxAttempts: 2}, nil,
		recoursetest.JSON(200, recoursetest.OpenAIChat("hi")),
		recoursetest.JSON(400, recoursetest.OpenAIError("invalid_request_error", "invalid_request_error", "bad")))
	resp, err := f.http.Do(f.post(context.Background(), f.endpoint(), request("gpt-4o-mini")))
	require.NoError(t, err)
	_, _ = io.Copy(io.Discard, resp.Body)
	require.NoError(t, resp.Body.Close())
	logical, _ := f.tree()
	la := attrs(logical.Attributes())
	assert.Equal(t, int64(12), la["gen_ai.usage.input_tokens"].AsInt64())

	resp, err = f.http.Do(f.post(context.Background(), f.endpoint(), request("gpt-4o-mini")))
	require.NoError(t, err, "a non-eligible 400 passes through to the SDK")
	assert.Equal(t, 400, resp.StatusCode)
	require.NoError(t, resp.Body.Close())
}
