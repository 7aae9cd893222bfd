package proxy

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/recourse-dev/recourse/recoursetest"
)

const claudeBody = `{"model":"claude-sonnet-4-5","max_tokens":64,"system":[{"type":"text","text":"s","cache_control":{"type":"ephemeral"}}],"messages":[{"role":"user","content":"hello"}]}`
const claudeStreamBody = `{"model":"claude-sonnet-4-5","max_tokens":64,"stream":true,"messages":[{"role":"user","content":"hello"}]}`

// R22.1: the anthropic proxy recovers POST /v1/messages from a 529 with
// the byte-identical body, and both credential headers pass through
// untouched.
func TestR22_1_ProxyRecoversA529(t *testing.T) {
	r := newRig(t, "anthropic", nil, recoursetest.AnthropicOverloaded(), recoursetest.JSON(200, recoursetest.AnthropicMessage("Hello.")))
	got := r.post(t, "/v1/messages", claudeBody, "x-api-key", "sk-ant-CANARY", "Authorization", "Bearer sk-ant-CANARY2", "anthropic-version", "2023-06-01")
	require.NoError(t, got.err)
	assert.Equal(t, 200, got.status)
	assert.Equal(t, recoursetest.AnthropicMessage("Hello."), got.body)
	reqs := r.up.Requests()
	require.Len(t, reqs, 2)
	for _, q := range reqs {
		assert.Equal(t, claudeBody, string(q.Body))
		assert.Equal(t, "sk-ant-CANARY", q.Header.Get("X-Api-Key"))
		assert.Equal(t, "Bearer sk-ant-CANARY2", q.Header.Get("Authorization"))
		assert.Equal(t, "2023-06-01", q.Header.Get("Anthropic-Version"))
	}
	r.logged(t, `"msg":"request"`)
	assert.NotContains(t, r.logs.String(), "CANARY")
}

// R22.1: everything else is forwarded once.
func TestR22_1_ProxyForwardsOtherPathsOnce(t *testing.T) {
	r := newRig(t, "anthropic", nil, recoursetest.AnthropicOverloaded())
	got := r.post(t, "/v1/messages/count_tokens", claudeBody)
	assert.Equal(t, 529, got.status)
	assert.Equal(t, 1, r.up.Count())
}

// R22.1: a final failure is the provider's answer marked
// x-should-retry: false, so the SDK does not retry on top.
func TestR22_1_ProxyFinalFailureSaysDoNotRetry(t *testing.T) {
	o := recoursetest.AnthropicOverloaded()
	r := newRig(t, "anthropic", nil, o, o, o, o)
	got := r.post(t, "/v1/messages", claudeBody)
	assert.Equal(t, 529, got.status)
	assert.Equal(t, "false", got.header.Get("X-Should-Retry"))
	assert.Contains(t, got.body, "overloaded_error")
	assert.Equal(t, 4, r.up.Count())
}

// R22.2: an in-band overload before content is recovered behind the
// proxy; the client sees one whole stream.
func TestR22_2_ProxyRecoversAnInBandOverload(t *testing.T) {
	overload := recoursetest.AnthropicStream(append(recoursetest.AnthropicStart(), recoursetest.AnthropicErrorEvent("overloaded_error", "Overloaded"))...)
	evs := recoursetest.AnthropicEvents("Hel", "lo")
	r := newRig(t, "anthropic", nil, overload, recoursetest.AnthropicStream(evs...))
	got := r.post(t, "/v1/messages", claudeStreamBody)
	require.NoError(t, got.err)
	assert.Equal(t, 200, got.status)
	assert.NotContains(t, got.body, "overloaded_error")
	assert.True(t, strings.HasSuffix(got.body, strings.Join(evs, "")), got.body)
	assert.Equal(t, 2, r.up.Count())
}

// R22.9: a stream committed early shows the notices, and its failure is
// an in-band error event in Anthropic's shape.
func TestR22_9_ProxyStreamCommittedEarlyFailsInBand(t *testing.T) {
	o := recoursetest.AnthropicOverloaded()
	r := newRig(t, "anthropic", commitNow, o, o, o, o)
	got := r.post(t, "/v1/messages", claudeStreamBody)
	assert.Equal(t, 200, got.status)
	require.Error(t, got.err)
	assert.True(t, strings.HasPrefix(got.body, ": retrying after HTTP 529 (attempt 2/4 in 100ms)\n"), got.body)
	assert.Contains(t, got.body, "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"recourse_error\",\"message\":\"recourse: recovery exhausted (http/transient, HTTP 529, wire attempt 4)\"}}\n\n")
	assert.NotContains(t, got.body, "Overloaded", "the provider's text never reaches an in-band frame")
}

// R22.4: a cut after content ends with Anthropic's in-band error event.
func TestR22_4_ProxyCutAfterContentEndsWithAnErrorEvent(t *testing.T) {
	evs := recoursetest.AnthropicEvents("Hel", "lo")
	r := newRig(t, "anthropic", nil, recoursetest.AnthropicStream(evs...).CutEvents(4))
	got := r.post(t, "/v1/messages", claudeStreamBody)
	assert.Equal(t, 200, got.status)
	require.Error(t, got.err)
	assert.Equal(t, 1, r.up.Count())
	tail := strings.TrimPrefix(got.body, strings.Join(evs[:4], ""))
	assert.True(t, strings.HasPrefix(tail, "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"recourse_error\",\"message\":\"recourse: recovery interrupted"), tail)
}
