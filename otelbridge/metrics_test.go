package otelbridge_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

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

// metric returns the metric named name, or fails.
func metric(t *testing.T, rm metricdata.ResourceMetrics, name string) metricdata.Metrics {
	t.Helper()
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name == name {
				assert.Equal(t, otelbridge.ScopeName, sm.Scope.Name)
				return m
			}
		}
	}
	t.Fatalf("no metric %s", name)
	return metricdata.Metrics{}
}

// recorded reports whether a metric named name has any data point.
func recorded(rm metricdata.ResourceMetrics, name string) bool {
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name == name {
				return true
			}
		}
	}
	return false
}

// counts returns a counter's values by the value of attribute key (the
// empty string for points without it).
func counts(t *testing.T, rm metricdata.ResourceMetrics, name string, key attribute.Key) map[string]int64 {
	t.Helper()
	sum, ok := metric(t, rm, name).Data.(metricdata.Sum[int64])
	require.True(t, ok, "%s is an int64 sum", name)
	assert.True(t, sum.IsMonotonic, "%s is a counter", name)
	out := map[string]int64{}
	for _, p := range sum.DataPoints {
		v, ok := p.Attributes.Value(key)
		if !ok {
			out[""] += p.Value
			continue
		}
		out[v.String()] += p.Value
	}
	return out
}

// points returns the data points of a counter.
func points(t *testing.T, rm metricdata.ResourceMetrics, name string) []metricdata.DataPoint[int64] {
	t.Helper()
	sum, ok := metric(t, rm, name).Data.(metricdata.Sum[int64])
	require.True(t, ok, "%s is an int64 sum", name)
	return sum.DataPoints
}

// histogram returns the data points of a float64 histogram.
func histogram(t *testing.T, rm metricdata.ResourceMetrics, name string) []metricdata.HistogramDataPoint[float64] {
	t.Helper()
	h, ok := metric(t, rm, name).Data.(metricdata.Histogram[float64])
	require.True(t, ok, "%s is a float64 histogram", name)
	return h.DataPoints
}

// set returns the attributes of a data point by key.
func set(s attribute.Set) map[attribute.Key]attribute.Value {
	return attrs(s.ToSlice())
}

// assertCommon checks the attributes every measurement of an OpenAI call
// to the fixture carries, and that it carries no identifier.
func assertCommon(t *testing.T, f *fixture, s attribute.Set) {
	t.Helper()
	a := set(s)
	assert.Equal(t, "chat", a["gen_ai.operation.name"].AsString())
	assert.Equal(t, "openai", a["gen_ai.provider.name"].AsString())
	assert.Equal(t, model, a["gen_ai.request.model"].AsString())
	assert.Equal(t, f.host(), a["server.address"].AsString())
	assert.Equal(t, int64(f.port()), a["server.port"].AsInt64())
	for _, k := range []attribute.Key{"recourse.logical_request_id", "recourse.attempt_id", "url.full", "gen_ai.response.model"} {
		assert.NotContains(t, a, k, "bounded cardinality: no %s", k)
	}
}

