package main

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"

	promclient "github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/otlptranslator"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	promexporter "go.opentelemetry.io/otel/exporters/prometheus"
	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"

	"github.com/recourse-dev/recourse/layers/quota"
	"github.com/recourse-dev/recourse/otelbridge"
	"github.com/recourse-dev/recourse/proxy"
)

// exportTimeout bounds the last export at exit.
const exportTimeout = 10 * time.Second

// The standard OpenTelemetry variables that turn on OTLP export without
// -otlp-endpoint; the exporters read them (and the other OTEL_EXPORTER_OTLP_*
// variables: headers, timeout, compression, certificates) themselves.
var (
	otlpTraceVars  = []string{"OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"}
	otlpMetricVars = []string{"OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT"}
)

// telemetry is the proxy's OpenTelemetry: traces and metrics through the
// official OTLP/HTTP exporters when an endpoint is configured, and the
// metrics on GET /metrics through the OpenTelemetry Prometheus exporter.
type telemetry struct {
	tp      *sdktrace.TracerProvider // nil: no trace export
	mp      *sdkmetric.MeterProvider
	metrics http.Handler // nil: no /metrics
}

// newTelemetry builds the telemetry of s; getenv is the environment.
func newTelemetry(ctx context.Context, s *settings, getenv func(string) string) (*telemetry, error) {
	res, err := resource.New(ctx, resource.WithAttributes(semconv.ServiceName("recourse-proxy")), resource.WithFromEnv(), resource.WithTelemetrySDK())
	if err != nil && res == nil {
		return nil, err
	}
	t := &telemetry{}
	endpoint := strings.TrimRight(s.otlp, "/")
	if endpoint != "" {
		if u, err := url.Parse(endpoint); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, errors.New("-otlp-endpoint is not an http or https URL, for example http://127.0.0.1:4318")
		}
	}
	if endpoint != "" || anySet(getenv, otlpTraceVars) {
		var opts []otlptracehttp.Option
		if endpoint != "" {
			opts = append(opts, otlptracehttp.WithEndpointURL(endpoint+"/v1/traces"))
		}
		exp, err := otlptracehttp.New(ctx, opts...)
		if err != nil {
			return nil, err
		}
		t.tp = sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	}
	mopts := []sdkmetric.Option{sdkmetric.WithResource(res)}
	if s.metrics {
		reg := promclient.NewRegistry()
		exp, err := promexporter.New(promexporter.WithRegisterer(reg),
			promexporter.WithTranslationStrategy(otlptranslator.UnderscoreEscapingWithSuffixes))
		if err != nil {
			return nil, err
		}
		mopts = append(mopts, sdkmetric.WithReader(exp))
		t.metrics = promhttp.HandlerFor(reg, promhttp.HandlerOpts{})
	}
	if endpoint != "" || anySet(getenv, otlpMetricVars) {
		var opts []otlpmetrichttp.Option
		if endpoint != "" {
			opts = append(opts, otlpmetrichttp.WithEndpointURL(endpoint+"/v1/metrics"))
		}
		exp, err := otlpmetrichttp.New(ctx, opts...)
		if err != nil {
			return nil, err
		}
		mopts = append(mopts, sdkmetric.WithReader(sdkmetric.NewPeriodicReader(exp)))
	}
	t.mp = sdkmetric.NewMeterProvider(mopts...)
	return t, nil
}

// keyRoute is the attribute naming a -config file's route on its spans and
// metrics.
const keyRoute = "recourse.proxy.route"

// layer returns the per-call tracing and metrics layer of the route named
// route ("" for the one-wire proxy, whose spans and metrics then carry no
// route).
func (t *telemetry) layer(route string) *otelbridge.Layer {
	opts := []otelbridge.Option{otelbridge.WithMeterProvider(t.mp)}
	if route != "" {
		opts = append(opts, otelbridge.WithAttributes(attribute.String(keyRoute, route)))
	}
	if t.tp != nil {
		opts = append(opts, otelbridge.WithTracerProvider(t.tp))
	} else {
		opts = append(opts, otelbridge.WithTracerProvider(otel.GetTracerProvider())) // the global no-op
	}
	return otelbridge.New(opts...)
}

// metricClientRetries is the counter of the proxy's client retries, by
// recourse.client_retry.answer: replayed, charged or refused (see
// proxy.ClientRetry).
const metricClientRetries = "recourse.proxy.client_retries"

