//go:build proxye2e

package e2e

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/recourse-dev/recourse/layers/quota"
	"github.com/recourse-dev/recourse/layers/retry"
	"github.com/recourse-dev/recourse/proxy"
	"github.com/recourse-dev/recourse/proxy/e2e/internal/nodetest"
	"github.com/recourse-dev/recourse/recoursetest"
)

// nodeDir is the temporary directory holding the SDK, installed once.
var nodeDir string

func TestMain(m *testing.M) {
	nodetest.Main(m, &nodeDir, func() error { return goleak.Find() }, "node", "package.json", "package-lock.json", "client.mjs", "ai-sdk.mjs", "langchain.mjs")
}

// rig is the proxy, with the injected sleep, in front of a scripted
// upstream; it counts the completion POSTs the client sent.
type rig struct {
	up     *recoursetest.Server
	url    string
	posts  atomic.Int32
	mu     sync.Mutex
	delays []time.Duration
}

func newRig(t *testing.T, provider string, edit func(*proxy.Config), steps ...recoursetest.Step) *rig {
	t.Helper()
	r := &rig{up: recoursetest.NewServer(steps...)}
	t.Cleanup(r.up.Close)
	p := retry.Recommended()
	p.Jitter = func() float64 { return 1 }
	p.Sleep = func(ctx context.Context, d time.Duration) error {
		r.mu.Lock()
		r.delays = append(r.delays, d)
		r.mu.Unlock()
		return ctx.Err()
	}
	cfg := proxy.Config{Provider: provider, Upstream: r.up.URL, Policy: p}
	if edit != nil {
		edit(&cfg)
	}
	h, err := proxy.New(cfg)
	require.NoError(t, err)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.Method == http.MethodPost {
			r.posts.Add(1)
		}
		h.ServeHTTP(w, req)
	}))
	t.Cleanup(srv.Close)
	r.url = srv.URL
	return r
}

func (r *rig) sleeps() []time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]time.Duration(nil), r.delays...)
}

// sdkResult is what client.mjs printed.
type sdkResult struct {
	Content string `json:"content"`
	Chunks  int    `json:"chunks"`
	Error   *struct {
		Name     string `json:"name"`
		Status   *int   `json:"status"`
		APIError bool   `json:"apiError"`
		Message  string `json:"message"`
	} `json:"error"`
}

// sdk runs one call of the OpenAI Node SDK against the proxy.
func (r *rig) sdk(t *testing.T, mode string) sdkResult {
	t.Helper()
	var res sdkResult
	nodetest.Run(t, nodeDir, r.url, 60*time.Second, nil, &res, "client.mjs", mode)
	return res
}

var (
	overloaded = recoursetest.JSON(503, recoursetest.OpenAIError("server_error", "", "overloaded"))
	events     = recoursetest.OpenAIStream("Hel", "lo")
)

func TestNodeUnary(t *testing.T) {
	r := newRig(t, "openai", nil, recoursetest.JSON(200, recoursetest.OpenAIChat("Hello")))
	res := r.sdk(t, "unary")
	require.Nil(t, res.Error)
	assert.Equal(t, "Hello", res.Content)
	assert.Equal(t, 1, r.up.Count())
}

func TestNodeStream(t *testing.T) {
	r := newRig(t, "openai", nil, recoursetest.SSE(append([]string{": keepalive\n\n"}, events...)...))
	res := r.sdk(t, "stream")
	require.Nil(t, res.Error)
	assert.Equal(t, "Hello", res.Content)
	assert.Equal(t, 5, res.Chunks, "role, two deltas, finish, usage: the keepalive is no chunk")
}

func TestNode503Then200(t *testing.T) {
	for _, mode := range []string{"unary", "stream"} {
		t.Run(mode, func(t *testing.T) {
			ok := recoursetest.JSON(200, recoursetest.OpenAIChat("Hello"))
			if mode == "stream" {
				ok = recoursetest.SSE(events...)
			}
			r := newRig(t, "openai", nil, overloaded, ok)
			res := r.sdk(t, mode)
			require.Nil(t, res.Error)
			assert.Equal(t, "Hello", res.Content)
			assert.Equal(t, 2, r.up.Count())
			assert.Equal(t, int32(1), r.posts.Load(), "the SDK sent one request")
			assert.Equal(t, []time.Duration{100 * time.Millisecond}, r.sleeps())
		})
	}
}

