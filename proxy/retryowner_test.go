package proxy

import (
	"context"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/recourse-dev/recourse/layers/quota"
	"github.com/recourse-dev/recourse/recoursetest"
)

// quotaOneResendPerCall is a quota allowing one resend per call in the
// window, with no floor.
func quotaOneResendPerCall() []quota.Option {
	return []quota.Option{quota.WithRatio(1), quota.WithFloor(0)}
}

var overloaded503 = recoursetest.JSON(503, recoursetest.OpenAIError("server_error", "server_error", "The server is overloaded."))

// retryCounts records the client retries a Handler reports.
type retryCounts struct {
	mu sync.Mutex
	n  map[ClientRetry]int
}

func (c *retryCounts) report(_ context.Context, a ClientRetry) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n == nil {
		c.n = map[ClientRetry]int{}
	}
	c.n[a]++
}

func (c *retryCounts) get() map[ClientRetry]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := map[ClientRetry]int{}
	for k, v := range c.n {
		out[k] = v
	}
	return out
}

// TestR21_3_RepeatOfAnExhaustedCallIsAnsweredFromMemory: a client that
// ignores X-Should-Retry sends the same request again; the proxy answers
// the same final answer without contacting the upstream, and counts a
// client retry in its log and its metrics.
func TestR21_3_RepeatOfAnExhaustedCallIsAnsweredFromMemory(t *testing.T) {
	var counts retryCounts
	r := newRig(t, "openai", func(c *Config) { c.OnClientRetry = counts.report; c.Quota = privateQuota(t) },
		overloaded503, overloaded503, overloaded503, overloaded503)
	auth := []string{"Authorization", "Bearer sk-test-one"}
	first := r.post(t, "/v1/chat/completions", chatBody, auth...)
	require.Equal(t, 503, first.status)
	require.NotEmpty(t, first.header.Get(HeaderQuotaRemaining), "the proxy's own answer says what its quota allows")
	require.Equal(t, 4, r.up.Count(), "MaxAttempts POSTs upstream")
	for i := range 5 {
		again := r.post(t, "/v1/chat/completions", chatBody, append(auth, "X-Stainless-Retry-Count", "0")...)
		assert.Equal(t, 503, again.status, "repeat %d", i)
		assert.Equal(t, first.body, again.body)
		for _, h := range []string{"X-Recourse-Outcome", "X-Should-Retry", "X-Recourse-Call-Id", "Content-Type"} {
			assert.Equal(t, first.header.Get(h), again.header.Get(h), h)
		}
		assert.Equal(t, "exhausted", again.header.Get("X-Recourse-Outcome"))
		assert.Equal(t, "true", again.header.Get(HeaderReplayed))
		assert.Empty(t, first.header.Get(HeaderReplayed), "the first answer is no replay")
		assert.Empty(t, again.header.Get(HeaderQuotaRemaining), "a replay consults no quota: no stale count")
	}
	assert.Equal(t, 4, r.up.Count(), "no repeat reached the upstream")
	r.logged(t, `"status":503,"outcome":"exhausted","client_retry":true,"replayed":true,"call_id":"`+first.header.Get("X-Recourse-Call-Id")+`"`)
	assert.Equal(t, map[ClientRetry]int{ClientRetryReplayed: 5}, counts.get())
	assert.NotContains(t, r.logs.String(), "sk-test-one", "no credential in the log")
}

// TestR21_3_RedirectAndErrorBodyAreAnsweredFromMemory: a refused redirect
// and a 200 whose body is an error object reach the upstream once, however
// often the client repeats them.
func TestR21_3_RedirectAndErrorBodyAreAnsweredFromMemory(t *testing.T) {
	target := recoursetest.NewTarget()
	defer target.Close()
	for name, step := range map[string]recoursetest.Step{
		"redirect":   recoursetest.Redirect(307, target.URL+"/v1/chat/completions"),
		"error body": recoursetest.JSON(200, recoursetest.OpenAIError("invalid_request_error", "context_length_exceeded", "too long")),
	} {
		t.Run(name, func(t *testing.T) {
			r := newRig(t, "openai", nil, step)
			first := r.post(t, "/v1/chat/completions", chatBody)
			require.Equal(t, 502, first.status, first.body)
			require.NotEmpty(t, first.header.Get("X-Recourse-Outcome"))
			for range 3 {
				again := r.post(t, "/v1/chat/completions", chatBody)
				assert.Equal(t, 502, again.status)
				assert.Equal(t, first.body, again.body)
				assert.Equal(t, first.header.Get("X-Recourse-Outcome"), again.header.Get("X-Recourse-Outcome"))
				assert.Equal(t, "true", again.header.Get(HeaderReplayed))
			}
			assert.Equal(t, 1, r.up.Count())
		})
	}
	assert.Zero(t, target.Hits())
}