// onClientRetry returns the proxy's Config.OnClientRetry for the route
// named route ("" for the one-wire proxy): it counts each client retry in
// metricClientRetries, whose label set is fixed (proxy.ClientRetries, and
// the route).
func (t *telemetry) onClientRetry(route string) func(context.Context, proxy.ClientRetry) {
	c, err := t.mp.Meter("github.com/recourse-dev/recourse/cmd/recourse-proxy").Int64Counter(metricClientRetries,
		metric.WithUnit("{request}"),
		metric.WithDescription("Requests a client sent again on its own after the proxy had recovered, or given up on, the same call, by how the proxy answered them."))
	if err != nil {
		otel.Handle(err)
		return nil
	}
	sets := map[proxy.ClientRetry]metric.AddOption{}
	for _, a := range proxy.ClientRetries {
		kv := []attribute.KeyValue{attribute.String("recourse.client_retry.answer", string(a))}
		if route != "" {
			kv = append(kv, attribute.String(keyRoute, route))
		}
		sets[a] = metric.WithAttributeSet(attribute.NewSet(kv...))
	}
	return func(ctx context.Context, a proxy.ClientRetry) {
		if o, ok := sets[a]; ok {
			c.Add(ctx, 1, o)
		}
	}
}

// The breaker metrics (R20.13): one series per upstream host of the retry
// quota, the proxy's own and every fallback target's, labelled
// recourse.breaker.upstream (a host, never a credential or a model).
const (
	metricBreakerRefusing = "recourse.breaker.refusing"
	metricBreakerCooldown = "recourse.breaker.cooldown_until"
	metricBreakerSkipped  = "recourse.breaker.skipped"
	metricBreakerFailures = "recourse.breaker.failures"
)

// breakers publishes the breaker of every upstream of q, read at each
// collection (a scrape of /metrics, an OTLP export): whether its resends
// are refused (1) or not (0), until when its shared cooldown holds (Unix
// seconds, 0 for none), how many calls went straight to a fallback target
// and how many failed (a stream that failed after its 200 included). A nil
// q publishes nothing. It returns the function that stops publishing them,
// for a reload that replaces q.
func (t *telemetry) breakers(q *quota.Layer) (stop func()) {
	stop = func() {}
	if q == nil {
		return stop
	}
	m := t.mp.Meter("github.com/recourse-dev/recourse/cmd/recourse-proxy")
	refusing, err1 := m.Int64ObservableGauge(metricBreakerRefusing,
		metric.WithDescription("1 while the upstream's resends are refused by the retry quota, else 0."))
	cooldown, err2 := m.Float64ObservableGauge(metricBreakerCooldown, metric.WithUnit("s"),
		metric.WithDescription("Unix time until which the upstream's shared cooldown (a Retry-After) holds; 0 when none holds."))
	skipped, err3 := m.Int64ObservableCounter(metricBreakerSkipped, metric.WithUnit("{call}"),
		metric.WithDescription("Calls that went straight to a fallback target without a request to the upstream, its circuit open."))
	failures, err4 := m.Int64ObservableCounter(metricBreakerFailures, metric.WithUnit("{call}"),
		metric.WithDescription("Calls to the upstream that ended in failure, a stream that failed after its 200 included."))
	if err := errors.Join(err1, err2, err3, err4); err != nil {
		otel.Handle(err)
		return stop
	}
	reg, err := m.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		now := time.Now()
		for _, b := range q.Breakers(now) {
			set := metric.WithAttributeSet(attribute.NewSet(attribute.String("recourse.breaker.upstream", b.Upstream)))
			var ref int64
			if b.Refusing {
				ref = 1
			}
			o.ObserveInt64(refusing, ref, set)
			until := 0.0
			if !b.CooldownUntil.IsZero() {
				until = float64(b.CooldownUntil.UnixNano()) / 1e9
			}
			o.ObserveFloat64(cooldown, until, set)
			o.ObserveInt64(skipped, b.Skipped, set)
			o.ObserveInt64(failures, b.Failures, set)
		}
		return nil
	}, refusing, cooldown, skipped, failures)
	if err != nil {
		otel.Handle(err)
		return stop
	}
	return func() {
		if err := reg.Unregister(); err != nil {
			otel.Handle(err)
		}
	}
}

// handler serves GET /metrics, when on, and passes every other request to
// next.
func (t *telemetry) handler(next http.Handler) http.Handler {
	if t.metrics == nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/metrics" && (r.Method == http.MethodGet || r.Method == http.MethodHead) {
			t.metrics.ServeHTTP(w, r)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// shutdown exports what is left, within exportTimeout; failures are logged.
func (t *telemetry) shutdown(log *slog.Logger) {
	ctx, cancel := context.WithTimeout(context.Background(), exportTimeout)
	defer cancel()
	if t.tp != nil {
		if err := t.tp.Shutdown(ctx); err != nil {
			log.LogAttrs(ctx, slog.LevelWarn, "trace export at exit failed", slog.String("error", err.Error()))
		}
	}
	if err := t.mp.Shutdown(ctx); err != nil {
		log.LogAttrs(ctx, slog.LevelWarn, "metric export at exit failed", slog.String("error", err.Error()))
	}
}

func anySet(getenv func(string) string, names []string) bool {
	for _, n := range names {
		if getenv(n) != "" {
			return true
		}
	}
	return false
}