func TestNode429WithRetryAfter(t *testing.T) {
	r := newRig(t, "openai", nil,
		recoursetest.JSON(429, recoursetest.OpenAIError("rate_limit_error", "rate_limit_exceeded", "slow down"), "Retry-After", "3"),
		recoursetest.JSON(200, recoursetest.OpenAIChat("Hello")))
	res := r.sdk(t, "unary")
	require.Nil(t, res.Error)
	assert.Equal(t, "Hello", res.Content)
	assert.Equal(t, []time.Duration{3 * time.Second}, r.sleeps(), "the proxy waited the Retry-After")
	assert.Equal(t, int32(1), r.posts.Load())
}

func TestNodeStreamCutBeforeContent(t *testing.T) {
	r := newRig(t, "openai", nil, recoursetest.SSE(events...).Cut(len(events[0])/2), recoursetest.SSE(events...))
	res := r.sdk(t, "stream")
	require.Nil(t, res.Error)
	assert.Equal(t, "Hello", res.Content, "recovered, no duplicated text")
	assert.Equal(t, 2, r.up.Count())
	assert.Equal(t, int32(1), r.posts.Load())
}

func TestNodeStreamCutAfterContent(t *testing.T) {
	r := newRig(t, "openai", nil, recoursetest.SSE(events...).Cut(len(events[0])+len(events[1])+5))
	res := r.sdk(t, "stream")
	require.NotNil(t, res.Error, "an error in the SDK, never a silent end")
	assert.Equal(t, "APIError", res.Error.Name)
	assert.True(t, res.Error.APIError)
	assert.Contains(t, res.Error.Message, "recourse: recovery interrupted")
	assert.Equal(t, "Hel", res.Content)
	assert.Equal(t, 1, r.up.Count())
	assert.Equal(t, int32(1), r.posts.Load())
}

func TestNodeBadRequest(t *testing.T) {
	r := newRig(t, "openai", nil, recoursetest.JSON(400, recoursetest.OpenAIError("invalid_request_error", "invalid_value", "bad model")))
	res := r.sdk(t, "unary")
	require.NotNil(t, res.Error)
	assert.Equal(t, "BadRequestError", res.Error.Name)
	require.NotNil(t, res.Error.Status)
	assert.Equal(t, 400, *res.Error.Status)
	assert.Contains(t, res.Error.Message, "bad model", "the provider's own error reaches the SDK")
	assert.Equal(t, 1, r.up.Count())
}

func TestNodeExhausted(t *testing.T) {
	for _, mode := range []string{"unary", "stream"} {
		t.Run(mode, func(t *testing.T) {
			r := newRig(t, "openai", nil, overloaded, overloaded, overloaded, overloaded)
			res := r.sdk(t, mode)
			require.NotNil(t, res.Error)
			assert.Equal(t, "InternalServerError", res.Error.Name, "the SDK's own error for a 5xx")
			require.NotNil(t, res.Error.Status)
			assert.Equal(t, 503, *res.Error.Status)
			assert.Contains(t, res.Error.Message, "overloaded")
			assert.Equal(t, int32(1), r.posts.Load(), "the SDK's default retries did not fire")
			assert.Equal(t, 4, r.up.Count(), "exactly MaxAttempts POSTs upstream")
		})
	}
}

// TestNodeQuotaExhausted: with a quota of one resend a window, the SDK
// gets its own error for the final 503, after one request of its own.
func TestNodeQuotaExhausted(t *testing.T) {
	q, err := quota.New(quota.WithStore(quota.NewMemoryStore()), quota.WithRatio(0), quota.WithFloor(1))
	require.NoError(t, err)
	r := newRig(t, "openai", func(c *proxy.Config) { c.Quota = q }, overloaded, overloaded, overloaded)
	res := r.sdk(t, "unary")
	require.NotNil(t, res.Error)
	assert.Equal(t, "InternalServerError", res.Error.Name)
	require.NotNil(t, res.Error.Status)
	assert.Equal(t, 503, *res.Error.Status)
	assert.Equal(t, int32(1), r.posts.Load(), "X-Should-Retry: false stopped the SDK's retries")
	assert.Equal(t, 2, r.up.Count(), "one resend, then the quota refused")
}

