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

// rig is a proxy in front of a scripted upstream, both on loopback, or
// both on an in-memory network inside a testing/synctest bubble
// (newMemoryRig).
type rig struct {
	up     *recoursetest.Server
	proxy  *httptest.Server
	sleeps *sleeps
	logs   *syncBuffer
	client *http.Client
	// bubble is set for a memory rig: a request then has no deadline of
	// its own, since its waits run on the bubble's clock and one that
	// never ends fails the test as a deadlock.
	bubble bool
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
	r := &rig{up: recoursetest.NewServer(steps...)}
	t.Cleanup(r.up.Close)
	h := r.handler(t, provider, edit)
	r.proxy = httptest.NewServer(h)
	t.Cleanup(r.proxy.Close)
	r.setClient(t, &http.Transport{DisableCompression: true})
	return r
}

// newMemoryRig is newRig with the upstream on recoursetest.NewMemoryServer
// and the proxy served on its in-memory network too (ServeMemory). Call
// it inside a testing/synctest bubble: the proxy's stall limits then fire
// on the bubble's clock, while its backoff stays on the recorded sleeps.
func newMemoryRig(t *testing.T, provider string, edit func(*Config), steps ...recoursetest.Step) *rig {
	t.Helper()
	r := &rig{up: recoursetest.NewMemoryServer(steps...), bubble: true}
	t.Cleanup(r.up.Close)
	upstream := r.up.Transport()
	t.Cleanup(upstream.CloseIdleConnections)
	h := r.handler(t, provider, func(c *Config) {
		c.Transport = upstream
		if edit != nil {
			edit(c)
		}
	})
	var tr *http.Transport
	r.proxy, tr = recoursetest.ServeMemory(h)
	t.Cleanup(func() {
		r.proxy.CloseClientConnections()
		r.proxy.Close()
	})
	tr.DisableCompression = true
	r.setClient(t, tr)
	return r
}

// handler builds the proxy for provider in front of the rig's upstream;
// edit changes the Config first.
func (r *rig) handler(t *testing.T, provider string, edit func(*Config)) http.Handler {
	t.Helper()
	r.sleeps, r.logs = &sleeps{}, &syncBuffer{}
	cfg := Config{
		Provider: provider,
		Upstream: r.up.URL,
		Policy:   testPolicy(r.sleeps),
		Logger:   slog.New(slog.NewJSONHandler(r.logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
	}
	if edit != nil {
		edit(&cfg)
	}
	if os.Getenv(viaRouterEnv) != "" {
		return viaRouter(t, cfg)
	}
	h, err := New(cfg)
	require.NoError(t, err)
	return h
}

// setClient gives the rig its client on tr, which refuses redirects.
func (r *rig) setClient(t *testing.T, tr *http.Transport) {
	r.client = &http.Client{Transport: tr, CheckRedirect: func(*http.Request, []*http.Request) error {
		t.Error("the client was handed a redirect")
		return http.ErrUseLastResponse
	}}
	t.Cleanup(tr.CloseIdleConnections)
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
	// trailer is the answer's trailer, read after its body.
	trailer http.Header
}

// post sends body to path through the proxy with the given headers (name,
// value pairs) and reads the whole answer.
func (r *rig) post(t *testing.T, path, body string, kv ...string) result {
	t.Helper()
	return r.do(t, http.MethodPost, path, body, kv...)
}

func (r *rig) do(t *testing.T, method, path, body string, kv ...string) result {
	t.Helper()
	ctx, cancel := r.requestContext()
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
	return result{status: resp.StatusCode, header: resp.Header, body: string(b), err: rerr, trailer: resp.Trailer}
}

// requestContext bounds a request of a loopback rig to 10 s, a guard
// against a hang; a memory rig's requests have no deadline (see
// rig.bubble).
func (r *rig) requestContext() (context.Context, context.CancelFunc) {
	if r.bubble {
		return context.WithCancel(context.Background())
	}
	return context.WithTimeout(context.Background(), 10*time.Second)
}

func retryPolicyAttempts(n int) retry.Policy { return retry.Policy{MaxAttempts: n} }

// newServer serves h on loopback until the test ends and returns its URL.
func newServer(t *testing.T, h http.Handler) string {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv.URL
}

var allowAll = retry.AllowAll()

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
