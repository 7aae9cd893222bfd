// Package otlpjson is a minimal OTLP/HTTP trace exporter in the JSON
// encoding, so that a program (recourse-proxy) can send otelbridge's spans
// to a collector, Jaeger or any OTLP receiver without an exporter
// dependency: it POSTs {endpoint}/v1/traces with Content-Type
// application/json, one ExportTraceServiceRequest per batch, and builds on
// the OpenTelemetry SDK the module already uses.
//
// Exporter is an sdktrace.SpanExporter; NewTracing wires one into a
// TracerProvider with a batching processor and returns the otelbridge
// layer to put in a chain. The exporter sends once per batch and does not
// retry; a failed export is reported (returned by ExportSpans, logged by
// Tracing) and the batch dropped.
package otlpjson

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdkresource "go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/recourse-dev/recourse/otelbridge"
)

// TracesPath is the OTLP/HTTP path for traces, appended to the endpoint.
const TracesPath = "/v1/traces"

// DefaultTimeout bounds one export when the Exporter's client has none.
const DefaultTimeout = 10 * time.Second

// Exporter sends spans to an OTLP/HTTP receiver in the JSON encoding. It
// is safe for concurrent use.
type Exporter struct {
	url    string
	client *http.Client
	mu     sync.Mutex
	closed bool
}

// New returns an Exporter for endpoint, the receiver's base URL (for
// example http://127.0.0.1:4318; TracesPath is appended). A nil client
// means a client with DefaultTimeout. New returns an error for an endpoint
// that is not an http or https URL with a host, or that carries a query.
func New(endpoint string, client *http.Client) (*Exporter, error) {
	u, err := url.Parse(endpoint)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
		return nil, errors.New("otlpjson: the endpoint must be an http or https URL with a host and no query, for example http://127.0.0.1:4318")
	}
	if client == nil {
		client = &http.Client{Timeout: DefaultTimeout}
	}
	return &Exporter{url: strings.TrimRight(u.String(), "/") + TracesPath, client: client}, nil
}

// ExportError reports a failed export. Its message names the HTTP status
// or the kind of failure, never the receiver's answer.
type ExportError struct {
	// Status is the receiver's HTTP status, or 0 when no answer arrived.
	Status int
	// Err is the transport error when no answer arrived.
	Err error
}

// Error returns a safe message: the status, or the transport failure.
func (e *ExportError) Error() string {
	if e.Status != 0 {
		return "otlpjson: the receiver answered HTTP " + strconv.Itoa(e.Status)
	}
	return "otlpjson: the export was not delivered: " + e.Err.Error()
}

// Unwrap returns the transport error, or nil.
func (e *ExportError) Unwrap() error { return e.Err }

// ErrShutdown is returned by ExportSpans after Shutdown.
var ErrShutdown = errors.New("otlpjson: the exporter is shut down")

// ExportSpans sends spans as one request (sdktrace.SpanExporter). It
// returns nil for an empty batch and after a 2xx answer, an *ExportError
// otherwise.
func (e *Exporter) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	e.mu.Lock()
	closed := e.closed
	e.mu.Unlock()
	if closed {
		return ErrShutdown
	}
	if len(spans) == 0 {
		return nil
	}
	body, err := json.Marshal(Encode(spans))
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, e.url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := e.client.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return &ExportError{Err: err}
	}
	io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return &ExportError{Status: resp.StatusCode}
	}
	return nil
}

// Shutdown stops the exporter (sdktrace.SpanExporter); later exports fail
// with ErrShutdown.
func (e *Exporter) Shutdown(context.Context) error {
	e.mu.Lock()
	e.closed = true
	e.mu.Unlock()
	e.client.CloseIdleConnections()
	return nil
}

// Tracing is an otelbridge layer whose spans go to an OTLP/HTTP receiver.
type Tracing struct {
	tp    *sdktrace.TracerProvider
	layer *otelbridge.Layer
}

// NewTracing returns the tracing for a program named service: spans of
// otelbridge's layer are batched and sent to endpoint (see New) by an
// Exporter. log, which may be nil, receives one line per failed export.
// Call Shutdown before the program exits to send what is left.
func NewTracing(endpoint, service string, log *slog.Logger) (*Tracing, error) {
	exp, err := New(endpoint, nil)
	if err != nil {
		return nil, err
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	res := sdkresource.NewSchemaless(attribute.String("service.name", service))
	tp := sdktrace.NewTracerProvider(
		sdktrace.WithBatcher(&logged{Exporter: exp, log: log}),
		sdktrace.WithResource(res))
	return &Tracing{tp: tp, layer: otelbridge.New(otelbridge.WithTracerProvider(tp))}, nil
}

// Layer returns the otelbridge layer, for chain.WithTracing or
// chain.WithPerCall.
func (t *Tracing) Layer() *otelbridge.Layer { return t.layer }

// Shutdown sends the spans still batched and stops the exporter, within
// ctx.
func (t *Tracing) Shutdown(ctx context.Context) error { return t.tp.Shutdown(ctx) }

// logged logs a failed export and reports success to the SDK, whose own
// error handler would print.
type logged struct {
	*Exporter
	log *slog.Logger
}

func (l *logged) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	if err := l.Exporter.ExportSpans(ctx, spans); err != nil {
		l.log.LogAttrs(ctx, slog.LevelWarn, "trace export failed", slog.Int("spans", len(spans)), slog.String("error", err.Error()))
	}
	return nil
}

