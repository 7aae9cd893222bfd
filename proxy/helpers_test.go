package proxy

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/recourse-dev/recourse/layers/admission"
	"github.com/recourse-dev/recourse/layers/retry"
	"github.com/recourse-dev/recourse/recoursetest"
)

func TestMain(m *testing.M) {
	if os.Getenv(loadChildEnv) != "" {
		// The load generator of BenchmarkProxyVsReverseProxy.
		os.Exit(loadChild())
	}
	goleak.VerifyTestMain(m)
}

// sleeps records the backoff delays of the injected Sleep: no test sleeps.
type sleeps struct {
	mu sync.Mutex
	d  []time.Duration
}

func (s *sleeps) sleep(ctx context.Context, d time.Duration) error {
	s.mu.Lock()
	s.d = append(s.d, d)
	s.mu.Unlock()
	return ctx.Err()
}

func (s *sleeps) all() []time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]time.Duration(nil), s.d...)
}

// syncBuffer is a log sink safe for concurrent writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// rig is a proxy in front of a scripted upstream, both on loopback.
type rig struct {
	up     *recoursetest.Server
	proxy  *httptest.Server
	sleeps *sleeps
	logs   *syncBuffer
	client *http.Client
}

// policy returns the test policy: 4 attempts, 100 ms base delay, jitter 1
// (delays 100 ms, 200 ms, 400 ms), with the injected sleep.
func testPolicy(s *sleeps) retry.Policy {
	p := retry.Recommended()
	p.Jitter = func() float64 { return 1 }
	p.Sleep = s.sleep
	return p
}

// newRig starts the upstream with steps and a proxy for provider; edit
// changes the Config before the Handler is built.
func newRig(t *testing.T, provider string, edit func(*Config), steps ...recoursetest.Step) *rig {
	t.Helper()
	r := &rig{up: recoursetest.NewServer(steps...), sleeps: &sleeps{}, logs: &syncBuffer{}}
	t.Cleanup(r.up.Close)
	cfg := Config{
		Provider: provider,
		Upstream: r.up.URL,
		Policy:   testPolicy(r.sleeps),
		Logger:   slog.New(slog.NewJSONHandler(r.logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
	}
	if edit != nil {
		edit(&cfg)
	}
	h, err := New(cfg)
	require.NoError(t, err)
	r.proxy = httptest.NewServer(h)
	t.Cleanup(r.proxy.Close)
	tr := &http.Transport{DisableCompression: true}
	r.client = &http.Client{Transport: tr, CheckRedirect: func(*http.Request, []*http.Request) error {
		t.Error("the client was handed a redirect")
		return http.ErrUseLastResponse
	}}
	t.Cleanup(tr.CloseIdleConnections)
	return r
}

const chatBody = `{"model":"gpt-4o-mini","messages":[{"role":"user","content":"hello"}]}`
const streamBody = `{"model":"gpt-4o-mini","stream":true,"messages":[{"role":"user","content":"hello"}]}`
const ollamaBody = `{"model":"llama3.2","messages":[{"role":"user","content":"hello"}]}`

// result is what a client read from the proxy.
type result struct {
	status int
	header http.Header
	body   string
	err    error // the body's read error
}

// post sends body to path through the proxy with the given headers (name,
// value pairs) and reads the whole answer.
func (r *rig) post(t *testing.T, path, body string, kv ...string) result {
	t.Helper()
	return r.do(t, http.MethodPost, path, body, kv...)
}

func (r *rig) do(t *testing.T, method, path, body string, kv ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, r.proxy.URL+path, rd)
	require.NoError(t, err)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(kv); i += 2 {
		req.Header.Add(kv[i], kv[i+1])
	}
	resp, err := r.client.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, rerr := io.ReadAll(resp.Body)
	return result{status: resp.StatusCode, header: resp.Header, body: string(b), err: rerr}
}

func retryPolicyAttempts(n int) retry.Policy { return retry.Policy{MaxAttempts: n} }

// newServer serves h on loopback until the test ends and returns its URL.
func newServer(t *testing.T, h http.Handler) string {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv.URL
}

var allowAll = admission.AllowAll()

// logged waits until the proxy's log holds want: the request line is
// written after the client got its last byte.
func (r *rig) logged(t *testing.T, want string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(r.logs.String(), want) {
		if time.Now().After(deadline) {
			t.Fatalf("the log never held %s:\n%s", want, r.logs.String())
		}
		time.Sleep(time.Millisecond)
	}
}