// TestR21_3_SuccessOfTheCredentialLetsTheRepeatThrough: once the upstream
// has answered the credential with a success, a repeat is sent again.
func TestR21_3_SuccessOfTheCredentialLetsTheRepeatThrough(t *testing.T) {
	ok := recoursetest.JSON(200, recoursetest.OpenAIChat("ok"))
	r := newRig(t, "openai", func(c *Config) { c.Policy.MaxAttempts = 1 },
		overloaded503, ok, ok)
	auth := []string{"Authorization", "Bearer sk-a"}
	other := `{"model":"gpt-4o-mini","messages":[{"role":"user","content":"another"}]}`
	require.Equal(t, 503, r.post(t, "/v1/chat/completions", chatBody, auth...).status)
	require.Equal(t, 503, r.post(t, "/v1/chat/completions", chatBody, auth...).status)
	require.Equal(t, 1, r.up.Count(), "the repeat was answered from memory")
	require.Equal(t, 200, r.post(t, "/v1/chat/completions", other, auth...).status, "another request of the credential succeeds")
	got := r.post(t, "/v1/chat/completions", chatBody, auth...)
	assert.Equal(t, 200, got.status, "the repeat went through")
	assert.Empty(t, got.header.Get(HeaderReplayed))
	assert.Equal(t, 3, r.up.Count())
}

// TestR21_3_AnotherCredentialOrBodyGoesThrough: only the same request of
// the same credential is a repeat.
func TestR21_3_AnotherCredentialOrBodyGoesThrough(t *testing.T) {
	r := newRig(t, "openai", func(c *Config) { c.Policy.MaxAttempts = 1 },
		overloaded503, overloaded503, overloaded503, overloaded503, overloaded503, overloaded503)
	require.Equal(t, 503, r.post(t, "/v1/chat/completions", chatBody, "Authorization", "Bearer sk-a").status)
	assert.Empty(t, r.post(t, "/v1/chat/completions", chatBody, "Authorization", "Bearer sk-b").header.Get(HeaderReplayed))
	// A cookie is a credential too: another user's cookie is another key.
	require.Equal(t, 503, r.post(t, "/v1/chat/completions", chatBody, "Cookie", "session=one").status)
	assert.Empty(t, r.post(t, "/v1/chat/completions", chatBody, "Cookie", "session=two").header.Get(HeaderReplayed))
	assert.Empty(t, r.post(t, "/v1/chat/completions", streamBody, "Authorization", "Bearer sk-a").header.Get(HeaderReplayed))
	assert.Empty(t, r.post(t, "/v1/chat/completions?api-version=2", chatBody, "Authorization", "Bearer sk-a").header.Get(HeaderReplayed))
	assert.Equal(t, 6, r.up.Count())
}

