package proxy

import (
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/recourse-dev/recourse/event"
	"github.com/recourse-dev/recourse/layers/fallback"
	"github.com/recourse-dev/recourse/layers/quota"
	"github.com/recourse-dev/recourse/layers/stall"
	"github.com/recourse-dev/recourse/recoursetest"
)

// A silent provider (it accepts and never answers) behind a proxy with
// three attempts, a 30 s header limit and stall fail-over is answered by
// the fallback after ONE header timeout, whatever the quota's state: one
// that would allow every resend, one that refuses every resend, none.
func TestR20_12_ProxyFailsOverAfterOneHeaderTimeout(t *testing.T) {
	for name, q := range map[string]func(t *testing.T) *quota.Layer{
		"generous quota": func(t *testing.T) *quota.Layer { return privateQuota(t, quota.WithFloor(100)) },
		"spent quota":    func(t *testing.T) *quota.Layer { return privateQuota(t, quota.WithRatio(0), quota.WithFloor(0)) },
		"no quota":       func(*testing.T) *quota.Layer { return nil },
	} {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				never := make(chan struct{})
				defer close(never)
				silent := recoursetest.JSON(200, recoursetest.OpenAIChat("never sent")).Gated(-1, never)
				r := newMemoryRig(t, "openai", func(c *Config) {
					c.Policy.MaxAttempts = 3
					c.PerAttempt = stallLayer(t, stall.Limits{Header: 30 * time.Second})
					c.Quota = q(t)
					c.Fallback = []fallback.Target{{Model: "gpt-4o"}}
					c.FallbackRules = fallback.Rules{Stalls: []event.StallLimit{event.StallHeader}}
				}, silent, recoursetest.JSON(200, recoursetest.OpenAIChat("from the fallback")))
				start := time.Now()
				got := r.post(t, "/v1/chat/completions", chatBody)
				assert.Equal(t, 30*time.Second, time.Since(start), "one header timeout, then the fallback at once")
				require.NoError(t, got.err)
				assert.Equal(t, 200, got.status)
				assert.Equal(t, recoursetest.OpenAIChat("from the fallback"), got.body)
				assert.Equal(t, 2, r.up.Count(), "the stalled route was not resent")
				assert.Empty(t, r.sleeps.all(), "no backoff")
				r.logged(t, `"msg":"request"`)
				assert.Contains(t, r.logs.String(), `"fallback":{"to":"gpt-4o","index":1,"from":"gpt-4o-mini","outcome":"interrupted","attempts":1}`)
			})
		})
	}
}

// The key case through the proxy: a provider that sends its headers at
// once and its first token after 20 s, under a 10 s first-output limit, is
// answered by the fallback in the same stream — after one limit with
// fail-over on that stall, after the three attempts' limits without it —
// instead of an in-band exhausted error (R20.14).
func TestR20_14_ProxyStreamFallsBackBeforeOutput(t *testing.T) {
	for name, tc := range map[string]struct {
		stalls []event.StallLimit
		slow   int // attempts sent to the slow provider
		after  time.Duration
	}{
		"with stall fail-over": {[]event.StallLimit{event.StallFirstOutput}, 1, 10 * time.Second},
		"without":              {nil, 3, 30 * time.Second},
	} {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var steps []recoursetest.Step
				for n := range tc.slow {
					// Attempt n+1 starts 10 s after the one before; its
					// first token would come 20 s after its headers.
					late := make(chan struct{})
					time.AfterFunc(time.Duration(10*n+20)*time.Second, func() { close(late) })
					steps = append(steps, recoursetest.SSE(recoursetest.OpenAIStream("too late")...).Gated(0, late))
				}
				steps = append(steps, recoursetest.SSE(recoursetest.OpenAIStream("from the fallback")...))
				r := newMemoryRig(t, "openai", func(c *Config) {
					c.Policy.MaxAttempts = 3
					c.PerAttempt = stallLayer(t, stall.Limits{FirstOutput: 10 * time.Second})
					c.Fallback = []fallback.Target{{Model: "gpt-4o"}}
					c.FallbackRules = fallback.Rules{Stalls: tc.stalls}
				}, steps...)
				start := time.Now()
				got := r.post(t, "/v1/chat/completions", streamBody)
				assert.Equal(t, tc.after, time.Since(start))
				require.NoError(t, got.err)
				assert.Equal(t, 200, got.status)
				assert.Contains(t, got.body, `"from the fallback"`)
				assert.NotContains(t, got.body, "too late")
				assert.NotContains(t, got.body, "exhausted")
				assert.Equal(t, 1, strings.Count(got.body, "data: [DONE]"), "one answer")
				assert.Equal(t, tc.slow+1, r.up.Count())
				r.logged(t, `"msg":"request"`)
				assert.Contains(t, r.logs.String(), `"type":"fallback"`)
			})
		})
	}
}
