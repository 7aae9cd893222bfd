package proxyopenaigo

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/recourse-dev/recourse/layers/retry"
	"github.com/recourse-dev/recourse/proxy"
	"github.com/recourse-dev/recourse/recoursetest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// rig is the proxy, with an injected sleep, in front of a scripted
// provider, and an openai-go client whose base URL is the proxy.
type rig struct {
	up     *recoursetest.Server
	client openai.Client
	posts  atomic.Int32
	mu     sync.Mutex
	delays []time.Duration
}

func newRig(t *testing.T, commitAfter time.Duration, steps ...recoursetest.Step) *rig {
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
	h, err := proxy.New(proxy.Config{Provider: "openai", Upstream: r.up.URL, Policy: p, StreamCommitAfter: commitAfter})
	require.NoError(t, err)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.posts.Add(1)
		h.ServeHTTP(w, req)
	}))
	t.Cleanup(srv.Close)
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	// openai-go keeps its default of two retries: the proxy's
	// X-Should-Retry: false must stop them.
	r.client = openai.NewClient(option.WithBaseURL(srv.URL+"/v1/"), option.WithAPIKey("sk-test"),
		option.WithHTTPClient(&http.Client{Transport: tr}))
	return r
}

var params = openai.ChatCompletionNewParams{
	Model:    "gpt-4o-mini",
	Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hello")},
}

func (r *rig) stream(t *testing.T) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	st := r.client.Chat.Completions.NewStreaming(ctx, params)
	defer st.Close()
	var b strings.Builder
	for st.Next() {
		for _, c := range st.Current().Choices {
			b.WriteString(c.Delta.Content)
		}
	}
	return b.String(), st.Err()
}

var overloaded = recoursetest.JSON(503, recoursetest.OpenAIError("server_error", "", "overloaded"))

func TestUnaryRecovered(t *testing.T) {
	r := newRig(t, 0, overloaded, recoursetest.JSON(200, recoursetest.OpenAIChat("Hello")))
	res, err := r.client.Chat.Completions.New(context.Background(), params)
	require.NoError(t, err)
	assert.Equal(t, "Hello", res.Choices[0].Message.Content)
	assert.Equal(t, 2, r.up.Count())
	assert.Equal(t, int32(1), r.posts.Load())
	assert.Equal(t, "/v1/chat/completions", r.up.Requests()[0].Path)
}

func TestStreamCutBeforeContentRecovered(t *testing.T) {
	events := recoursetest.OpenAIStream("Hel", "lo")
	r := newRig(t, 0, recoursetest.SSE(events...).Cut(10), recoursetest.SSE(events...))
	content, err := r.stream(t)
	require.NoError(t, err)
	assert.Equal(t, "Hello", content)
	assert.Equal(t, 2, r.up.Count())
}

func TestStreamCutAfterContentIsAnError(t *testing.T) {
	events := recoursetest.OpenAIStream("Hel", "lo")
	r := newRig(t, 0, recoursetest.SSE(events...).Cut(len(events[0])+len(events[1])+5))
	content, err := r.stream(t)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "recourse: recovery interrupted")
	assert.Equal(t, "Hel", content)
}

func TestExhaustedIsTheSDKsError(t *testing.T) {
	r := newRig(t, 0, overloaded, overloaded, overloaded, overloaded)
	_, err := r.client.Chat.Completions.New(context.Background(), params)
	var apiErr *openai.Error
	require.True(t, errors.As(err, &apiErr), "%v", err)
	assert.Equal(t, 503, apiErr.StatusCode)
	assert.Equal(t, "overloaded", apiErr.Message)
	assert.Equal(t, "exhausted", apiErr.Response.Header.Get("X-Recourse-Outcome"))
	assert.Equal(t, int32(1), r.posts.Load(), "openai-go's own retries did not fire")
	assert.Equal(t, 4, r.up.Count())
}

func TestRedirectRefused(t *testing.T) {
	target := recoursetest.NewTarget()
	defer target.Close()
	r := newRig(t, 0, recoursetest.Redirect(307, target.URL+"/v1/chat/completions"))
	_, err := r.client.Chat.Completions.New(context.Background(), params)
	var apiErr *openai.Error
	require.True(t, errors.As(err, &apiErr), "%v", err)
	assert.Equal(t, 502, apiErr.StatusCode)
	assert.Equal(t, "redirect_refused", apiErr.Code)
	assert.Zero(t, target.Hits())
	assert.Equal(t, int32(1), r.posts.Load())
}

func TestRetryNoticesAreIgnored(t *testing.T) {
	events := recoursetest.OpenAIStream("Hel", "lo")
	r := newRig(t, time.Nanosecond, overloaded, overloaded, recoursetest.SSE(events...))
	content, err := r.stream(t)
	require.NoError(t, err)
	assert.Equal(t, "Hello", content, "openai-go skips the SSE comment lines")
	r.mu.Lock()
	defer r.mu.Unlock()
	assert.Equal(t, []time.Duration{100 * time.Millisecond, 200 * time.Millisecond}, r.delays)
}