// 503 → 503 → 200: attempts failed 2 / succeeded 1, two resends, two
// delay samples with the scheduled values, two admission decisions
// allowed, one outcome success, one duration sample, the token usage.
func TestMetricsRetries(t *testing.T) {
	p := retry.Policy{MaxAttempts: 3, Admit: allow, Jitter: func() float64 { return 0.5 }}
	f := newFixture(t, openai.New(), p, nil,
		busy(), busy(), recoursetest.JSON(200, recoursetest.OpenAIChat("hello")))
	_, err := f.client.Complete(context.Background(), request(model))
	require.NoError(t, err)
	rm := f.metrics()

	att := points(t, rm, "recourse.client.attempts")
	byOutcome := counts(t, rm, "recourse.client.attempts", "recourse.attempt.outcome")
	assert.Equal(t, map[string]int64{"failed": 2, "succeeded": 1}, byOutcome)
	for _, pt := range att {
		assertCommon(t, f, pt.Attributes)
		a := set(pt.Attributes)
		switch a["recourse.attempt.outcome"].AsString() {
		case "failed":
			assert.Equal(t, int64(503), a["http.response.status_code"].AsInt64())
			assert.Equal(t, "503", a["error.type"].AsString())
		case "succeeded":
			assert.Equal(t, int64(200), a["http.response.status_code"].AsInt64())
			assert.NotContains(t, a, attribute.Key("error.type"))
		}
	}

	res := points(t, rm, "recourse.client.resends")
	require.Len(t, res, 1)
	assert.Equal(t, int64(2), res[0].Value)
	assertCommon(t, f, res[0].Attributes)
	assert.Equal(t, "http", set(res[0].Attributes)["recourse.failure.category"].AsString())
	assert.Equal(t, int64(503), set(res[0].Attributes)["http.response.status_code"].AsInt64())

	// The delays the engine scheduled (the events) and slept (the clock).
	var scheduled []time.Duration
	for _, ev := range f.rec.Events() {
		if ev.Type == event.DelayScheduled {
			scheduled = append(scheduled, ev.Delay)
		}
	}
	require.Len(t, scheduled, 2)
	assert.Equal(t, scheduled, f.clock.Sleeps())
	delay := histogram(t, rm, "recourse.client.retry.delay")
	require.Len(t, delay, 1)
	d := delay[0]
	assertCommon(t, f, d.Attributes)
	assert.Equal(t, uint64(2), d.Count)
	assert.InDelta(t, (scheduled[0] + scheduled[1]).Seconds(), d.Sum, 1e-9)
	lo, _ := d.Min.Value()
	hi, _ := d.Max.Value()
	assert.InDelta(t, min(scheduled[0], scheduled[1]).Seconds(), lo, 1e-9)
	assert.InDelta(t, max(scheduled[0], scheduled[1]).Seconds(), hi, 1e-9)
	assert.Equal(t, []float64{0, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 15, 30, 60, 120, 300}, d.Bounds)
	assert.Equal(t, "s", metric(t, rm, "recourse.client.retry.delay").Unit)

	assert.Equal(t, map[string]int64{"allowed": 2}, counts(t, rm, "recourse.client.admission.decisions", "recourse.admission.decision"))
	assert.Equal(t, map[string]int64{"success": 1}, counts(t, rm, "recourse.client.outcomes", "recourse.outcome"))
	out := points(t, rm, "recourse.client.outcomes")
	assertCommon(t, f, out[0].Attributes)
	assert.NotContains(t, set(out[0].Attributes), attribute.Key("error.type"))

	dur := histogram(t, rm, "gen_ai.client.operation.duration")
	require.Len(t, dur, 1)
	assert.Equal(t, uint64(1), dur[0].Count)
	assert.GreaterOrEqual(t, dur[0].Sum, 0.0)
	assertCommon(t, f, dur[0].Attributes)
	assert.NotContains(t, set(dur[0].Attributes), attribute.Key("error.type"))
	assert.Equal(t, []float64{0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92}, dur[0].Bounds)
	assert.Equal(t, "s", metric(t, rm, "gen_ai.client.operation.duration").Unit)

	tok, ok := metric(t, rm, "gen_ai.client.token.usage").Data.(metricdata.Histogram[int64])
	require.True(t, ok)
	assert.Equal(t, "{token}", metric(t, rm, "gen_ai.client.token.usage").Unit)
	usage := map[string]int64{}
	for _, pt := range tok.DataPoints {
		assertCommon(t, f, pt.Attributes)
		assert.Equal(t, uint64(1), pt.Count)
		usage[set(pt.Attributes)["gen_ai.token.type"].AsString()] = pt.Sum
	}
	assert.Equal(t, map[string]int64{"input": 12, "output": 7}, usage)

	assert.False(t, recorded(rm, "recourse.client.time_to_first_output"), "not a stream")
}

