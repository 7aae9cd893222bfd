package fallback_test

import (
	"net/http"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/recourse-dev/recourse/chain"
	"github.com/recourse-dev/recourse/codecs/openai"
	"github.com/recourse-dev/recourse/event"
	"github.com/recourse-dev/recourse/internal/rigtest"
	"github.com/recourse-dev/recourse/layers/fallback"
	"github.com/recourse-dev/recourse/layers/retry"
	"github.com/recourse-dev/recourse/layers/stall"
	"github.com/recourse-dev/recourse/recoursetest"
)

// stallFixture is a memory fixture whose attempts have stall limits lim.
// Call it inside a testing/synctest bubble.
func stallFixture(t *testing.T, lim stall.Limits, p retry.Policy, cfg fallback.Config, steps ...recoursetest.Step) *fixture {
	t.Helper()
	rec := &rigtest.Recorder{}
	p.OnEvent = rec.OnEvent
	p.Jitter = func() float64 { return 0 }
	cfg.Codec = openai.New()
	cfg.OnEvent = rec.OnEvent
	l, err := fallback.New(cfg)
	require.NoError(t, err)
	sl, err := stall.New(lim)
	require.NoError(t, err)
	srv := recoursetest.NewMemoryServer(steps...)
	t.Cleanup(srv.Close)
	ch, err := chain.Default(openai.New(), chain.WithPolicy(p), chain.WithTransport(srv.Transport()), chain.WithPerCall(l), chain.WithPerAttempt(sl))
	require.NoError(t, err)
	return &fixture{Rig: &rigtest.Rig{T: t, Server: srv, Rec: rec, Chain: ch, HTTP: &http.Client{Transport: ch}}, rec: rec}
}

// silent is a step whose headers never come (until the test ends).
func silent(t *testing.T) recoursetest.Step {
	never := make(chan struct{})
	t.Cleanup(func() { close(never) })
	return recoursetest.JSON(200, recoursetest.OpenAIChat("never sent")).Gated(-1, never)
}

// With Rules.Stalls naming header_timeout, a target whose headers never
// come is left after ONE header timeout, unresent, and the next target
// answers; without the rule the stall is retried there as before.
func TestR20_12_StallFailsOverWithoutAResend(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := retry.Policy{MaxAttempts: 3}
		f := stallFixture(t, stall.Limits{Header: 30 * time.Second}, p,
			fallback.Config{Rules: fallback.Rules{Stalls: []event.StallLimit{event.StallHeader}}, Targets: []fallback.Target{{Model: "b"}}},
			silent(t), recoursetest.JSON(200, recoursetest.OpenAIChat("from b")))
		start := time.Now()
		resp, lc, err := f.post(t, "/v1/chat/completions", chatBody("a", false))
		require.NoError(t, err)
		assert.Equal(t, 30*time.Second, time.Since(start), "one header timeout, no resend, no backoff")
		assert.Contains(t, readBody(t, resp), "from b")
		assert.Nil(t, lc.Result.Err)
		assert.Equal(t, []string{"a", "b"}, models(t, f.Server))
		fb := fallbacks(f.rec, event.Fallback)
		require.Len(t, fb, 1)
		assert.Equal(t, event.FallbackStep{From: "a", To: "b", Index: 1, Outcome: event.OutcomeInterrupted, Attempts: 1}, fb[0])
	})
	synctest.Test(t, func(t *testing.T) {
		p := retry.Policy{MaxAttempts: 3}
		f := stallFixture(t, stall.Limits{Header: 30 * time.Second}, p,
			fallback.Config{Targets: []fallback.Target{{Model: "b"}}},
			silent(t), silent(t), silent(t), recoursetest.JSON(200, recoursetest.OpenAIChat("from b")))
		resp, _, err := f.post(t, "/v1/chat/completions", chatBody("a", false))
		require.NoError(t, err)
		assert.Contains(t, readBody(t, resp), "from b")
		assert.Equal(t, []string{"a", "a", "a", "b"}, models(t, f.Server), "the default spends every attempt on the stalled target")
	})
}

// The last target, with nowhere left to go, retries a stall as without the
// rule; a stall the rule does not name is retried too.
func TestR20_12_LastTargetAndOtherStallsRetry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := retry.Policy{MaxAttempts: 2}
		f := stallFixture(t, stall.Limits{Header: 30 * time.Second}, p,
			fallback.Config{Rules: fallback.Rules{Stalls: []event.StallLimit{event.StallHeader}}, Targets: []fallback.Target{{Model: "b"}}},
			silent(t), silent(t), recoursetest.JSON(200, recoursetest.OpenAIChat("b at last")))
		resp, _, err := f.post(t, "/v1/chat/completions", chatBody("a", false))
		require.NoError(t, err)
		assert.Contains(t, readBody(t, resp), "b at last")
		assert.Equal(t, []string{"a", "b", "b"}, models(t, f.Server))
	})
	synctest.Test(t, func(t *testing.T) {
		p := retry.Policy{MaxAttempts: 2}
		f := stallFixture(t, stall.Limits{Header: 30 * time.Second}, p,
			fallback.Config{Rules: fallback.Rules{Stalls: []event.StallLimit{event.StallFirstOutput}}, Targets: []fallback.Target{{Model: "b"}}},
			silent(t), recoursetest.JSON(200, recoursetest.OpenAIChat("a answers")))
		resp, _, err := f.post(t, "/v1/chat/completions", chatBody("a", false))
		require.NoError(t, err)
		assert.Contains(t, readBody(t, resp), "a answers")
		assert.Equal(t, []string{"a", "a"}, models(t, f.Server))
	})
	var ce *fallback.ConfigError
	assert.ErrorAs(t, fallback.Rules{Stalls: []event.StallLimit{"slow"}}.Validate(), &ce)
}
