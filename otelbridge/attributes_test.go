package otelbridge_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/recourse-dev/recourse/codecs/openai"
	"github.com/recourse-dev/recourse/layers/retry"
	"github.com/recourse-dev/recourse/otelbridge"
	"github.com/recourse-dev/recourse/recoursetest"
)

// WithAttributes: the logical span, every attempt span and every data
// point of every metric carry the layer's own attributes, beside the
// layer's.
func TestWithAttributesOnEverySpanAndMeasurement(t *testing.T) {
	route := attribute.String("recourse.proxy.route", "claude")
	p := retry.Policy{MaxAttempts: 2, Admit: allow}
	f := newFixture(t, openai.New(), p, []otelbridge.Option{otelbridge.WithAttributes(route), otelbridge.WithAttributes(attribute.String("team", "a"))},
		busy(), recoursetest.JSON(200, recoursetest.OpenAIChat("hello")))
	_, err := f.client.Complete(context.Background(), request(model))
	require.NoError(t, err)
	logical, attempts := f.tree()
	require.Len(t, attempts, 2)
	for _, s := range append(attempts, logical) {
		a := attrs(s.Attributes())
		assert.Equal(t, "claude", a["recourse.proxy.route"].AsString(), s.Name())
		assert.Equal(t, "a", a["team"].AsString(), s.Name())
	}
	rm := f.metrics()
	n := 0
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			var sets []attribute.Set
			switch d := m.Data.(type) {
			case metricdata.Sum[int64]:
				for _, pt := range d.DataPoints {
					sets = append(sets, pt.Attributes)
				}
			case metricdata.Histogram[float64]:
				for _, pt := range d.DataPoints {
					sets = append(sets, pt.Attributes)
				}
			case metricdata.Histogram[int64]:
				for _, pt := range d.DataPoints {
					sets = append(sets, pt.Attributes)
				}
			}
			for _, s := range sets {
				v, ok := s.Value("recourse.proxy.route")
				assert.True(t, ok, m.Name)
				assert.Equal(t, "claude", v.AsString(), m.Name)
				n++
			}
		}
	}
	assert.Greater(t, n, 5, "the metrics were recorded")
}
