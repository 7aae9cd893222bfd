package proxy

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/recourse-dev/recourse/recoursetest"
)

// R13.9: a stream resent before output reaches the proxy's client with
// one preamble, committed early or not: a chat stream whose role chunk was
// cut gets the retry notices (comment lines) and the resent stream alone;
// a Responses stream cut after its preamble gets the notice and the
// resent stream alone.
func TestR13_9_ProxyStreamResentBeforeOutputShowsOnePreamble(t *testing.T) {
	t.Run("chat_committed_early", func(t *testing.T) {
		events := recoursetest.OpenAIStream("Hel", "lo")
		first := strings.Replace(events[0], recoursetest.OpenAIID, "chatcmpl-first", 1)
		r := newRig(t, "openai", commitNow,
			recoursetest.JSON(503, recoursetest.OpenAIError("server_error", "", "overloaded")),
			recoursetest.SSE(first).CutEvents(1),
			recoursetest.SSE(events...))
		got := r.post(t, "/v1/chat/completions", streamBody)
		require.NoError(t, got.err)
		assert.Equal(t, 200, got.status)
		want := ": retrying after HTTP 503 (attempt 2/4 in 100ms)\n" + strings.Join(events, "")
		notice := ": retrying after transport error (attempt 3/4 in 200ms)\n"
		assert.Equal(t, want, strings.Replace(got.body, notice, "", 1), "one role chunk, of the resent completion")
		assert.Contains(t, got.body, notice)
		assert.NotContains(t, got.body, "chatcmpl-first")
		assert.Equal(t, 3, r.up.Count())
	})
	t.Run("responses", func(t *testing.T) {
		first := recoursetest.ResponsesEvents("resp_first", "Hello")
		second := recoursetest.ResponsesEvents("resp_second", "Hel", "lo")
		r := newRig(t, "openai", nil, recoursetest.SSE(first...).CutEvents(4), recoursetest.SSE(second...))
		got := r.post(t, "/v1/responses", `{"model":"gpt-4.1-mini","input":"hello","stream":true}`)
		require.NoError(t, got.err)
		assert.Equal(t, ": retrying after transport error (attempt 2/4 in 100ms)\n"+strings.Join(second, ""), got.body,
			"the notice, then the resent stream alone")
		assert.Equal(t, 2, r.up.Count())
	})
}

// R13.9: while a stream's role chunk is held for its first output, the
// proxy's client already has the status and headers.
func TestR13_9_ProxyStreamHeadersComeBeforeTheHeldPreamble(t *testing.T) {
	gate := make(chan struct{})
	events := recoursetest.OpenAIStream("Hel", "lo")
	r := newRig(t, "openai", nil, recoursetest.SSE(events...).Gated(1, gate))
	req, err := http.NewRequest(http.MethodPost, r.proxy.URL+"/v1/chat/completions", strings.NewReader(streamBody))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	type answer struct {
		resp *http.Response
		err  error
	}
	got := make(chan answer, 1)
	go func() {
		resp, err := r.client.Do(req)
		got <- answer{resp, err}
	}()
	var resp *http.Response
	select {
	case a := <-got:
		resp = a.resp
		require.NoError(t, a.err)
	case <-time.After(10 * time.Second):
		close(gate)
		t.Fatal("no status and headers while the role chunk was held")
	}
	defer resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode, "the headers came while the upstream waits after its role chunk")
	close(gate)
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	assert.Equal(t, strings.Join(events, ""), string(b))
}
