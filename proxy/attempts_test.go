package proxy

import (
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/recourse-dev/recourse/layers/fallback"
	"github.com/recourse-dev/recourse/recoursetest"
)

var busy = recoursetest.JSON(503, recoursetest.OpenAIError("server_error", "server_error", "overloaded"))

// R21.7: a unary answer recovered after a 503 says so: two wire attempts in
// X-Recourse-Attempts and on the request line.
func TestR21_7_RecoveredUnaryAnswerCountsItsAttempts(t *testing.T) {
	r := newRig(t, "openai", nil, busy, recoursetest.JSON(200, recoursetest.OpenAIChat("hi")))
	got := r.post(t, "/v1/chat/completions", chatBody)
	require.NoError(t, got.err)
	assert.Equal(t, http.StatusOK, got.status)
	assert.Equal(t, "2", got.header.Get(HeaderAttempts))
	assert.Empty(t, got.header.Get(HeaderResumes), "none")
	assert.Empty(t, got.header.Get(HeaderFallbacks), "none")
	r.logged(t, `"kind":"completion"`)
	assert.Contains(t, r.logs.String(), `"status":200,"call_id":`)
	assert.Contains(t, r.logs.String(), `"attempts":2,"duration_ms"`)
}

// R21.7: a clean first answer says 1.
func TestR21_7_FirstAnswerSaysOneAttempt(t *testing.T) {
	r := newRig(t, "ollama", nil, recoursetest.JSON(200, recoursetest.OllamaChat("hi")))
	got := r.post(t, "/api/chat", ollamaBody)
	assert.Equal(t, "1", got.header.Get(HeaderAttempts))
	r.logged(t, `"attempts":1`)
}

// R21.7: a stream whose status was held through a 503 says 2 in its header
// and again in its trailer.
func TestR21_7_HeldStreamCountsItsAttempts(t *testing.T) {
	r := newRig(t, "openai", nil, busy, recoursetest.SSE(recoursetest.OpenAIStream("Hel", "lo")...))
	got := r.post(t, "/v1/chat/completions", streamBody)
	require.NoError(t, got.err)
	assert.Equal(t, "2", got.header.Get(HeaderAttempts))
	assert.Equal(t, "2", got.trailer.Get(HeaderAttempts))
	r.logged(t, `"attempts":2`)
}

// R21.7: a stream committed before its recovery ended says in its header
// the attempts sent by then, and the final count in its trailer and on the
// request line.
func TestR21_7_CommittedStreamGivesTheFinalCountInItsTrailer(t *testing.T) {
	events := recoursetest.OpenAIStream("Hel", "lo")
	r := newRig(t, "openai", nil,
		recoursetest.SSE(keepalive, events[0], events[1]).Cut(len(keepalive)+3),
		recoursetest.SSE(events...))
	got := r.post(t, "/v1/chat/completions", streamBody)
	require.NoError(t, got.err)
	assert.True(t, strings.HasSuffix(got.body, "data: [DONE]\n\n"))
	assert.Equal(t, "1", got.header.Get(HeaderAttempts), "the header left after the first attempt's 200")
	assert.Equal(t, "2", got.trailer.Get(HeaderAttempts), "the trailer has the final count")
	r.logged(t, `"attempts":2`)
}

// R21.7: a background stream resumed inside the proxy counts the resume.
func TestR21_7_ResumedStreamCountsItsResumes(t *testing.T) {
	evs := respEvents()
	r := newRig(t, "openai", nil,
		recoursetest.ResponsesBackground(respID, evs...).CutEvents(6), recoursetest.ResponsesResume(respID))
	got := r.post(t, "/v1/responses", backgroundBody)
	require.NoError(t, got.err)
	assert.Equal(t, "2", got.trailer.Get(HeaderAttempts))
	assert.Equal(t, "1", got.trailer.Get(HeaderResumes))
	r.logged(t, `"attempts":2,"resumes":1`)
}

// R21.7: an answer that fell back counts every target's attempts and the
// fallbacks.
func TestR21_7_FallbackCountsTargetsAndAttempts(t *testing.T) {
	r := newRig(t, "openai", func(c *Config) {
		c.Policy.MaxAttempts = 2
		c.Fallback = []fallback.Target{{Model: "gpt-4o"}}
	}, busy, busy, recoursetest.JSON(200, recoursetest.OpenAIChat("from gpt-4o")))
	got := r.post(t, "/v1/chat/completions", chatBody)
	require.NoError(t, got.err)
	assert.Equal(t, http.StatusOK, got.status)
	assert.Equal(t, "3", got.header.Get(HeaderAttempts))
	assert.Equal(t, "1", got.header.Get(HeaderFallbacks))
	r.logged(t, `"attempts":3,"fallbacks":1`)
}

// R21.7: a final failure counts its attempts too, and its repeat from
// memory says that it sent none.
func TestR21_7_FailureAndReplayCountTheirAttempts(t *testing.T) {
	r := newRig(t, "openai", func(c *Config) { c.Policy.MaxAttempts = 2 }, busy, busy)
	got := r.post(t, "/v1/chat/completions", chatBody)
	assert.Equal(t, http.StatusServiceUnavailable, got.status)
	assert.Equal(t, "2", got.header.Get(HeaderAttempts))
	again := r.post(t, "/v1/chat/completions", chatBody)
	assert.Equal(t, "true", again.header.Get(HeaderReplayed))
	assert.Equal(t, "0", again.header.Get(HeaderAttempts), "a replay sends nothing")
	r.logged(t, `"replayed":true`)
	assert.Contains(t, r.logs.String(), `"attempts":0`)
}
