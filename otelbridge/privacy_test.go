package otelbridge_test

import (
	"context"
	"io"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/recourse-dev/recourse/codecs/openai"
	"github.com/recourse-dev/recourse/internal/rigtest"
	"github.com/recourse-dev/recourse/layer"
	"github.com/recourse-dev/recourse/layers/retry"
	"github.com/recourse-dev/recourse/otelbridge"
	"github.com/recourse-dev/recourse/recoursetest"
)

// canaries must appear in no span name, status, attribute or event, and in
// no metric name, description, unit or attribute.
var canaries = []string{rigtest.Key, rigtest.Prompt, "Bearer"}

// TestPrivacyCanary runs calls whose request (header, URL user
// information and query, prompt) and responses (error bodies, response
// model, finish reason) carry the canaries, and scans every span and every
// metric. (Every other fixture's metrics are scanned when its test ends.)
func TestPrivacyCanary(t *testing.T) {
	secret := func(s string) string {
		return strings.NewReplacer(recoursetest.OpenAIModel, rigtest.Key, `"stop"`, `"`+rigtest.Key+`"`).Replace(s)
	}
	echo := recoursetest.OpenAIError("server_error", rigtest.Key, "echo "+rigtest.Prompt+" Bearer "+rigtest.Key)
	var stream []string
	for _, e := range recoursetest.OpenAIStream("a", rigtest.Prompt) {
		stream = append(stream, strings.ReplaceAll(e, recoursetest.OpenAIModel, rigtest.Prompt))
	}
	f := newFixture(t, openai.New(), retry.Policy{MaxAttempts: 2, Admit: allow},
		[]otelbridge.Option{otelbridge.WithPropagation(propagation.TraceContext{})},
		// 1: drop-in with a Report, 503 echoing the secrets, then a 200 whose model and finish reason are the key.
		recoursetest.JSON(503, echo, "X-Echo", rigtest.Key),
		recoursetest.JSON(200, secret(recoursetest.OpenAIChat(rigtest.Prompt))),
		// 2: native stream whose response model is the prompt.
		recoursetest.SSE(stream...),
		// 3: exhausted, both bodies echoing.
		recoursetest.JSON(500, echo), recoursetest.JSON(502, echo),
		// 4: a 200 with an error object echoing the key (interrupted, failing closed).
		recoursetest.JSON(200, echo),
	)

	u, err := url.Parse(f.endpoint())
	require.NoError(t, err)
	u.User = url.UserPassword("user", rigtest.Key)
	u.RawQuery = url.Values{"api-key": {rigtest.Key}, "q": {rigtest.Prompt}}.Encode()
	lc := &layer.Call{}
	report := &lc.Result
	resp, err := f.http.Do(f.post(layer.WithCall(context.Background(), lc), u.String(), request(model)))
	require.NoError(t, err)
	_, _ = io.Copy(io.Discard, resp.Body)
	require.NoError(t, resp.Body.Close())
	require.Equal(t, rigtest.Key, report.Response.Model, "the response really echoed the key")

	for _, err := range f.client.Stream(context.Background(), request(model)) {
		require.NoError(t, err)
	}
	_, err = f.client.Complete(context.Background(), request(model))
	require.Error(t, err)
	_, err = f.http.Do(f.post(context.Background(), u.String(), request(model)))
	var re *layer.RecoveryError
	require.ErrorAs(t, err, &re, "a 2xx error object fails closed for a drop-in caller")
	for _, c := range canaries {
		assert.NotContains(t, re.Error(), c, "the safe error text")
	}

	spans := f.sr.Ended()
	require.Len(t, spans, 3+2+3+2)
	for _, s := range spans {
		scan(t, s)
		if s.Name() == "POST" {
			full := attrs(s.Attributes())["url.full"].AsString()
			assert.Equal(t, f.endpoint(), full, "url.full has no user information and no query")
		}
	}

	rm := f.metrics()
	names := map[string]bool{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			names[m.Name] = true
		}
	}
	for _, n := range []string{"gen_ai.client.operation.duration", "gen_ai.client.token.usage", "recourse.client.attempts",
		"recourse.client.resends", "recourse.client.retry.delay", "recourse.client.admission.decisions",
		"recourse.client.outcomes", "recourse.client.time_to_first_output"} {
		assert.True(t, names[n], "the scenarios recorded %s", n)
	}
	scanMetrics(t, rm)
}

// scanMetrics fails if a canary appears anywhere in rm: a scope, a
// metric's name, description or unit, or an attribute of a data point or
// exemplar.
func scanMetrics(t *testing.T, rm metricdata.ResourceMetrics) {
	t.Helper()
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			texts := []string{sm.Scope.Name, m.Name, m.Description, m.Unit}
			var kvs []attribute.KeyValue
			switch d := m.Data.(type) {
			case metricdata.Sum[int64]:
				for _, p := range d.DataPoints {
					kvs = append(kvs, p.Attributes.ToSlice()...)
					for _, e := range p.Exemplars {
						kvs = append(kvs, e.FilteredAttributes...)
					}
				}
			case metricdata.Histogram[float64]:
				for _, p := range d.DataPoints {
					kvs = append(kvs, p.Attributes.ToSlice()...)
					for _, e := range p.Exemplars {
						kvs = append(kvs, e.FilteredAttributes...)
					}
				}
			case metricdata.Histogram[int64]:
				for _, p := range d.DataPoints {
					kvs = append(kvs, p.Attributes.ToSlice()...)
					for _, e := range p.Exemplars {
						kvs = append(kvs, e.FilteredAttributes...)
					}
				}
			default:
				t.Errorf("metric %s: unexpected data %T", m.Name, m.Data)
			}
			for _, kv := range kvs {
				texts = append(texts, string(kv.Key), kv.Value.String())
			}
			for _, txt := range texts {
				for _, c := range canaries {
					assert.NotContains(t, txt, c, "metric %q", m.Name)
				}
			}
		}
	}
}

// scan fails if a canary appears anywhere in s.
func scan(t *testing.T, s sdktrace.ReadOnlySpan) {
	t.Helper()
	texts := []string{s.Name(), s.Status().Description}
	kvs := append([]attribute.KeyValue{}, s.Attributes()...)
	for _, e := range s.Events() {
		texts = append(texts, e.Name)
		kvs = append(kvs, e.Attributes...)
	}
	for _, kv := range kvs {
		texts = append(texts, string(kv.Key), kv.Value.String())
	}
	for _, txt := range texts {
		for _, c := range canaries {
			assert.NotContains(t, txt, c, "span %q", s.Name())
		}
	}
}