// TestNodeClientRetryIsChargedAsAResend: the SDK times out on a slow answer
// and retries on its own (X-Stainless-Retry-Count: 1); with no resend left
// in the quota the proxy answers that retry 503 quota_exhausted without
// contacting the upstream. The SDK's timeout is real time (1 s).
func TestNodeClientRetryIsChargedAsAResend(t *testing.T) {
	q, err := quota.New(quota.WithStore(quota.NewMemoryStore()), quota.WithRatio(0), quota.WithFloor(0))
	require.NoError(t, err)
	gate := make(chan struct{})
	defer close(gate)
	r := newRig(t, "openai", func(c *proxy.Config) { c.Quota = q },
		recoursetest.JSON(200, recoursetest.OpenAIChat("too late")).Gated(-1, gate))
	res := r.sdk(t, "timeout-retry")
	require.NotNil(t, res.Error)
	require.NotNil(t, res.Error.Status, res.Error.Message)
	assert.Equal(t, 503, *res.Error.Status)
	assert.Contains(t, res.Error.Message, "client retry")
	assert.Equal(t, int32(2), r.posts.Load(), "the SDK's first request and its own retry")
	assert.Equal(t, 1, r.up.Count(), "the retry never reached the upstream")
}

func TestNodeRedirect(t *testing.T) {
	target := recoursetest.NewTarget()
	defer target.Close()
	r := newRig(t, "openai", nil, recoursetest.Redirect(307, target.URL+"/v1/chat/completions"))
	res := r.sdk(t, "unary")
	require.NotNil(t, res.Error)
	require.NotNil(t, res.Error.Status)
	assert.Equal(t, 502, *res.Error.Status)
	assert.Contains(t, res.Error.Message, "a redirect: refused")
	assert.Zero(t, target.Hits(), "the redirect target is never contacted, by the proxy or by the SDK")
	assert.Equal(t, int32(1), r.posts.Load())
	assert.Equal(t, 1, r.up.Count())
}

func TestNodeIgnoresRetryNotices(t *testing.T) {
	r := newRig(t, "openai", func(c *proxy.Config) { c.StreamCommitAfter = time.Nanosecond },
		overloaded, overloaded, recoursetest.SSE(events...))
	res := r.sdk(t, "stream")
	require.Nil(t, res.Error)
	assert.Equal(t, "Hello", res.Content)

	// Committed, then exhausted: the in-band error is the SDK's APIError.
	r = newRig(t, "openai", func(c *proxy.Config) { c.StreamCommitAfter = time.Nanosecond },
		overloaded, overloaded, overloaded, overloaded)
	res = r.sdk(t, "stream")
	require.NotNil(t, res.Error)
	assert.Equal(t, "APIError", res.Error.Name)
	assert.Contains(t, res.Error.Message, "recourse: recovery exhausted")
	assert.Equal(t, int32(1), r.posts.Load())
	assert.Equal(t, 4, r.up.Count())
}

// curl against the Ollama endpoint.
func curl(t *testing.T, url, body string) (string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "curl", "-sS", "-N", "-X", "POST", "-H", "Content-Type: application/json", "--data-binary", body, url)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else {
		require.NoError(t, err)
	}
	return string(out), code
}

func TestCurlOllama(t *testing.T) {
	allow := func(c *proxy.Config) { c.Policy.Admit = retry.AllowAll() }
	lines := recoursetest.OllamaStream("Hel", "lo")
	body := `{"model":"llama3.2","messages":[{"role":"user","content":"hello"}]}`

	r := newRig(t, "ollama", allow, recoursetest.JSON(503, recoursetest.OllamaError("busy")), recoursetest.NDJSON(lines...))
	out, code := curl(t, r.url+"/api/chat", body)
	assert.Zero(t, code)
	assert.Equal(t, strings.Join(lines, ""), out, "503 then the stream, byte for byte")
	assert.Equal(t, 2, r.up.Count())

	r = newRig(t, "ollama", nil, recoursetest.JSON(503, recoursetest.OllamaError("busy")))
	out, code = curl(t, r.url+"/api/chat", body)
	assert.Zero(t, code)
	assert.Equal(t, recoursetest.OllamaError("busy"), out, "without -admit allow the failure passes through")
	assert.Equal(t, 1, r.up.Count())

	r = newRig(t, "ollama", allow, recoursetest.NDJSON(lines...).Cut(len(lines[0])+4))
	out, code = curl(t, r.url+"/api/chat", body)
	assert.Equal(t, 18, code, "curl reports the transfer closed with data outstanding")
	got := strings.SplitAfter(out, "\n")
	require.Len(t, got, 3, out)
	assert.Equal(t, lines[0], got[0])
	assert.True(t, strings.HasPrefix(got[1], `{"error":"recourse: recovery interrupted`), got[1])
}
