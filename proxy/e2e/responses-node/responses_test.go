//go:build proxye2e

package responsesnode

import (
	"context"
	"io"
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

// rig is the proxy, with the injected sleep, in front of a scripted
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
	h, err := proxy.New(proxy.Config{Provider: "openai", Upstream: r.up.URL, Policy: p})
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
	Text   string   `json:"text"`
	Events int      `json:"events"`
	ID     *string  `json:"id"`
	Status *string  `json:"status"`
	IDs    []string `json:"ids"`
	Seqs   []int64  `json:"seqs"`
	Parts  []string `json:"parts"`
	Finish *string  `json:"finish"`
	Error  *struct {
		Name    string `json:"name"`
		Status  *int   `json:"status"`
		Message string `json:"message"`
	} `json:"error"`
}

// node runs one call of client.mjs against the proxy.
func (r *rig) node(t *testing.T, mode string, env ...string) result {
	t.Helper()
	var res result
	nodetest.Run(t, nodeDir, r.url, 60*time.Second, env, &res, "client.mjs", mode)
	return res
}

const id = "resp_node1"

func textEvents() []string { return recoursetest.ResponsesEvents(id, "Hello", ", world", "!") }

var overloaded = recoursetest.JSON(503, recoursetest.OpenAIError("server_error", "", "overloaded"))

// R19.1: the SDK's streamed responses.create, with a 503 first and a cut
// before output: both recovered by the proxy, the text once.
func TestR19_1_NodeResponsesStream(t *testing.T) {
	evs := textEvents()
	r := newRig(t, overloaded, recoursetest.SSE(evs...).CutEvents(3), recoursetest.SSE(evs...))
	res := r.node(t, "openai-stream")
	require.Nil(t, res.Error)
	assert.Equal(t, "Hello, world!", res.Text)
	// The lifecycle events of the cut attempt were held and dropped by the
	// resend (R13.9): the SDK read the resent stream alone.
	assert.Equal(t, len(evs), res.Events)
	require.NotNil(t, res.Status)
	assert.Equal(t, "completed", *res.Status)
	assert.Equal(t, 3, r.up.Count())
	assert.Equal(t, int32(1), r.calls.Load(), "the SDK sent one request")
	assert.Equal(t, []time.Duration{100 * time.Millisecond, 200 * time.Millisecond}, r.sleeps())
}

// R19.9: the SDK's background stream, cut after output, is resumed inside
// the proxy: the SDK reads one stream, every event once, and sent one
// request.
func TestR19_9_NodeBackgroundStreamResumedInsideTheProxy(t *testing.T) {
	evs := textEvents()
	r := newRig(t, recoursetest.ResponsesBackground(id, evs...).CutEvents(6), recoursetest.ResponsesResume(id))
	res := r.node(t, "openai-background")
	require.Nil(t, res.Error)
	assert.Equal(t, "Hello, world!", res.Text)
	assert.Equal(t, len(evs), res.Events, "every event once: the proxy's comment lines are no events")
	require.NotNil(t, res.ID)
	assert.Equal(t, id, *res.ID)
	reqs := r.up.Requests()
	require.Len(t, reqs, 2)
	assert.Contains(t, string(reqs[0].Body), `"background":true`)
	assert.Equal(t, http.MethodGet, reqs[1].Method)
	assert.Equal(t, "starting_after=5&stream=true", reqs[1].RawQuery)
}

// firstAttempt returns the events of a first attempt that a resend
// replaces: another response id and another message item id.
func firstAttempt() []string {
	evs := recoursetest.ResponsesEvents("resp_first", "Hello")
	for i, ev := range evs {
		evs[i] = strings.ReplaceAll(ev, "msg_1", "msg_first")
	}
	return evs
}

