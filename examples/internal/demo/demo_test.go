package demo

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/recourse-dev/recourse/event"
)

// An example prints only an event's safe fields (R10.5): its type,
// attempts, failure category, status and reason, next attempt and delay —
// never the failure's evidence.
func TestR10_5_EventFormatPrintsOnlySafeFields(t *testing.T) {
	t.Parallel()
	f := &event.Failure{Category: event.CategoryHTTP, HTTPStatus: 503, Classification: event.Classification{Reason: event.ReasonTransient}}
	f.Attach(event.Evidence{Bytes: []byte(`{"error":{"message":"secret prompt"}}`)})
	ev := event.Event{Type: event.DelayScheduled, Identity: event.Identity{WireAttempt: 1}, MaxAttempts: 3, NextAttempt: 2, Delay: 1234567 * time.Microsecond, Failure: f}
	var b strings.Builder
	EventFormat{Indent: "  ", Width: 17}.Print(&b, ev)
	EventFormat{Width: 19, Next: true}.Print(&b, ev)
	assert.Equal(t, "  event delay_scheduled   attempt 1/3  http 503 (transient)  delay 1.235s\n"+
		"event delay_scheduled     attempt 1/3  http 503 (transient)  next 2  delay 1.235s\n", b.String())
	assert.NotContains(t, b.String(), "secret")
}

// Without OPENAI_BASE_URL an example talks to a scripted server it
// announces; with it, to the endpoint the environment names.
func TestOpenAIPicksTheScriptedServerOrTheEnvironment(t *testing.T) {
	t.Setenv("OPENAI_BASE_URL", "")
	t.Setenv("OPENAI_API_KEY", "")
	t.Setenv("OPENAI_MODEL", "")
	var b strings.Builder
	ep, stop := OpenAI(&b, "503, then 200", append(Recovered503(), RecoveredStream("Hello")...)...)
	defer stop()
	require.True(t, strings.HasSuffix(ep.APIBase, "/v1/"), ep.APIBase)
	assert.Equal(t, "gpt-4o-mini", ep.Model)
	assert.Equal(t, "sk-offline-demo", ep.Key)
	assert.Equal(t, "offline: scripted server at "+strings.TrimSuffix(ep.APIBase, "/v1/")+" (503, then 200)\n", b.String())
	for _, want := range []int{http.StatusServiceUnavailable, http.StatusOK} {
		resp, err := http.Post(ep.APIBase+"chat/completions", "application/json", strings.NewReader(`{}`))
		require.NoError(t, err)
		_, _ = io.Copy(io.Discard, resp.Body)
		require.NoError(t, resp.Body.Close())
		assert.Equal(t, want, resp.StatusCode)
	}
	resp, err := http.Post(ep.APIBase+"chat/completions", "application/json", strings.NewReader(`{"stream":true}`))
	require.NoError(t, err)
	cut, _ := io.ReadAll(resp.Body)
	require.NoError(t, resp.Body.Close())
	assert.Equal(t, SSEKeepalive, string(cut), "the first stream is cut after its keep-alive")
	resp, err = http.Post(ep.APIBase+"chat/completions", "application/json", strings.NewReader(`{"stream":true}`))
	require.NoError(t, err)
	full, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	assert.Contains(t, string(full), `"Hello"`)
	assert.Contains(t, string(full), "data: [DONE]")

	t.Setenv("OPENAI_BASE_URL", "https://api.example.test/v1")
	t.Setenv("OPENAI_API_KEY", "sk-real")
	t.Setenv("OPENAI_MODEL", "gpt-real")
	b.Reset()
	ep, stop = OpenAI(&b, "unused", Recovered503()...)
	stop()
	assert.Equal(t, Endpoint{APIBase: "https://api.example.test/v1", Key: "sk-real", Model: "gpt-real"}, ep)
	assert.Empty(t, b.String(), "a real endpoint is not announced")
}
