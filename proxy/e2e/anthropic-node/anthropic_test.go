//go:build proxye2e

package anthropicnode

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/recourse-dev/recourse/layers/retry"
	"github.com/recourse-dev/recourse/proxy"
	"github.com/recourse-dev/recourse/proxy/e2e/internal/nodetest"
	"github.com/recourse-dev/recourse/recoursetest"
)

// nodeDir is the temporary directory holding the clients, installed once.
var nodeDir string

func TestMain(m *testing.M) {
	nodetest.Main(m, &nodeDir, func() error { return goleak.Find() }, ".", "package.json", "package-lock.json", "client.mjs")
}

// rig is the anthropic proxy, with the injected sleep, in front of a
// scripted upstream.
type rig struct {
	up     *recoursetest.Server
	url    string
	calls  atomic.Int32 // requests the client sent to the proxy
	mu     sync.Mutex
	delays []time.Duration
}

func newRig(t *testing.T, steps ...recoursetest.Step) *rig {
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
	h, err := proxy.New(proxy.Config{Provider: "anthropic", Upstream: r.up.URL, Policy: p})
	require.NoError(t, err)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.calls.Add(1)
		h.ServeHTTP(w, req)
	}))
	t.Cleanup(srv.Close)
	r.url = srv.URL
	return r
}

// result is what client.mjs printed.
type result struct {
	Text   string `json:"text"`
	Events int    `json:"events"`
	Error  *struct {
		Name     string `json:"name"`
		Status   *int   `json:"status"`
		Attempts *int   `json:"attempts"` // the AI SDK's requests, from its RetryError
		Message  string `json:"message"`
	} `json:"error"`
}

// node runs one call of client.mjs against the proxy.
func (r *rig) node(t *testing.T, mode string) result {
	t.Helper()
	var res result
	nodeRun(t, r.url, mode, &res)
	return res
}

// nodeRun runs one call of client.mjs against the proxy at url.
func nodeRun(t *testing.T, url, mode string, res *result) {
	t.Helper()
	nodetest.Run(t, nodeDir, url, 60*time.Second, nil, res, "client.mjs", mode)
}

func events() []string { return recoursetest.AnthropicEvents("Hello", ", world", "!") }

func inBandOverload() recoursetest.Step {
	return recoursetest.AnthropicStream(append(recoursetest.AnthropicStart(), recoursetest.AnthropicErrorEvent("overloaded_error", "Overloaded"))...)
}

// R22.1, R22.2: every client, unary and streamed, through a 529 and an
// in-band overload before content: the text once, one request from the
// client, three upstream POSTs.
func TestR22_2_NodeClientsRecovered(t *testing.T) {
	for _, mode := range []string{"sdk-create", "sdk-stream", "ai-generate", "ai-stream", "langchain", "langchain-stream"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			answer := recoursetest.JSON(200, recoursetest.AnthropicMessage("Hello, world!"))
			steps := []recoursetest.Step{recoursetest.AnthropicOverloaded(), answer}
			if strings.HasSuffix(mode, "stream") {
				steps = []recoursetest.Step{recoursetest.AnthropicOverloaded(), inBandOverload(), recoursetest.AnthropicStream(events()...)}
			}
			r := newRig(t, steps...)
			res := r.node(t, mode)
			require.Nil(t, res.Error)
			assert.Equal(t, "Hello, world!", res.Text)
			assert.Equal(t, len(steps), r.up.Count())
			assert.Equal(t, int32(1), r.calls.Load(), "the client sent one request")
		})
	}
}

// R22.4: a stream cut after content reaches every streaming client as its
// own error, never a silent success; nothing is resent.
func TestR22_4_NodeCutAfterContentIsAnError(t *testing.T) {
	for _, mode := range []string{"sdk-stream", "ai-stream", "langchain-stream"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			r := newRig(t, recoursetest.AnthropicStream(events()...).CutEvents(4), recoursetest.AnthropicStream(events()...))
			res := r.node(t, mode)
			require.NotNil(t, res.Error, "text %q", res.Text)
			assert.NotContains(t, res.Error.Message, "sk-ant-e2e-test")
			assert.Equal(t, 1, r.up.Count())
		})
	}
}

// R22.1: an exhausted call is the provider's 529 marked
// x-should-retry: false: the official SDK, at its default retries, does
// not retry on top, and reports the status.
func TestR22_1_NodeSDKExhaustedIsNotRetriedOnTop(t *testing.T) {
	o := recoursetest.AnthropicOverloaded()
	r := newRig(t, o, o, o, o)
	res := r.node(t, "sdk-create")
	require.NotNil(t, res.Error)
	require.NotNil(t, res.Error.Status)
	assert.Equal(t, 529, *res.Error.Status)
	assert.Equal(t, int32(1), r.calls.Load(), "x-should-retry: false stops the SDK's retries")
	assert.Equal(t, 4, r.up.Count())
}

// R21.3 on Claude's wire: the Vercel AI SDK, at its default retries
// (three requests; it reads no x-should-retry), through an upstream that
// answers 529 every time: the SDK ends with its RetryError carrying the
// 529, and its two repeats are answered from the proxy's memory, so the
// upstream sees only the proxy's own attempts.
func TestR22_9_AISDKExhaustedIsAnsweredFromMemory(t *testing.T) {
	const attempts = 4 // retry.Recommended's MaxAttempts, as newRig sets it
	steps := make([]recoursetest.Step, 3*attempts)
	for i := range steps {
		steps[i] = recoursetest.AnthropicOverloaded()
	}
	r := newRig(t, steps...)
	res := r.node(t, "ai-generate")
	require.NotNil(t, res.Error, "text %q", res.Text)
	assert.Equal(t, "RetryError", res.Error.Name)
	require.NotNil(t, res.Error.Status, "%+v", res.Error)
	assert.Equal(t, 529, *res.Error.Status)
	require.NotNil(t, res.Error.Attempts, "%+v", res.Error)
	assert.Equal(t, 3, *res.Error.Attempts, "the AI SDK's default: three requests")
	assert.Equal(t, int32(3), r.calls.Load(), "the SDK's requests reached the proxy")
	assert.Equal(t, attempts, r.up.Count(), "the upstream saw the proxy's attempts only")
	assert.NotContains(t, res.Error.Message, "sk-ant-e2e-test")
}