// A rejected resend: one decision rejected, one outcome
// admission_rejected (an error: error.type is the final failure's status),
// no resend and no delay.
func TestMetricsAdmissionRejected(t *testing.T) {
	reject := func(context.Context, layer.AdmissionRequest) (layer.Decision, error) { return layer.Reject, nil }
	f := newFixture(t, openai.New(), retry.Policy{MaxAttempts: 3, Admit: reject}, nil, busy())
	_, err := f.client.Complete(context.Background(), request(model))
	require.Error(t, err)
	rm := f.metrics()
	assert.Equal(t, map[string]int64{"rejected": 1}, counts(t, rm, "recourse.client.admission.decisions", "recourse.admission.decision"))
	assert.Equal(t, map[string]int64{"admission_rejected": 1}, counts(t, rm, "recourse.client.outcomes", "recourse.outcome"))
	out := points(t, rm, "recourse.client.outcomes")
	assert.Equal(t, "503", set(out[0].Attributes)["error.type"].AsString())
	assert.Equal(t, map[string]int64{"failed": 1}, counts(t, rm, "recourse.client.attempts", "recourse.attempt.outcome"))
	dur := histogram(t, rm, "gen_ai.client.operation.duration")
	require.Len(t, dur, 1)
	assert.Equal(t, "503", set(dur[0].Attributes)["error.type"].AsString())
	assert.False(t, recorded(rm, "recourse.client.resends"))
	assert.False(t, recorded(rm, "recourse.client.retry.delay"))
	assert.False(t, recorded(rm, "gen_ai.client.token.usage"), "usage only for a success")
}

// An exhausted call: outcome exhausted, the duration carries error.type.
func TestMetricsExhausted(t *testing.T) {
	f := newFixture(t, openai.New(), retry.Policy{MaxAttempts: 2}, nil, busy(), busy())
	_, err := f.client.Complete(context.Background(), request(model))
	require.Error(t, err)
	rm := f.metrics()
	assert.Equal(t, map[string]int64{"exhausted": 1}, counts(t, rm, "recourse.client.outcomes", "recourse.outcome"))
	assert.Equal(t, map[string]int64{"failed": 2}, counts(t, rm, "recourse.client.attempts", "recourse.attempt.outcome"))
	assert.Equal(t, map[string]int64{"http": 1}, counts(t, rm, "recourse.client.resends", "recourse.failure.category"))
	assert.False(t, recorded(rm, "recourse.client.admission.decisions"), "no hook, no decision")
	dur := histogram(t, rm, "gen_ai.client.operation.duration")
	require.Len(t, dur, 1)
	assert.Equal(t, "503", set(dur[0].Attributes)["error.type"].AsString())
}

// A caller's cancellation is an outcome, not an error.
func TestMetricsCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	hook := func(context.Context, layer.AdmissionRequest) (layer.Decision, error) {
		cancel()
		return layer.Allow, nil
	}
	f := newFixture(t, openai.New(), retry.Policy{MaxAttempts: 3, Admit: hook}, nil, busy(), recoursetest.JSON(200, recoursetest.OpenAIChat("x")))
	_, err := f.client.Complete(ctx, request(model))
	require.ErrorIs(t, err, context.Canceled)
	rm := f.metrics()
	assert.Equal(t, map[string]int64{"cancelled": 1}, counts(t, rm, "recourse.client.outcomes", "recourse.outcome"))
	out := points(t, rm, "recourse.client.outcomes")
	assert.NotContains(t, set(out[0].Attributes), attribute.Key("error.type"))
	dur := histogram(t, rm, "gen_ai.client.operation.duration")
	assert.NotContains(t, set(dur[0].Attributes), attribute.Key("error.type"))
}

