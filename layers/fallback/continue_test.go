package fallback_test

import (
	"errors"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/recourse-dev/recourse/codecs/openai"
	"github.com/recourse-dev/recourse/event"
	"github.com/recourse-dev/recourse/layer"
	"github.com/recourse-dev/recourse/layers/fallback"
	"github.com/recourse-dev/recourse/layers/retry"
	"github.com/recourse-dev/recourse/layers/stall"
	"github.com/recourse-dev/recourse/recoursetest"
)

const ping = ": keepalive\n\n"

// A drop-in stream whose 200 was handed to the caller and whose target
// then fails before any output — no semantic byte, at most keepalives —
// goes on to the next target in the same body: the caller reads one
// answer, the next target's (R20.14).
func TestR20_14_StreamFallsBackBeforeOutputInTheSameBody(t *testing.T) {
	b := recoursetest.OpenAIStream("from ", "b")
	for name, first := range map[string]recoursetest.Step{
		"nothing":         cutStream(false),
		"keepalives only": recoursetest.SSE(ping, ping, "data: {").Cut(len(ping) * 2),
	} {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t, openai.New(), retry.Policy{MaxAttempts: 2},
				fallback.Config{Targets: []fallback.Target{{Model: "b"}}},
				first, first, recoursetest.SSE(b...))
			resp, lc, err := f.post(t, "/v1/chat/completions", chatBody("a", true))
			require.NoError(t, err)
			require.Equal(t, 200, resp.StatusCode)
			body, rerr := readAll(resp)
			require.NoError(t, rerr)
			assert.True(t, strings.HasSuffix(body, strings.Join(b, "")), body)
			assert.Equal(t, 1, strings.Count(body, "data: [DONE]"), "one answer")
			assert.NotContains(t, body, "error")
			assert.Nil(t, lc.Result.Err)
			assert.Equal(t, []string{"a", "a", "b"}, models(t, f.Server))
			fb := fallbacks(f.rec, event.Fallback)
			require.Len(t, fb, 1)
			assert.Equal(t, event.FallbackStep{From: "a", To: "b", Index: 1, Outcome: event.OutcomeExhausted, Attempts: 2}, fb[0])
		})
	}
}

// When the walk that went on from an opened stream ends without an
// answer, the body ends with the call's final error after the codec's
// in-band error frame, both naming every target (R20.14, R20.7).
func TestR20_14_StreamThatFallsBackAndFailsEndsInBand(t *testing.T) {
	f := newFixture(t, openai.New(), retry.Policy{MaxAttempts: 1},
		fallback.Config{Targets: []fallback.Target{{Model: "b"}}},
		cutStream(false), unavailable())
	resp, lc, err := f.post(t, "/v1/chat/completions", chatBody("a", true))
	require.NoError(t, err)
	require.Equal(t, 200, resp.StatusCode)
	body, rerr := readAll(resp)
	var re *layer.RecoveryError
	require.True(t, errors.As(rerr, &re), "%v", rerr)
	require.NotNil(t, lc.Result.Err)
	assert.Same(t, lc.Result.Err, re)
	require.Len(t, re.Targets, 2)
	assert.Contains(t, body, "2 fallback targets tried: a (exhausted) → b (exhausted)")
	assert.Equal(t, []string{"a", "b"}, models(t, f.Server))
}

// The key case: a provider that sends its headers at once and its first
// token after 20 s, under a 10 s first-output limit with fail-over on that
// stall, is answered by the fallback after one limit, in the same body.
func TestR20_14_FirstOutputStallFailsOverInTheSameBody(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		late := make(chan struct{})
		time.AfterFunc(20*time.Second, func() { close(late) })
		slow := recoursetest.SSE(recoursetest.OpenAIStream("too late")...).Gated(0, late)
		f := stallFixture(t, stall.Limits{FirstOutput: 10 * time.Second}, retry.Policy{MaxAttempts: 3},
			fallback.Config{Rules: fallback.Rules{Stalls: []event.StallLimit{event.StallFirstOutput}}, Targets: []fallback.Target{{Model: "b"}}},
			slow, recoursetest.SSE(recoursetest.OpenAIStream("from b")...))
		start := time.Now()
		resp, lc, err := f.post(t, "/v1/chat/completions", chatBody("a", true))
		require.NoError(t, err)
		body, rerr := readAll(resp)
		require.NoError(t, rerr)
		assert.Equal(t, 10*time.Second, time.Since(start))
		assert.Contains(t, body, `"from b"`)
		assert.NotContains(t, body, "too late")
		assert.Nil(t, lc.Result.Err)
		assert.Equal(t, []string{"a", "b"}, models(t, f.Server))
	})
}
