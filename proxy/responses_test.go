package proxy

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/recourse-dev/recourse/recoursetest"
)

const (
	respID         = "resp_proxy1"
	backgroundBody = `{"model":"gpt-4.1-mini","input":"hello","stream":true,"background":true,"store":true}`
)

func respEvents() []string { return recoursetest.ResponsesEvents(respID, "Hello", ", world", "!") }

// events returns the SSE events of body without the proxy's comment lines.
func events(body string) string {
	var b strings.Builder
	for _, line := range strings.SplitAfter(body, "\n") {
		if !strings.HasPrefix(line, ":") {
			b.WriteString(line)
		}
	}
	return b.String()
}

// createUpstream sends the background create to the upstream directly, not
// through the proxy, so that its event log exists.
func createUpstream(t *testing.T, r *rig) {
	t.Helper()
	resp, err := http.Post(r.up.URL+"/v1/responses", "application/json", strings.NewReader(backgroundBody))
	require.NoError(t, err)
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
}

// R19.9: the proxy resumes a background stream itself: the client sees one
// stream, every event once, and the upstream saw one create and one read.
func TestR19_9_ProxyResumesABackgroundStreamInside(t *testing.T) {
	evs := respEvents()
	r := newRig(t, "openai", nil,
		recoursetest.ResponsesBackground(respID, evs...).CutEvents(6), recoursetest.ResponsesResume(respID))
	got := r.post(t, "/v1/responses", backgroundBody, "Authorization", "Bearer sk-test")
	require.NoError(t, got.err)
	assert.Equal(t, http.StatusOK, got.status)
	assert.Equal(t, strings.Join(evs, ""), events(got.body), "one continuous stream")
	assert.Contains(t, got.body, ": resuming after transport error from event 5 (attempt 2/4 in 100ms)\n")
	reqs := r.up.Requests()
	require.Len(t, reqs, 2)
	assert.Equal(t, "/v1/responses", reqs[0].Path)
	assert.Equal(t, http.MethodGet, reqs[1].Method)
	assert.Equal(t, "/v1/responses/"+respID, reqs[1].Path)
	assert.Equal(t, "starting_after=5&stream=true", reqs[1].RawQuery)
	assert.Equal(t, "Bearer sk-test", reqs[1].Header.Get("Authorization"))
	r.logged(t, `"kind":"completion"`)
	assert.NotContains(t, r.logs.String(), "sk-test")
}

// R19.1: a foreground stream on /v1/responses follows the chat rules: a cut
// before output is resent, after output it ends with an in-band error.
func TestR19_1_ProxyForegroundResponsesStream(t *testing.T) {
	evs := respEvents()
	fg := `{"model":"gpt-4.1-mini","input":"hello","stream":true}`
	r := newRig(t, "openai", nil, recoursetest.SSE(evs...).CutEvents(3), recoursetest.SSE(evs...))
	got := r.post(t, "/v1/responses", fg)
	require.NoError(t, got.err)
	assert.Equal(t, 1, strings.Count(events(got.body), `"delta":"Hello"`))
	assert.Equal(t, 2, r.up.Count())
	assert.Equal(t, http.MethodPost, r.up.Requests()[1].Method, "resent")

	r = newRig(t, "openai", nil, recoursetest.SSE(evs...).CutEvents(6))
	got = r.post(t, "/v1/responses", fg)
	require.Error(t, got.err, "the client's read fails too")
	assert.Contains(t, got.body, "event: error\n")
	assert.Equal(t, 1, r.up.Count())
}

// R19.13: a retrieve through the proxy is retried on 503 and its body, a
// response in progress, reaches the client as the provider sent it.
func TestR19_13_ProxyRetriesRetrieve(t *testing.T) {
	r := newRig(t, "openai", nil,
		recoursetest.ResponsesBackground(respID, respEvents()[:5]...),
		recoursetest.JSON(503, recoursetest.OpenAIError("server_error", "", "busy")),
		recoursetest.ResponsesRetrieve(respID))
	createUpstream(t, r)
	got := r.do(t, http.MethodGet, "/v1/responses/"+respID, "")
	require.NoError(t, got.err)
	assert.Equal(t, http.StatusOK, got.status)
	assert.Contains(t, got.body, `"status":"in_progress"`)
	assert.Equal(t, 3, r.up.Count())
	assert.Equal(t, []time.Duration{100 * time.Millisecond}, r.sleeps.all())
}

