package otelbridge

import (
	"net/http"
	"slices"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/propagation"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/recourse-dev/recourse/layer"
)

// ScopeName is the instrumentation scope name of the layer's tracer and
// meter.
const ScopeName = "github.com/recourse-dev/recourse/otelbridge"

// Layer is the tracing and metrics layer. It is immutable after New and
// safe for concurrent use.
type Layer struct {
	tracer trace.Tracer
	prop   propagation.TextMapPropagator
	inst   instruments
	extra  []attribute.KeyValue // WithAttributes
}

// Option configures New.
type Option func(*config)

type config struct {
	tp    trace.TracerProvider
	mp    metric.MeterProvider
	prop  propagation.TextMapPropagator
	extra []attribute.KeyValue
}

// WithTracerProvider sets the tracer provider; nil (the default) means
// otel.GetTracerProvider() at the time New is called, which follows a
// global provider set later.
func WithTracerProvider(tp trace.TracerProvider) Option {
	return func(c *config) { c.tp = tp }
}

// WithMeterProvider sets the meter provider of the layer's metrics (see
// "Metrics" in the package documentation); nil (the default) means
// otel.GetMeterProvider() at the time New is called, which follows a
// global provider set later. The instruments are created once, in New.
func WithMeterProvider(mp metric.MeterProvider) Option {
	return func(c *config) { c.mp = mp }
}

// WithPropagation injects the logical span's context into every outgoing
// request with p (for example propagation.TraceContext{}). It is off by
// default: see "Propagation" in the package documentation for the
// trade-off. A nil p leaves propagation off.
func WithPropagation(p propagation.TextMapPropagator) Option {
	return func(c *config) { c.prop = p }
}

// WithAttributes adds attrs to every span and every measurement of the
// layer, after the layer's own attributes, for example the name of the
// recourse-proxy route a chain serves. Their values should be a fixed,
// small set, as every combination is a series of each metric; never put
// an identifier of a call, a credential or a prompt in them. Several
// WithAttributes add up; none (the default) adds nothing.
func WithAttributes(attrs ...attribute.KeyValue) Option {
	return func(c *config) { c.extra = append(c.extra, attrs...) }
}

// New returns a tracing layer. Without options it uses the global tracer
// and meter providers and sends no propagation header.
func New(opts ...Option) *Layer {
	var c config
	for _, o := range opts {
		o(&c)
	}
	if c.tp == nil {
		c.tp = otel.GetTracerProvider()
	}
	if c.mp == nil {
		c.mp = otel.GetMeterProvider()
	}
	return &Layer{
		tracer: c.tp.Tracer(ScopeName, trace.WithSchemaURL(semconv.SchemaURL)),
		prop:   c.prop,
		inst:   newInstruments(c.mp.Meter(ScopeName, metric.WithSchemaURL(semconv.SchemaURL))),
		extra:  slices.Clip(c.extra),
	}
}

// Name returns "tracing".
func (*Layer) Name() string { return "tracing" }

// Position returns layer.PerCall: the tracing layer sees one logical
// completion; put it outermost.
func (*Layer) Position() layer.Position { return layer.PerCall }

// Wrap returns a RoundTripper that traces and measures every call through
// next. It adds
// an observer to the call's *layer.Call (creating one when the request has
// none), so it sees the events of the engine below it.
func (l *Layer) Wrap(next http.RoundTripper) http.RoundTripper {
	return &transport{l: l, next: next}
}

type transport struct {
	l    *Layer
	next http.RoundTripper
}

// RoundTrip traces one logical completion. The caller's request is never
// modified: the observer travels in a shallow copy, and a propagation
// header in a clone.
func (t *transport) RoundTrip(req *http.Request) (*http.Response, error) {
	// The call's per-call value: the native client's, or a new one that
	// collects the response evidence and changes nothing in what the
	// engine returns.
	out, lc := layer.CallOf(req)
	c := newCall(t.l, req, lc, time.Now())
	lc.Observe(c.observe)
	ctx := out.Context()
	if t.l.prop != nil {
		c.mu.Lock()
		c.startLogical(nil)
		lctx := c.lctx
		c.mu.Unlock()
		out = req.Clone(ctx)
		t.l.prop.Inject(lctx, propagation.HeaderCarrier(out.Header))
	}
	resp, err := t.next.RoundTrip(out)
	if err != nil {
		c.end(endError, err)
		return nil, err
	}
	c.responded(resp)
	if r := &c.report.Result; r.Stream != nil {
		r.Stream = &frames{FrameReader: r.Stream, c: c}
	}
	if resp.Body == nil || resp.Body == http.NoBody {
		c.end(endEOF, nil)
		return resp, nil
	}
	resp.Body = &body{ReadCloser: resp.Body, c: c}
	return resp, nil
}