// R13.9: the SDK's streamed responses.create, cut after its preamble
// (created, in_progress, output_item.added, content_part.added) and resent
// by the proxy, reads one preamble: one response id, sequence numbers
// 0, 1, 2, … once each.
func TestR13_9_NodeResponsesResendBeforeOutputShowsOnePreamble(t *testing.T) {
	evs := textEvents()
	r := newRig(t, recoursetest.SSE(firstAttempt()...).CutEvents(4), recoursetest.SSE(evs...))
	res := r.node(t, "openai-stream")
	require.Nil(t, res.Error, "%+v", res.Error)
	assert.Equal(t, "Hello, world!", res.Text)
	want := make([]int64, len(evs))
	for i := range want {
		want[i] = int64(i)
	}
	assert.Equal(t, want, res.Seqs, "sequence numbers never go back")
	require.NotEmpty(t, res.IDs)
	for _, got := range res.IDs {
		assert.Equal(t, id, got, "one response id")
	}
	assert.Equal(t, 2, r.up.Count())
}

// R13.9: the Vercel AI SDK's streamText on the Responses API, cut after
// the preamble and resent by the proxy: one text part (one text-start,
// one text-end, of the resent message item) and the resent response's id.
func TestR13_9_VercelAISDKResendBeforeOutputShowsOnePreamble(t *testing.T) {
	r := newRig(t, recoursetest.SSE(firstAttempt()...).CutEvents(4), recoursetest.SSE(textEvents()...))
	res := r.node(t, "ai-stream")
	require.Nil(t, res.Error, "%+v", res.Error)
	assert.Equal(t, "Hello, world!", res.Text)
	var text []string
	for _, p := range res.Parts {
		if strings.HasPrefix(p, "text-") {
			text = append(text, p)
		}
	}
	assert.Equal(t, []string{"text-start:msg_1", "text-end:msg_1"}, text, "parts: %v", res.Parts)
	require.NotNil(t, res.ID)
	assert.Equal(t, id, *res.ID)
	assert.Equal(t, 2, r.up.Count())
}

// R19.13: the SDK's responses.retrieve is retried on 503 by the proxy and
// gets the stored response as it is.
func TestR19_13_NodeRetrieveRetried(t *testing.T) {
	r := newRig(t, recoursetest.ResponsesBackground(id, textEvents()...), overloaded, recoursetest.ResponsesRetrieve(id))
	resp, err := http.Post(r.up.URL+"/v1/responses", "application/json", strings.NewReader(`{"background":true}`))
	require.NoError(t, err) // the create, straight to the upstream: its log
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	res := r.node(t, "openai-retrieve", "RESPONSE_ID="+id)
	require.Nil(t, res.Error)
	require.NotNil(t, res.Status)
	assert.Equal(t, "completed", *res.Status)
	assert.Equal(t, 3, r.up.Count())
	assert.Equal(t, int32(1), r.calls.Load(), "the SDK sent one request")
	assert.Equal(t, []time.Duration{100 * time.Millisecond}, r.sleeps())
}

// R19.3: the Vercel AI SDK's default openai(model) path streams from
// /v1/responses; a cut before output is resent by the proxy and the text
// arrives once.
func TestR19_3_VercelAISDKStream(t *testing.T) {
	evs := textEvents()
	r := newRig(t, recoursetest.SSE(evs...).CutEvents(2), recoursetest.SSE(evs...))
	res := r.node(t, "ai-stream")
	require.Nil(t, res.Error, "%+v", res.Error)
	assert.Equal(t, "Hello, world!", res.Text)
	reqs := r.up.Requests()
	require.Len(t, reqs, 2)
	assert.Equal(t, "/v1/responses", reqs[0].Path, "the default path is the Responses API")
	assert.Equal(t, reqs[0].Body, reqs[1].Body, "R2.3: byte-identical resend")
}

// R19.1: the Vercel AI SDK's generateText on the default path, a 503 first.
func TestR19_1_VercelAISDKGenerate(t *testing.T) {
	r := newRig(t, overloaded, recoursetest.JSON(200, recoursetest.ResponsesJSON(id, "Hello, world!")))
	res := r.node(t, "ai-generate")
	require.Nil(t, res.Error, "%+v", res.Error)
	assert.Equal(t, "Hello, world!", res.Text)
	assert.Equal(t, 2, r.up.Count())
	assert.Equal(t, int32(1), r.calls.Load(), "the proxy recovered: the SDK sent one request")
	assert.Equal(t, "/v1/responses", r.up.Requests()[1].Path)
}