// A native stream resent after a 503 records the time to first output
// once, no later than the operation's end; a drop-in Ollama stream gets
// it from the telemetry events.
func TestMetricsTimeToFirstOutput(t *testing.T) {
	t.Run("native stream", func(t *testing.T) {
		f := newFixture(t, openai.New(), retry.Policy{MaxAttempts: 2, Admit: allow}, nil,
			busy(), recoursetest.SSE(recoursetest.OpenAIStream("Hel", "lo")...))
		for _, err := range f.client.Stream(context.Background(), request(model)) {
			require.NoError(t, err)
		}
		rm := f.metrics()
		first := histogram(t, rm, "recourse.client.time_to_first_output")
		require.Len(t, first, 1)
		assert.Equal(t, uint64(1), first[0].Count)
		assertCommon(t, f, first[0].Attributes)
		assert.Equal(t, []float64{0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10, 20, 40, 80}, first[0].Bounds)
		dur := histogram(t, rm, "gen_ai.client.operation.duration")
		require.Len(t, dur, 1)
		assert.GreaterOrEqual(t, first[0].Sum, 0.0)
		assert.LessOrEqual(t, first[0].Sum, dur[0].Sum, "the first output comes before the end")
		assert.Equal(t, map[string]int64{"success": 1}, counts(t, rm, "recourse.client.outcomes", "recourse.outcome"))
		assert.Equal(t, map[string]int64{"failed": 1, "succeeded": 1}, counts(t, rm, "recourse.client.attempts", "recourse.attempt.outcome"))
	})
	t.Run("drop-in ollama stream", func(t *testing.T) {
		f := newFixture(t, ollama.New(), retry.Policy{}, nil, recoursetest.NDJSON(recoursetest.OllamaStream("Hel", "lo")...))
		req := request("llama3.2")
		req.Stream = true
		resp, err := f.http.Do(f.post(context.Background(), f.endpoint(), req))
		require.NoError(t, err)
		_, err = io.Copy(io.Discard, resp.Body)
		require.NoError(t, err)
		require.NoError(t, resp.Body.Close())
		rm := f.metrics()
		first := histogram(t, rm, "recourse.client.time_to_first_output")
		require.Len(t, first, 1)
		assert.Equal(t, uint64(1), first[0].Count)
		a := set(first[0].Attributes)
		assert.Equal(t, "ollama", a["gen_ai.provider.name"].AsString())
		assert.Equal(t, "llama3.2", a["gen_ai.request.model"].AsString())
		tok, ok := metric(t, rm, "gen_ai.client.token.usage").Data.(metricdata.Histogram[int64])
		require.True(t, ok)
		assert.Len(t, tok.DataPoints, 2, "usage from the metrics event")
	})
	t.Run("drop-in openai stream", func(t *testing.T) {
		// Without frame telemetry the layer sees only the body's bytes,
		// which it does not decode: no sample (documented).
		f := newFixture(t, openai.New(), retry.Policy{}, nil, recoursetest.SSE(recoursetest.OpenAIStream("Hi")...))
		req := request(model)
		req.Stream = true
		resp, err := f.http.Do(f.post(context.Background(), f.endpoint(), req))
		require.NoError(t, err)
		_, err = io.Copy(io.Discard, resp.Body)
		require.NoError(t, err)
		require.NoError(t, resp.Body.Close())
		rm := f.metrics()
		assert.False(t, recorded(rm, "recourse.client.time_to_first_output"))
		assert.Equal(t, map[string]int64{"success": 1}, counts(t, rm, "recourse.client.outcomes", "recourse.outcome"))
	})
}

// A stream the caller closes before its end: the engine records the open
// attempt as failed (R13.5), and the completion counts as closed.
func TestMetricsStreamClosedEarly(t *testing.T) {
	gate := make(chan struct{})
	events := recoursetest.OpenAIStream("Hel", "lo")
	f := newFixture(t, openai.New(), retry.Policy{}, nil, recoursetest.SSE(events...).Gated(2, gate))
	req := request(model)
	req.Stream = true
	resp, err := f.http.Do(f.post(context.Background(), f.endpoint(), req))
	require.NoError(t, err)
	_, err = resp.Body.Read(make([]byte, 1<<16))
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	close(gate)
	rm := f.metrics()
	assert.Equal(t, map[string]int64{"failed": 1}, counts(t, rm, "recourse.client.attempts", "recourse.attempt.outcome"))
	assert.Equal(t, map[string]int64{"closed": 1}, counts(t, rm, "recourse.client.outcomes", "recourse.outcome"))
}

// Concurrent calls through one layer: the counters add up, and no data
// point is per call (bounded cardinality).
func TestMetricsConcurrentCalls(t *testing.T) {
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
	rm := f.metrics()
	out := points(t, rm, "recourse.client.outcomes")
	require.Len(t, out, 1)
	assert.Equal(t, int64(n), out[0].Value)
	dur := histogram(t, rm, "gen_ai.client.operation.duration")
	require.Len(t, dur, 1)
	assert.Equal(t, uint64(n), dur[0].Count)
	att := points(t, rm, "recourse.client.attempts")
	require.Len(t, att, 1)
	assert.Equal(t, int64(n), att[0].Value)
}

