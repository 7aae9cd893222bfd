package otlpjson

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/recourse-dev/recourse/chain"
	"github.com/recourse-dev/recourse/codecs/openai"
	"github.com/recourse-dev/recourse/internal/scripted"
	"github.com/recourse-dev/recourse/layers/retry"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// receiver is a loopback OTLP/HTTP receiver that decodes what it gets.
type receiver struct {
	srv    *httptest.Server
	mu     sync.Mutex
	reqs   []Request
	raw    []string
	status int
}

func newReceiver(t *testing.T) *receiver {
	r := &receiver{status: 200}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		assert.Equal(t, http.MethodPost, req.Method)
		assert.Equal(t, TracesPath, req.URL.Path)
		assert.Equal(t, "application/json", req.Header.Get("Content-Type"))
		b, err := io.ReadAll(req.Body)
		require.NoError(t, err)
		var got Request
		dec := json.NewDecoder(strings.NewReader(string(b)))
		dec.DisallowUnknownFields()
		require.NoError(t, dec.Decode(&got), string(b))
		r.mu.Lock()
		r.reqs = append(r.reqs, got)
		r.raw = append(r.raw, string(b))
		status := r.status
		r.mu.Unlock()
		w.WriteHeader(status)
		io.WriteString(w, `{}`)
	}))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *receiver) spans() []Span {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []Span
	for _, q := range r.reqs {
		for _, rs := range q.ResourceSpans {
			for _, ss := range rs.ScopeSpans {
				out = append(out, ss.Spans...)
			}
		}
	}
	return out
}

func attr(kvs []KeyValue, key string) *AnyValue {
	for _, kv := range kvs {
		if kv.Key == key {
			return &kv.Value
		}
	}
	return nil
}

func TestRecoveredCallIsExported(t *testing.T) {
	rcv := newReceiver(t)
	up := scripted.New(
		scripted.JSON(503, scripted.OpenAIError("server_error", "", "overloaded")),
		scripted.JSON(200, scripted.OpenAIChat("ok")))
	defer up.Close()
	tr, err := NewTracing(rcv.srv.URL, "recourse-proxy", nil)
	require.NoError(t, err)
	p := retry.Recommended()
	p.Sleep = func(ctx context.Context, _ time.Duration) error { return ctx.Err() }
	ch, err := chain.Default(openai.New(), chain.WithPolicy(p), chain.WithTracing(tr.Layer()))
	require.NoError(t, err)
	defer ch.CloseIdleConnections()
	client := &http.Client{Transport: ch}
	resp, err := client.Post(up.URL+"/v1/chat/completions", "application/json",
		strings.NewReader(`{"model":"gpt-4o-mini","messages":[{"role":"user","content":"hi"}]}`))
	require.NoError(t, err)
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	require.NoError(t, tr.Shutdown(context.Background()))

	rcv.mu.Lock()
	require.Len(t, rcv.reqs, 1)
	rs := rcv.reqs[0].ResourceSpans
	rcv.mu.Unlock()
	require.Len(t, rs, 1)
	assert.Equal(t, "recourse-proxy", *attr(rs[0].Resource.Attributes, "service.name").StringValue)
	require.Len(t, rs[0].ScopeSpans, 1)
	assert.Equal(t, "github.com/recourse-dev/recourse/otelbridge", rs[0].ScopeSpans[0].Scope.Name)

	spans := rcv.spans()
	require.Len(t, spans, 3, "one logical span, one per wire attempt")
	var logical *Span
	for i := range spans {
		if spans[i].ParentSpanID == "" {
			logical = &spans[i]
		}
	}
	require.NotNil(t, logical)
	assert.Equal(t, "chat gpt-4o-mini", logical.Name)
	assert.Equal(t, 3, logical.Kind, "SPAN_KIND_CLIENT")
	assert.Len(t, logical.TraceID, 32)
	assert.Len(t, logical.SpanID, 16)
	assert.NotEmpty(t, logical.Events)
	var resends []string
	for _, s := range spans {
		if s.SpanID == logical.SpanID {
			continue
		}
		assert.Equal(t, logical.SpanID, s.ParentSpanID)
		assert.Equal(t, logical.TraceID, s.TraceID)
		assert.Equal(t, "POST", s.Name)
		assert.NotEqual(t, s.StartTimeUnixNano, "0")
		if v := attr(s.Attributes, "http.request.resend_count"); v != nil {
			resends = append(resends, *v.IntValue)
		}
		if st := attr(s.Attributes, "http.response.status_code"); st != nil && *st.IntValue == "503" {
			assert.Equal(t, 2, s.Status.Code, "the failed attempt's span is an error")
		}
	}
	assert.Equal(t, []string{"1"}, resends, "the resend carries http.request.resend_count")
}

func TestExportFailures(t *testing.T) {
	rcv := newReceiver(t)
	rcv.status = 500
	exp, err := New(rcv.srv.URL+"/", nil)
	require.NoError(t, err)
	stub := sdktraceSpans(t)
	err = exp.ExportSpans(context.Background(), stub)
	var ee *ExportError
	require.ErrorAs(t, err, &ee)
	assert.Equal(t, 500, ee.Status)
	assert.Equal(t, "otlpjson: the receiver answered HTTP 500", err.Error())
	assert.NoError(t, exp.ExportSpans(context.Background(), nil))
	require.NoError(t, exp.Shutdown(context.Background()))
	assert.ErrorIs(t, exp.ExportSpans(context.Background(), stub), ErrShutdown)

	closed, err := New("http://127.0.0.1:1", nil)
	require.NoError(t, err)
	err = closed.ExportSpans(context.Background(), stub)
	require.ErrorAs(t, err, &ee)
	assert.Zero(t, ee.Status)
	closed.Shutdown(context.Background())

	for _, bad := range []string{"", "127.0.0.1:4318", "ftp://x", "http://h/?q=1"} {
		_, err := New(bad, nil)
		assert.Error(t, err, bad)
	}
}
