package otelbridge_test

import (
	"bytes"
	"context"
	"net/http"
	"net/url"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.uber.org/goleak"

	"github.com/recourse-dev/recourse/chain"
	"github.com/recourse-dev/recourse/chat"
	"github.com/recourse-dev/recourse/client"
	"github.com/recourse-dev/recourse/codec"
	"github.com/recourse-dev/recourse/internal/rigtest"
	"github.com/recourse-dev/recourse/layer"
	"github.com/recourse-dev/recourse/layers/retry"
	"github.com/recourse-dev/recourse/otelbridge"
	"github.com/recourse-dev/recourse/recoursetest"
)

// TestMain fails the package if any goroutine outlives the tests: a call
// releases everything it owns when it ends (R13.5, R8.2).
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// fixture is a scripted loopback provider behind
// chain.Default(codec, chain.WithPerCall(otelbridge.New(...)), chain.WithPolicy(...)),
// with an in-memory span recorder, a manual metric reader and the rig's
// fake clock.
type fixture struct {
	t      *testing.T
	codec  codec.Codec
	srv    *recoursetest.Server
	sr     *tracetest.SpanRecorder
	reader *sdkmetric.ManualReader
	clock  *rigtest.Clock
	rec    *rigtest.Recorder
	chain  *chain.Chain
	client *client.Client
	http   *http.Client
}

func newFixture(t *testing.T, cdc codec.Codec, p retry.Policy, opts []otelbridge.Option, steps ...recoursetest.Step) *fixture {
	t.Helper()
	return newFixtureWith(t, cdc, p, opts, nil, steps...)
}

// newFixtureWith is newFixture with more per-call layers inside tracing.
func newFixtureWith(t *testing.T, cdc codec.Codec, p retry.Policy, opts []otelbridge.Option, perCall []layer.Layer, steps ...recoursetest.Step) *fixture {
	t.Helper()
	return newFixtureLayers(t, cdc, p, opts, perCall, nil, steps...)
}

// newFixtureLayers is newFixtureWith with per-attempt layers too.
func newFixtureLayers(t *testing.T, cdc codec.Codec, p retry.Policy, opts []otelbridge.Option, perCall, perAttempt []layer.Layer, steps ...recoursetest.Step) *fixture {
	t.Helper()
	return newFixtureOn(t, recoursetest.NewServer(steps...), cdc, p, opts, perCall, perAttempt)
}

// newMemoryFixtureLayers is newFixtureLayers with the provider on
// recoursetest.NewMemoryServer; call it inside a testing/synctest bubble,
// whose clock the layers' own timers (a stall limit) then follow.
func newMemoryFixtureLayers(t *testing.T, cdc codec.Codec, p retry.Policy, perAttempt []layer.Layer, steps ...recoursetest.Step) *fixture {
	t.Helper()
	return newFixtureOn(t, recoursetest.NewMemoryServer(steps...), cdc, p, nil, nil, perAttempt)
}

// newFixtureOn builds the fixture around the provider srv.
func newFixtureOn(t *testing.T, srv *recoursetest.Server, cdc codec.Codec, p retry.Policy, opts []otelbridge.Option, perCall, perAttempt []layer.Layer) *fixture {
	t.Helper()
	f := &fixture{t: t, codec: cdc, srv: srv, sr: tracetest.NewSpanRecorder(),
		reader: sdkmetric.NewManualReader(), clock: rigtest.NewClock(), rec: &rigtest.Recorder{}}
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(f.sr))
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(f.reader))
	p.WallClock, p.MonotonicClock, p.Sleep, p.OnEvent = f.clock.Now, f.clock.Mono, f.clock.Sleep, f.rec.OnEvent
	base := srv.Transport()
	tl := otelbridge.New(append([]otelbridge.Option{otelbridge.WithTracerProvider(tp), otelbridge.WithMeterProvider(mp)}, opts...)...)
	ch, err := chain.Default(cdc, chain.WithPerCall(tl), chain.WithPerCall(perCall...), chain.WithPerAttempt(perAttempt...), chain.WithPolicy(p), chain.WithTransport(base))
	require.NoError(t, err)
	f.chain = ch
	f.client, err = client.New(f.srv.URL, ch, client.WithAPIKey(rigtest.Key))
	require.NoError(t, err)
	f.http = &http.Client{Transport: ch}
	t.Cleanup(func() {
		// Every scenario's metrics pass the privacy canary.
		scanMetrics(t, f.metrics())
		f.srv.Close()
		base.CloseIdleConnections()
		require.NoError(t, tp.Shutdown(context.Background()))
		require.NoError(t, mp.Shutdown(context.Background()))
	})
	return f
}