// Request is the OTLP ExportTraceServiceRequest in its JSON encoding
// (the protobuf JSON mapping: lowerCamelCase names, hexadecimal trace and
// span IDs, 64-bit integers as decimal strings, enums as numbers).
type Request struct {
	ResourceSpans []ResourceSpans `json:"resourceSpans"`
}

// ResourceSpans is the spans of one resource.
type ResourceSpans struct {
	Resource   Resource     `json:"resource"`
	ScopeSpans []ScopeSpans `json:"scopeSpans"`
	SchemaURL  string       `json:"schemaUrl,omitempty"`
}

// Resource is a resource's attributes.
type Resource struct {
	Attributes []KeyValue `json:"attributes"`
}

// ScopeSpans is the spans of one instrumentation scope.
type ScopeSpans struct {
	Scope     Scope  `json:"scope"`
	Spans     []Span `json:"spans"`
	SchemaURL string `json:"schemaUrl,omitempty"`
}

// Scope is an instrumentation scope.
type Scope struct {
	Name    string `json:"name"`
	Version string `json:"version,omitempty"`
}

// Span is one span.
type Span struct {
	TraceID                string     `json:"traceId"`
	SpanID                 string     `json:"spanId"`
	ParentSpanID           string     `json:"parentSpanId,omitempty"`
	TraceState             string     `json:"traceState,omitempty"`
	Name                   string     `json:"name"`
	Kind                   int        `json:"kind"`
	StartTimeUnixNano      string     `json:"startTimeUnixNano"`
	EndTimeUnixNano        string     `json:"endTimeUnixNano"`
	Attributes             []KeyValue `json:"attributes,omitempty"`
	DroppedAttributesCount int        `json:"droppedAttributesCount,omitempty"`
	Events                 []Event    `json:"events,omitempty"`
	DroppedEventsCount     int        `json:"droppedEventsCount,omitempty"`
	Links                  []Link     `json:"links,omitempty"`
	Status                 Status     `json:"status"`
}

// Event is a span event.
type Event struct {
	TimeUnixNano string     `json:"timeUnixNano"`
	Name         string     `json:"name"`
	Attributes   []KeyValue `json:"attributes,omitempty"`
}

// Link is a span link.
type Link struct {
	TraceID    string     `json:"traceId"`
	SpanID     string     `json:"spanId"`
	Attributes []KeyValue `json:"attributes,omitempty"`
}

// Status is a span status: code 0 unset, 1 ok, 2 error.
type Status struct {
	Code    int    `json:"code,omitempty"`
	Message string `json:"message,omitempty"`
}

// KeyValue is an attribute.
type KeyValue struct {
	Key   string   `json:"key"`
	Value AnyValue `json:"value"`
}

// AnyValue is an attribute value: exactly one field is set.
type AnyValue struct {
	StringValue *string     `json:"stringValue,omitempty"`
	BoolValue   *bool       `json:"boolValue,omitempty"`
	IntValue    *string     `json:"intValue,omitempty"`
	DoubleValue *float64    `json:"doubleValue,omitempty"`
	BytesValue  []byte      `json:"bytesValue,omitempty"`
	ArrayValue  *ArrayValue `json:"arrayValue,omitempty"`
	KvlistValue *KvList     `json:"kvlistValue,omitempty"`
}

// ArrayValue is a list of values.
type ArrayValue struct {
	Values []AnyValue `json:"values"`
}

// KvList is a list of attributes.
type KvList struct {
	Values []KeyValue `json:"values"`
}

