package proxy

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/noop"
)

// MetricClientRetries is the name of the proxy's counter of client retries:
// requests a client sent again on its own after the proxy had already
// recovered, or given up on, the same call. Its one attribute,
// recourse.client_retry.answer, is "replayed" (a repeat of a final failure,
// answered from memory without contacting the upstream, R19.1), "charged"
// (a request marked X-Stainless-Retry-Count above 0, sent upstream and
// charged to the retry quota as a resend) or "refused" (such a request the
// quota refused, answered 503 quota_exhausted).
const MetricClientRetries = "recourse.proxy.client_retries"

// keyClientRetryAnswer is the attribute of MetricClientRetries.
const keyClientRetryAnswer = attribute.Key("recourse.client_retry.answer")

// The values of keyClientRetryAnswer.
const (
	clientRetryReplayed = "replayed"
	clientRetryCharged  = "charged"
	clientRetryRefused  = "refused"
)

// metrics are the proxy's own instruments; the zero value records nothing.
type metrics struct {
	clientRetries metric.Int64Counter
	sets          map[string]metric.MeasurementOption
}

// newMetrics creates the instruments on mp's meter; a nil mp, or an
// instrument the meter did not return, records nothing.
func newMetrics(mp metric.MeterProvider) metrics {
	if mp == nil {
		mp = noop.NewMeterProvider()
	}
	c, err := mp.Meter("github.com/recourse-dev/recourse/proxy").Int64Counter(MetricClientRetries,
		metric.WithUnit("{request}"),
		metric.WithDescription("Requests a client sent again on its own, by how the proxy answered them."))
	if err != nil {
		c = noop.Int64Counter{}
	}
	m := metrics{clientRetries: c, sets: map[string]metric.MeasurementOption{}}
	for _, v := range []string{clientRetryReplayed, clientRetryCharged, clientRetryRefused} {
		m.sets[v] = metric.WithAttributeSet(attribute.NewSet(keyClientRetryAnswer.String(v)))
	}
	return m
}

// clientRetry counts one client retry answered as answer.
func (m metrics) clientRetry(ctx context.Context, answer string) {
	if m.clientRetries == nil {
		return
	}
	m.clientRetries.Add(ctx, 1, m.sets[answer])
}