func allow(context.Context, layer.AdmissionRequest) (layer.Decision, error) {
	return layer.Allow, nil
}

// request returns a chat request whose user message is the prompt canary.
func request(model string) *chat.Request {
	return &chat.Request{Model: model, Messages: []chat.Message{{Role: chat.User, Content: rigtest.Prompt}}}
}

// post builds a drop-in request (what an SDK sends) to rawURL.
func (f *fixture) post(ctx context.Context, rawURL string, req *chat.Request) *http.Request {
	f.t.Helper()
	body, err := f.codec.Encode(req)
	require.NoError(f.t, err)
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, rawURL, bytes.NewReader(body))
	require.NoError(f.t, err)
	hreq.Header.Set("Authorization", "Bearer "+rigtest.Key)
	hreq.Header.Set("Content-Type", "application/json")
	return hreq
}

func (f *fixture) endpoint() string { return f.srv.URL + f.codec.Path() }

// host returns the provider's host name (127.0.0.1, or the memory
// server's).
func (f *fixture) host() string {
	u, err := url.Parse(f.srv.URL)
	require.NoError(f.t, err)
	return u.Hostname()
}

// port returns the provider's port: the loopback server's, or 80 for the
// memory server's URL, which names none.
func (f *fixture) port() int {
	u, err := url.Parse(f.srv.URL)
	require.NoError(f.t, err)
	if u.Port() == "" {
		return 80
	}
	p, err := strconv.Atoi(u.Port())
	require.NoError(f.t, err)
	return p
}

// tree splits the ended spans into the logical span and its attempt spans,
// in start order, and checks their parentage.
func (f *fixture) tree() (sdktrace.ReadOnlySpan, []sdktrace.ReadOnlySpan) {
	f.t.Helper()
	var logical sdktrace.ReadOnlySpan
	var attempts []sdktrace.ReadOnlySpan
	for _, s := range f.sr.Ended() {
		if s.Name() == "POST" || s.Name() == "GET" {
			attempts = append(attempts, s)
			continue
		}
		require.Nil(f.t, logical, "one logical span")
		logical = s
	}
	require.NotNil(f.t, logical, "the logical span ended")
	for _, a := range attempts {
		require.Equal(f.t, logical.SpanContext().TraceID(), a.SpanContext().TraceID())
		require.Equal(f.t, logical.SpanContext().SpanID(), a.Parent().SpanID(), "attempt span is a child of the logical span")
	}
	return logical, attempts
}

// attrs returns a span's attributes by key.
func attrs(kvs []attribute.KeyValue) map[attribute.Key]attribute.Value {
	m := map[attribute.Key]attribute.Value{}
	for _, kv := range kvs {
		m[kv.Key] = kv.Value
	}
	return m
}

// eventNames returns a span's event names in order.
func eventNames(s sdktrace.ReadOnlySpan) []string {
	var out []string
	for _, e := range s.Events() {
		out = append(out, e.Name)
	}
	return out
}

// ended reports whether a span named name has ended.
func (f *fixture) ended(name string) bool {
	for _, s := range f.sr.Ended() {
		if s.Name() == name {
			return true
		}
	}
	return false
}

// metrics collects what the layer's instruments recorded so far.
func (f *fixture) metrics() metricdata.ResourceMetrics {
	f.t.Helper()
	var rm metricdata.ResourceMetrics
	require.NoError(f.t, f.reader.Collect(context.Background(), &rm))
	return rm
}