// R19.13: a cancel is forwarded once, as it is.
func TestR19_13_ProxyForwardsCancel(t *testing.T) {
	r := newRig(t, "openai", nil,
		recoursetest.ResponsesBackground(respID, respEvents()[:5]...), recoursetest.ResponsesCancel(respID))
	createUpstream(t, r)
	got := r.post(t, "/v1/responses/"+respID+"/cancel", "")
	require.NoError(t, got.err)
	assert.Equal(t, http.StatusOK, got.status)
	assert.Contains(t, got.body, `"status":"cancelled"`)
	assert.True(t, r.up.Cancelled(respID))
	r.logged(t, `"kind":"forward"`)
}

// R19.11: a background create cut before response.created may have been
// queued: with the default (no admission, -admit deny) it is not resent.
func TestR19_11_ProxyAmbiguousBeforeIDIsNotResent(t *testing.T) {
	r := newRig(t, "openai", nil,
		recoursetest.ResponsesBackground(respID, respEvents()...).CutEvents(0), recoursetest.ResponsesBackground(respID, respEvents()...))
	got := r.post(t, "/v1/responses", backgroundBody)
	require.Error(t, got.err)
	assert.Equal(t, 1, r.up.Count())
	r.logged(t, `"outcome":"admission_required"`)

	r = newRig(t, "openai", func(c *Config) { c.Policy.Admit = allowAll },
		recoursetest.ResponsesBackground(respID, respEvents()...).CutEvents(0), recoursetest.ResponsesBackground(respID, respEvents()...))
	got = r.post(t, "/v1/responses", backgroundBody)
	require.NoError(t, got.err)
	assert.Equal(t, strings.Join(respEvents(), ""), events(got.body))
	assert.Equal(t, 2, r.up.Count())
}

// R19.12: a client that goes away from a background stream the proxy
// started has the response cancelled upstream.
func TestR19_12_ProxyClientGoneCancelsTheBackgroundResponse(t *testing.T) {
	r := newRig(t, "openai", nil,
		recoursetest.ResponsesBackground(respID, respEvents()[:5]...).Held(), recoursetest.ResponsesCancel(respID))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, r.proxy.URL+"/v1/responses", strings.NewReader(backgroundBody))
	require.NoError(t, err)
	resp, err := r.client.Do(req)
	require.NoError(t, err)
	line, err := bufio.NewReader(resp.Body).ReadString('\n')
	require.NoError(t, err)
	assert.Equal(t, "event: response.created\n", line)
	cancel()
	resp.Body.Close()
	require.Eventually(t, func() bool { return r.up.Cancelled(respID) }, 10*time.Second, time.Millisecond)
	reqs := r.up.Requests()
	assert.Equal(t, "/v1/responses/"+respID+"/cancel", reqs[len(reqs)-1].Path)
}

// R19.15: a background stream whose resume reads run out is cancelled
// upstream by the proxy, with the client's credential, once.
func TestR19_15_ProxyCancelsABackgroundResponseItGivesUpOn(t *testing.T) {
	busy := recoursetest.JSON(503, recoursetest.OpenAIError("server_error", "", "busy"))
	r := newRig(t, "openai", nil,
		recoursetest.ResponsesBackground(respID, respEvents()...).CutEvents(6), busy, busy, busy, recoursetest.ResponsesCancel(respID))
	got := r.post(t, "/v1/responses", backgroundBody, "Authorization", "Bearer sk-test")
	require.Error(t, got.err, "the client's read fails")
	require.Eventually(t, func() bool { return r.up.Cancelled(respID) }, 10*time.Second, time.Millisecond)
	reqs := r.up.Requests()
	require.Len(t, reqs, 5)
	assert.Equal(t, http.MethodPost, reqs[4].Method)
	assert.Equal(t, "/v1/responses/"+respID+"/cancel", reqs[4].Path)
	assert.Equal(t, "Bearer sk-test", reqs[4].Header.Get("Authorization"))
	assert.NotContains(t, r.logs.String(), "sk-test")
}