// Encode returns the request for spans, grouped by resource and scope in
// the order they first appear.
func Encode(spans []sdktrace.ReadOnlySpan) Request {
	var req Request
	resIdx := map[*sdkresource.Resource]int{}
	scopeIdx := map[[2]int]int{}
	scopes := map[string]int{}
	for _, s := range spans {
		ri, ok := resIdx[s.Resource()]
		if !ok {
			ri = len(req.ResourceSpans)
			resIdx[s.Resource()] = ri
			rs := ResourceSpans{}
			if r := s.Resource(); r != nil {
				rs.Resource.Attributes = keyValues(r.Attributes())
				rs.SchemaURL = r.SchemaURL()
			}
			req.ResourceSpans = append(req.ResourceSpans, rs)
		}
		sc := s.InstrumentationScope()
		key := sc.Name + "\x00" + sc.Version
		sk, ok := scopes[key]
		if !ok {
			sk = len(scopes)
			scopes[key] = sk
		}
		rs := &req.ResourceSpans[ri]
		si, ok := scopeIdx[[2]int{ri, sk}]
		if !ok {
			si = len(rs.ScopeSpans)
			scopeIdx[[2]int{ri, sk}] = si
			rs.ScopeSpans = append(rs.ScopeSpans, ScopeSpans{Scope: Scope{Name: sc.Name, Version: sc.Version}, SchemaURL: sc.SchemaURL})
		}
		rs.ScopeSpans[si].Spans = append(rs.ScopeSpans[si].Spans, encodeSpan(s))
	}
	return req
}

func encodeSpan(s sdktrace.ReadOnlySpan) Span {
	sc := s.SpanContext()
	out := Span{
		TraceID:                sc.TraceID().String(),
		SpanID:                 sc.SpanID().String(),
		TraceState:             sc.TraceState().String(),
		Name:                   s.Name(),
		Kind:                   int(s.SpanKind()),
		StartTimeUnixNano:      unixNano(s.StartTime()),
		EndTimeUnixNano:        unixNano(s.EndTime()),
		Attributes:             keyValues(s.Attributes()),
		DroppedAttributesCount: s.DroppedAttributes(),
		DroppedEventsCount:     s.DroppedEvents(),
	}
	if p := s.Parent(); p.HasSpanID() {
		out.ParentSpanID = p.SpanID().String()
	}
	for _, ev := range s.Events() {
		out.Events = append(out.Events, Event{TimeUnixNano: unixNano(ev.Time), Name: ev.Name, Attributes: keyValues(ev.Attributes)})
	}
	for _, l := range s.Links() {
		out.Links = append(out.Links, Link{TraceID: l.SpanContext.TraceID().String(), SpanID: l.SpanContext.SpanID().String(), Attributes: keyValues(l.Attributes)})
	}
	st := s.Status()
	switch st.Code {
	case codes.Ok:
		out.Status.Code = 1
	case codes.Error:
		out.Status = Status{Code: 2, Message: st.Description}
	}
	return out
}

func unixNano(t time.Time) string {
	if t.IsZero() {
		return "0"
	}
	return strconv.FormatInt(t.UnixNano(), 10)
}

func keyValues(kvs []attribute.KeyValue) []KeyValue {
	if len(kvs) == 0 {
		return nil
	}
	out := make([]KeyValue, 0, len(kvs))
	for _, kv := range kvs {
		out = append(out, KeyValue{Key: string(kv.Key), Value: anyValue(kv.Value)})
	}
	return out
}

func anyValue(v attribute.Value) AnyValue {
	switch v.Type() {
	case attribute.BOOL:
		b := v.AsBool()
		return AnyValue{BoolValue: &b}
	case attribute.INT64:
		s := strconv.FormatInt(v.AsInt64(), 10)
		return AnyValue{IntValue: &s}
	case attribute.FLOAT64:
		f := v.AsFloat64()
		return AnyValue{DoubleValue: &f}
	case attribute.STRING:
		s := v.AsString()
		return AnyValue{StringValue: &s}
	case attribute.BYTESLICE:
		return AnyValue{BytesValue: v.AsByteSlice()}
	case attribute.BOOLSLICE:
		var a ArrayValue
		for _, b := range v.AsBoolSlice() {
			a.Values = append(a.Values, anyValue(attribute.BoolValue(b)))
		}
		return AnyValue{ArrayValue: &a}
	case attribute.INT64SLICE:
		var a ArrayValue
		for _, n := range v.AsInt64Slice() {
			a.Values = append(a.Values, anyValue(attribute.Int64Value(n)))
		}
		return AnyValue{ArrayValue: &a}
	case attribute.FLOAT64SLICE:
		var a ArrayValue
		for _, f := range v.AsFloat64Slice() {
			a.Values = append(a.Values, anyValue(attribute.Float64Value(f)))
		}
		return AnyValue{ArrayValue: &a}
	case attribute.STRINGSLICE:
		var a ArrayValue
		for _, s := range v.AsStringSlice() {
			a.Values = append(a.Values, anyValue(attribute.StringValue(s)))
		}
		return AnyValue{ArrayValue: &a}
	case attribute.SLICE:
		var a ArrayValue
		for _, e := range v.AsSlice() {
			a.Values = append(a.Values, anyValue(e))
		}
		return AnyValue{ArrayValue: &a}
	case attribute.MAP:
		return AnyValue{KvlistValue: &KvList{Values: keyValues(v.AsMap())}}
	}
	return AnyValue{}
}
