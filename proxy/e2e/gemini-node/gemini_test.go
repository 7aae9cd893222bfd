//go:build proxye2e

package gemininode

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

// rig is the Gemini proxy, with the injected sleep, in front of a scripted
// upstream.
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
	h, err := proxy.New(proxy.Config{Provider: "gemini", Upstream: r.up.URL, Policy: p})
	require.NoError(t, err)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.calls.Add(1)
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

var overloaded = recoursetest.JSON(503, recoursetest.GeminiError(503, "UNAVAILABLE", "The model is overloaded."))

func inBand503() recoursetest.Step {
	return recoursetest.SSE(recoursetest.GeminiEvent(recoursetest.GeminiError(503, "UNAVAILABLE", "The model is overloaded.")))
}

// R23.8: @google/genai's generateContent, a 429 whose wait is in its body
// first: the proxy waits that long and the SDK sent one request.
func TestR23_8_GenAIGenerateAfterA429WithItsWaitInTheBody(t *testing.T) {
	r := newRig(t, recoursetest.GeminiRateLimit("3s", "GenerateRequestsPerMinutePerProjectPerModel-FreeTier"),
		recoursetest.JSON(200, recoursetest.GeminiChat("Hello, world!")))
	res := r.node(t, "genai-generate")
	require.Nil(t, res.Error, "%+v", res.Error)
	assert.Equal(t, "Hello, world!", res.Text)
	assert.Equal(t, 2, r.up.Count())
	assert.Equal(t, int32(1), r.calls.Load(), "the SDK sent one request")
	assert.Equal(t, []time.Duration{3 * time.Second}, r.sleeps())
	assert.Equal(t, "/v1beta/models/gemini-2.5-flash:generateContent", r.up.Requests()[1].Path)
}

// R23.8, R23.3: @google/genai's stream, a 503 and an in-band 503 before
// output first: the text arrives once.
func TestR23_8_GenAIStreamRecovered(t *testing.T) {
	r := newRig(t, overloaded, inBand503(), recoursetest.SSE(recoursetest.GeminiStream("Hello", ", world", "!")...))
	res := r.node(t, "genai-stream")
	require.Nil(t, res.Error, "%+v", res.Error)
	assert.Equal(t, "Hello, world!", res.Text)
	assert.Equal(t, 3, r.up.Count())
	assert.Equal(t, int32(1), r.calls.Load(), "the SDK sent one request")
	for _, q := range r.up.Requests() {
		assert.Equal(t, "alt=sse", q.RawQuery)
	}
}

// R23.3: after output, an in-band error is never resent: the SDK reads the
// output and fails.
func TestR23_3_GenAIStreamErrorAfterOutputIsTheSDKs(t *testing.T) {
	first := strings.Replace(recoursetest.GeminiStream("Hello")[0], `,"finishReason":"STOP"`, "", 1)
	r := newRig(t, recoursetest.SSE(first, recoursetest.GeminiEvent(recoursetest.GeminiError(503, "UNAVAILABLE", "overloaded"))),
		recoursetest.SSE(recoursetest.GeminiStream("never")...))
	res := r.node(t, "genai-stream")
	require.NotNil(t, res.Error)
	assert.Equal(t, "Hello", res.Text)
	assert.Equal(t, 1, r.up.Count())
}

// R23.8: the Vercel AI SDK's google(model), both calls, a 503 first.
func TestR23_8_VercelAISDKGoogle(t *testing.T) {
	r := newRig(t, overloaded, recoursetest.JSON(200, recoursetest.GeminiChat("Hello, world!")))
	res := r.node(t, "ai-generate")
	require.Nil(t, res.Error, "%+v", res.Error)
	assert.Equal(t, "Hello, world!", res.Text)
	assert.Equal(t, 2, r.up.Count())
	assert.Equal(t, int32(1), r.calls.Load())

	r = newRig(t, inBand503(), recoursetest.SSE(recoursetest.GeminiStream("Hello", ", world", "!")...))
	res = r.node(t, "ai-stream")
	require.Nil(t, res.Error, "%+v", res.Error)
	assert.Equal(t, "Hello, world!", res.Text)
	assert.Equal(t, 2, r.up.Count())
	reqs := r.up.Requests()
	assert.Equal(t, "/v1beta/models/gemini-2.5-flash:streamGenerateContent", reqs[0].Path)
	assert.Equal(t, reqs[0].Body, reqs[1].Body, "R2.3: byte-identical resend")
}

// R21.3 on Gemini's wire: the Vercel AI SDK's google(model), at its
// default retries (three requests; it reads no x-should-retry), through an
// upstream that answers 503 UNAVAILABLE every time: the SDK ends with its
// RetryError carrying the 503, and its two repeats of the model-in-path
// request are answered from the proxy's memory, so the upstream sees only
// the proxy's own attempts.
func TestR23_8_AISDKExhaustedIsAnsweredFromMemory(t *testing.T) {
	const attempts = 4 // retry.Recommended's MaxAttempts, as newRig sets it
	steps := make([]recoursetest.Step, 3*attempts)
	for i := range steps {
		steps[i] = overloaded
	}
	r := newRig(t, steps...)
	res := r.node(t, "ai-generate")
	require.NotNil(t, res.Error, "text %q", res.Text)
	assert.Equal(t, "RetryError", res.Error.Name)
	require.NotNil(t, res.Error.Status, "%+v", res.Error)
	assert.Equal(t, 503, *res.Error.Status)
	require.NotNil(t, res.Error.Attempts, "%+v", res.Error)
	assert.Equal(t, 3, *res.Error.Attempts, "the AI SDK's default: three requests")
	assert.Equal(t, int32(3), r.calls.Load(), "the SDK's requests reached the proxy")
	assert.Equal(t, attempts, r.up.Count(), "the upstream saw the proxy's attempts only")
	for _, q := range r.up.Requests() {
		assert.Equal(t, "/v1beta/models/gemini-2.5-flash:generateContent", q.Path)
	}
	assert.NotContains(t, res.Error.Message, "e2e-test-key")
}