// R19.14, R19.13: the SDK's unary background create is answered queued (a
// 503 before it resent), and its polls, one answered 503, are retried by
// the proxy until the response completed.
func TestR19_14_NodeBackgroundCreateThenPoll(t *testing.T) {
	queued := `{"id":"` + id + `","object":"response","created_at":1,"status":"queued","background":true,"model":"gpt-4.1-mini","output":[]}`
	r := newRig(t, overloaded, recoursetest.JSON(200, queued), overloaded, recoursetest.JSON(200, recoursetest.ResponsesJSON(id, "Done.")))
	res := r.node(t, "openai-poll")
	require.Nil(t, res.Error, "%+v", res.Error)
	require.NotNil(t, res.Status)
	assert.Equal(t, "completed", *res.Status)
	assert.Equal(t, "Done.", res.Text)
	assert.Equal(t, 1, res.Events, "one poll")
	assert.Equal(t, int32(2), r.calls.Load(), "the SDK sent the create and one poll")
	assert.Equal(t, 4, r.up.Count())
}

// R13.3: the official SDK's streamed chat.completions.create with
// max_tokens, answered with a length finish, the usage chunk and [DONE]:
// the SDK reads every chunk and the finish, no error, one request.
func TestR13_3_NodeChatLengthFinishPassesThrough(t *testing.T) {
	r := newRig(t, recoursetest.SSE(recoursetest.OpenAIStreamFinish("length", "Hel", "lo")...))
	res := r.node(t, "openai-chat-stream")
	require.Nil(t, res.Error, "%+v", res.Error)
	assert.Equal(t, "Hello", res.Text)
	require.NotNil(t, res.Finish)
	assert.Equal(t, "length", *res.Finish)
	assert.Equal(t, 5, res.Events, "role, two contents, finish, usage")
	assert.Equal(t, 1, r.up.Count())
	assert.Equal(t, int32(1), r.calls.Load())
}

// R13.3: the Vercel AI SDK's streamText on the chat completions model,
// answered with a length finish: text, finish reason "length", no error.
func TestR13_3_VercelAISDKChatLengthFinishPassesThrough(t *testing.T) {
	r := newRig(t, recoursetest.SSE(recoursetest.OpenAIStreamFinish("length", "Hel", "lo")...))
	res := r.node(t, "ai-chat-stream")
	require.Nil(t, res.Error, "%+v", res.Error)
	assert.Equal(t, "Hello", res.Text)
	require.NotNil(t, res.Finish)
	assert.Equal(t, "length", *res.Finish)
	assert.NotContains(t, res.Parts, "error")
	assert.Equal(t, 1, r.up.Count())
}

// R19.4: the official SDK's streamed responses.create answered with
// response.incomplete (max_output_tokens): every event, the response's
// status incomplete and its reason, no error, one request.
func TestR19_4_NodeResponsesIncompletePassesThrough(t *testing.T) {
	evs := recoursetest.ResponsesIncompleteEvents(id, "max_output_tokens", "Hello", ", world", "!")
	r := newRig(t, recoursetest.SSE(evs...))
	res := r.node(t, "openai-stream")
	require.Nil(t, res.Error, "%+v", res.Error)
	assert.Equal(t, "Hello, world!", res.Text)
	assert.Equal(t, len(evs), res.Events)
	require.NotNil(t, res.Status)
	assert.Equal(t, "incomplete", *res.Status)
	require.NotNil(t, res.Finish)
	assert.Equal(t, "max_output_tokens", *res.Finish)
	assert.Equal(t, 1, r.up.Count())
}

// R19.4: the Vercel AI SDK's streamText on the default Responses path,
// answered with response.incomplete: text, finish reason "length", no
// error.
func TestR19_4_VercelAISDKResponsesIncompletePassesThrough(t *testing.T) {
	r := newRig(t, recoursetest.SSE(recoursetest.ResponsesIncompleteEvents(id, "max_output_tokens", "Hello", ", world", "!")...))
	res := r.node(t, "ai-stream")
	require.Nil(t, res.Error, "%+v", res.Error)
	assert.Equal(t, "Hello, world!", res.Text)
	require.NotNil(t, res.Finish)
	assert.Equal(t, "length", *res.Finish)
	assert.NotContains(t, res.Parts, "error")
	assert.Equal(t, 1, r.up.Count())
}