// TestR21_3_WindowEndsAndCanBeTurnedOff: after the window a repeat is sent
// again; with a negative window every repeat is.
func TestR21_3_WindowEndsAndCanBeTurnedOff(t *testing.T) {
	var mu sync.Mutex
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	r := newRig(t, "openai", func(c *Config) {
		c.Policy.MaxAttempts = 1
		c.Policy.WallClock = clock
		c.RepeatWindow = 90 * time.Second
	}, overloaded503, overloaded503)
	require.Equal(t, 503, r.post(t, "/v1/chat/completions", chatBody).status)
	mu.Lock()
	now = now.Add(89 * time.Second)
	mu.Unlock()
	assert.Equal(t, "true", r.post(t, "/v1/chat/completions", chatBody).header.Get(HeaderReplayed), "within the window")
	mu.Lock()
	now = now.Add(time.Second)
	mu.Unlock()
	assert.Empty(t, r.post(t, "/v1/chat/completions", chatBody).header.Get(HeaderReplayed), "the window is counted from the final answer, not from its repeats")
	assert.Equal(t, 2, r.up.Count())

	off := newRig(t, "openai", func(c *Config) { c.Policy.MaxAttempts = 1; c.RepeatWindow = -1 }, overloaded503, overloaded503)
	for range 2 {
		assert.Empty(t, off.post(t, "/v1/chat/completions", chatBody).header.Get(HeaderReplayed))
	}
	assert.Equal(t, 2, off.up.Count())
}

// TestR21_3_ProxyRefusalsWithoutOutcomeAreNotRemembered: the proxy's own
// 413 carries no outcome and decided nothing about the upstream, so it is
// not remembered (the client may shorten the body).
func TestR21_3_ProxyRefusalsWithoutOutcomeAreNotRemembered(t *testing.T) {
	r := newRig(t, "openai", func(c *Config) { c.MaxBodyBytes = 16 },
		recoursetest.JSON(400, recoursetest.OpenAIError("invalid_request_error", "invalid_value", "bad")))
	for range 2 {
		got := r.post(t, "/v1/chat/completions", chatBody)
		assert.Equal(t, 413, got.status)
		assert.Empty(t, got.header.Get(HeaderReplayed))
	}
	assert.Zero(t, r.up.Count())
}

// TestR21_3_MemoryIsBounded: the memory keeps at most maxFinals answers,
// dropping the oldest.
func TestR21_3_MemoryIsBounded(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	f := newFinals(time.Hour, func() time.Time { return now })
	var first finalKey
	for i := range maxFinals + 10 {
		var k finalKey
		copy(k[:], strconv.Itoa(i))
		if i == 0 {
			first = k
		}
		f.remember(k, &final{at: now.Add(time.Duration(i)), status: 503})
	}
	assert.Len(t, f.byKey, maxFinals)
	assert.Nil(t, f.lookup(first), "the oldest went first")
	n := 0
	for _, set := range f.byCred {
		n += len(set)
	}
	assert.Equal(t, maxFinals, n, "the credential index follows")
}

// TestR21_5_EveryClientRetryAnswerIsReported: a client retry marked by
// its SDK (X-Stainless-Retry-Count above 0) is reported charged when the
// quota lets it through and refused when it does not; a repeat of a final
// failure is reported replayed (the command counts them in a metric).
func TestR21_5_EveryClientRetryAnswerIsReported(t *testing.T) {
	var counts retryCounts
	q := privateQuota(t, quotaOneResendPerCall()...)
	ok := recoursetest.JSON(200, recoursetest.OpenAIChat("ok"))
	other := `{"model":"gpt-4o-mini","messages":[{"role":"user","content":"other"}]}`
	r := newRig(t, "openai", func(c *Config) {
		c.Quota = q
		c.Policy.MaxAttempts = 1
		c.OnClientRetry = counts.report
	}, ok, overloaded503)
	assert.Equal(t, 200, r.post(t, "/v1/chat/completions", chatBody).status, "a call: one resend allowed")
	assert.Equal(t, 503, r.post(t, "/v1/chat/completions", other, "X-Stainless-Retry-Count", "1").status, "charged, sent, failed")
	assert.Equal(t, 503, r.post(t, "/v1/chat/completions", other, "X-Stainless-Retry-Count", "2").status, "a repeat of that final failure")
	refused := r.post(t, "/v1/chat/completions", chatBody, "X-Stainless-Retry-Count", "1")
	assert.Equal(t, "quota_exhausted", refused.header.Get("X-Recourse-Outcome"), "charged and refused: no resend left")
	assert.Equal(t, 2, r.up.Count())
	assert.Equal(t, map[ClientRetry]int{ClientRetryCharged: 1, ClientRetryReplayed: 1, ClientRetryRefused: 1}, counts.get())
}