// Every instrument is described with its unit.
func TestMetricsUnits(t *testing.T) {
	f := newFixture(t, openai.New(), retry.Policy{MaxAttempts: 2, Admit: allow}, nil,
		busy(), recoursetest.SSE(recoursetest.OpenAIStream("Hi")...))
	for _, err := range f.client.Stream(context.Background(), request(model)) {
		require.NoError(t, err)
	}
	want := map[string]string{
		"gen_ai.client.operation.duration":     "s",
		"gen_ai.client.token.usage":            "{token}",
		"recourse.client.attempts":             "{attempt}",
		"recourse.client.resends":              "{resend}",
		"recourse.client.retry.delay":          "s",
		"recourse.client.admission.decisions":  "{decision}",
		"recourse.client.outcomes":             "{completion}",
		"recourse.client.time_to_first_output": "s",
	}
	rm := f.metrics()
	var names []string
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			names = append(names, m.Name)
			assert.Equal(t, want[m.Name], m.Unit, m.Name)
			assert.NotEmpty(t, m.Description, m.Name)
		}
	}
	slices.Sort(names)
	var all []string
	for k := range want {
		all = append(all, k)
	}
	slices.Sort(all)
	assert.Equal(t, all, names)
}

// Local inference without an admission hook: the codec's rule requires
// one, so the resend is not sent (decision required).
func TestMetricsAdmissionRequired(t *testing.T) {
	f := newFixture(t, ollama.New(), retry.Policy{MaxAttempts: 3}, nil, recoursetest.JSON(503, `{"error":"busy"}`))
	_, err := f.client.Complete(context.Background(), request("llama3.2"))
	require.Error(t, err)
	rm := f.metrics()
	assert.Equal(t, map[string]int64{"required": 1}, counts(t, rm, "recourse.client.admission.decisions", "recourse.admission.decision"))
	assert.Equal(t, map[string]int64{"admission_required": 1}, counts(t, rm, "recourse.client.outcomes", "recourse.outcome"))
	assert.Equal(t, 1, f.srv.Count(), "no resend")
}

// Without recovery there are no events: only the duration, without
// provider and model, with the response's status as error.type.
func TestMetricsWithoutRecovery(t *testing.T) {
	srv := recoursetest.NewServer(busy())
	defer srv.Close()
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer func() { _ = mp.Shutdown(context.Background()) }()
	base := http.DefaultTransport.(*http.Transport).Clone()
	defer base.CloseIdleConnections()
	ch, err := chain.Default(openai.New(), chain.WithPerCall(otelbridge.New(otelbridge.WithMeterProvider(mp))), chain.WithoutRecovery(), chain.WithTransport(base))
	require.NoError(t, err)
	body, _ := openai.New().Encode(request(model))
	req, _ := http.NewRequest(http.MethodPost, srv.URL+"/v1/chat/completions", bytes.NewReader(body))
	resp, err := (&http.Client{Transport: ch}).Do(req)
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	var rm metricdata.ResourceMetrics
	require.NoError(t, reader.Collect(context.Background(), &rm))
	scanMetrics(t, rm)
	dur := histogram(t, rm, "gen_ai.client.operation.duration")
	require.Len(t, dur, 1)
	a := set(dur[0].Attributes)
	assert.Equal(t, "chat", a["gen_ai.operation.name"].AsString())
	assert.Equal(t, "503", a["error.type"].AsString())
	assert.NotContains(t, a, attribute.Key("gen_ai.provider.name"))
	assert.NotContains(t, a, attribute.Key("gen_ai.request.model"))
	for _, name := range []string{"recourse.client.attempts", "recourse.client.outcomes", "gen_ai.client.token.usage"} {
		assert.False(t, recorded(rm, name), name)
	}
}

// The default meter provider is the global one, read at New; the layer
// works with it (a no-op until a provider is set) and with a nil option.
func TestMetricsDefaultProvider(t *testing.T) {
	layertest.Layer(t, otelbridge.New(otelbridge.WithMeterProvider(nil)))
}
