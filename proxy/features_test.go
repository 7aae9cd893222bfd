package proxy

import (
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/recourse-dev/recourse/eventlog"
	"github.com/recourse-dev/recourse/layer"
	"github.com/recourse-dev/recourse/layers/quota"
	"github.com/recourse-dev/recourse/layers/stall"
	"github.com/recourse-dev/recourse/recoursetest"
)

func stallLayer(t *testing.T, lim stall.Limits) []layer.Layer {
	t.Helper()
	l, err := stall.New(lim)
	require.NoError(t, err)
	return []layer.Layer{l}
}

// privateQuota returns a quota on a store of its own, so that no test sees
// another's cooldown horizon.
func privateQuota(t *testing.T, opts ...quota.Option) *quota.Layer {
	t.Helper()
	q, err := quota.New(append([]quota.Option{quota.WithStore(quota.NewMemoryStore())}, opts...)...)
	require.NoError(t, err)
	return q
}

// TestIdleTimeoutBeforeOutputIsRetriedWithANotice: the first stream sends
// its headers and a keepalive, then goes silent; the idle limit ends that
// attempt (no output yet: eligible), the committed stream announces the
// resend naming the limit, and the second attempt's stream follows.
func TestIdleTimeoutBeforeOutputIsRetriedWithANotice(t *testing.T) {
	synctest.Test(t, testIdleTimeoutBeforeOutputIsRetriedWithANotice)
}

func testIdleTimeoutBeforeOutputIsRetriedWithANotice(t *testing.T) {
	events := recoursetest.OpenAIStream("Hel", "lo")
	r := newMemoryRig(t, "openai", func(c *Config) {
		c.PerAttempt = stallLayer(t, stall.Limits{Idle: 30 * time.Second})
	}, recoursetest.SSE(keepalive).Held(), recoursetest.SSE(events...))
	start := time.Now()
	got := r.post(t, "/v1/chat/completions", streamBody)
	assert.Equal(t, 30*time.Second, time.Since(start), "the first attempt was cut 30 s after its keepalive; the backoff is recorded, not slept")
	require.NoError(t, got.err)
	assert.Equal(t, 200, got.status)
	assert.Equal(t, 2, r.up.Count())
	assert.Contains(t, got.body, ": retrying after idle timeout (attempt 2/4 in 100ms)\n")
	assert.Equal(t, 1, strings.Count(got.body, `"content":"Hel"`), "no duplicated text")
	assert.True(t, strings.HasSuffix(got.body, strings.Join(events, "")), got.body)
	r.logged(t, `"msg":"request"`)
	assert.Contains(t, r.logs.String(), `"type":"attempt_failed"`)
	assert.Contains(t, r.logs.String(), `"failure":{"category":"transport","reason":"transient"`)
	assert.Contains(t, r.logs.String(), `"stall":"idle_timeout"`)
}

// TestIdleTimeoutAfterOutputIsAnInBandError: a stall after content cannot
// be resent; the client gets the in-band error naming the limit.
func TestIdleTimeoutAfterOutputIsAnInBandError(t *testing.T) {
	synctest.Test(t, testIdleTimeoutAfterOutputIsAnInBandError)
}

func testIdleTimeoutAfterOutputIsAnInBandError(t *testing.T) {
	events := recoursetest.OpenAIStream("Hel", "lo")
	r := newMemoryRig(t, "openai", func(c *Config) {
		c.PerAttempt = stallLayer(t, stall.Limits{Idle: 30 * time.Second})
	}, recoursetest.SSE(events[0], events[1]).Held())
	req, err := http.NewRequest(http.MethodPost, r.proxy.URL+"/v1/chat/completions", strings.NewReader(streamBody))
	require.NoError(t, err)
	resp, err := r.client.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	assert.Equal(t, 200, resp.StatusCode)
	head := make([]byte, len(events[0])+len(events[1]))
	_, err = io.ReadFull(resp.Body, head)
	require.NoError(t, err)
	assert.Equal(t, events[0]+events[1], string(head))
	start := time.Now()
	tail, err := io.ReadAll(resp.Body) // the proxy's read after the content frame waits
	assert.Equal(t, 30*time.Second, time.Since(start))
	require.Error(t, err, "the connection is closed without the chunked terminator")
	assert.Equal(t, 1, r.up.Count())
	assert.True(t, strings.HasPrefix(string(tail), `data: {"error":{"message":"recourse: recovery interrupted`), string(tail))
	assert.Contains(t, string(tail), "idle_timeout")
	r.logged(t, `"status":200,"outcome":"interrupted"`)
}

// TestHeaderTimeoutIsRetried: the first attempt's headers never come; the
// header limit ends it and the second attempt answers.
func TestHeaderTimeoutIsRetried(t *testing.T) {
	synctest.Test(t, testHeaderTimeoutIsRetried)
}

func testHeaderTimeoutIsRetried(t *testing.T) {
	gate := make(chan struct{})
	r := newMemoryRig(t, "openai", func(c *Config) {
		c.PerAttempt = stallLayer(t, stall.Limits{Header: 20 * time.Second})
	}, recoursetest.JSON(200, recoursetest.OpenAIChat("late")).Gated(-1, gate), recoursetest.JSON(200, recoursetest.OpenAIChat("ok")))
	defer close(gate)
	start := time.Now()
	got := r.post(t, "/v1/chat/completions", chatBody)
	assert.Equal(t, 20*time.Second, time.Since(start), "the upstream held the first attempt's headers until the limit")
	require.NoError(t, got.err)
	assert.Equal(t, 200, got.status)
	assert.Equal(t, recoursetest.OpenAIChat("ok"), got.body)
	assert.Equal(t, 2, r.up.Count())
	assert.Equal(t, []time.Duration{100 * time.Millisecond}, r.sleeps.all())
	r.logged(t, `"msg":"request"`)
	assert.Contains(t, r.logs.String(), `"stall":"header_timeout"`)
}

func TestProviderHints(t *testing.T) {
	overloaded := recoursetest.OpenAIError("server_error", "server_error", "The server is overloaded.")
	hints := func(c *Config) { c.Policy.ProviderHints = true }
	t.Run("x-should-retry false", func(t *testing.T) {
		r := newRig(t, "openai", hints, recoursetest.JSON(503, overloaded, "x-should-retry", "false"), recoursetest.JSON(200, recoursetest.OpenAIChat("never")))
		got := r.post(t, "/v1/chat/completions", chatBody)
		assert.Equal(t, 503, got.status)
		assert.Equal(t, overloaded, got.body)
		assert.Equal(t, 1, r.up.Count(), "the provider said not to resend")
		assert.Equal(t, "false", got.header.Get("X-Should-Retry"))
		assert.Equal(t, "interrupted", got.header.Get("X-Recourse-Outcome"))
		r.logged(t, `"msg":"request"`)
		assert.Contains(t, r.logs.String(), `"reason":"provider_no_retry"`)
		assert.Contains(t, r.logs.String(), `"hint":"x_should_retry_false"`)
	})
	t.Run("x-should-retry false without hints", func(t *testing.T) {
		r := newRig(t, "openai", nil, recoursetest.JSON(503, overloaded, "x-should-retry", "false"), recoursetest.JSON(200, recoursetest.OpenAIChat("ok")))
		got := r.post(t, "/v1/chat/completions", chatBody)
		assert.Equal(t, 200, got.status)
		assert.Equal(t, 2, r.up.Count(), "off by default: the status decides")
	})
	t.Run("retry-after-ms", func(t *testing.T) {
		r := newRig(t, "openai", hints, recoursetest.JSON(503, overloaded, "retry-after-ms", "1500"), recoursetest.JSON(200, recoursetest.OpenAIChat("ok")))
		got := r.post(t, "/v1/chat/completions", chatBody)
		assert.Equal(t, 200, got.status)
		assert.Equal(t, []time.Duration{1500 * time.Millisecond}, r.sleeps.all(), "the hint is the delay's minimum")
		r.logged(t, `"msg":"request"`)
		assert.Contains(t, r.logs.String(), `"retry_after":"milliseconds","retry_after_header":"retry-after-ms","retry_after_ms":1500`)
	})
	t.Run("insufficient_quota", func(t *testing.T) {
		body := recoursetest.OpenAIError("insufficient_quota", "insufficient_quota", "You exceeded your current quota.")
		r := newRig(t, "openai", hints, recoursetest.JSON(429, body), recoursetest.JSON(200, recoursetest.OpenAIChat("never")))
		got := r.post(t, "/v1/chat/completions", chatBody)
		assert.Equal(t, 429, got.status)
		assert.Equal(t, body, got.body, "the SDK gets the provider's own error")
		assert.Equal(t, 1, r.up.Count(), "not a rate limit: not retried")
		r.logged(t, `"msg":"request"`)
		assert.Contains(t, r.logs.String(), `"reason":"insufficient_quota"`)
		assert.Contains(t, r.logs.String(), `"hint":"insufficient_quota"`)
	})
}

// TestQuotaExhausted: with a quota of one resend a window, the second
// resend is refused; the client gets the final upstream answer marked
// quota_exhausted, or the proxy's 503 when there was none.
func TestQuotaExhausted(t *testing.T) {
	overloaded := recoursetest.OpenAIError("server_error", "server_error", "The server is overloaded.")
	t.Run("after an HTTP failure", func(t *testing.T) {
		q := privateQuota(t, quota.WithRatio(0), quota.WithFloor(1))
		r := newRig(t, "openai", func(c *Config) { c.Quota = q },
			recoursetest.JSON(503, overloaded), recoursetest.JSON(503, overloaded), recoursetest.JSON(200, recoursetest.OpenAIChat("never")))
		got := r.post(t, "/v1/chat/completions", chatBody)
		assert.Equal(t, 503, got.status)
		assert.Equal(t, overloaded, got.body)
		assert.Equal(t, "false", got.header.Get("X-Should-Retry"))
		assert.Equal(t, "quota_exhausted", got.header.Get("X-Recourse-Outcome"))
		assert.Equal(t, "0", got.header.Get("X-Recourse-Quota-Remaining"))
		assert.Equal(t, 2, r.up.Count())
		r.logged(t, `"msg":"request"`)
		host := strings.TrimPrefix(r.up.URL, "http://")
		assert.Contains(t, r.logs.String(), `"type":"quota_refused"`)
		assert.Contains(t, r.logs.String(), `"text":"retry quota for `+host+` exhausted: 1 resend in the last 60 s"`)
		assert.Contains(t, r.logs.String(), `"status":503,"outcome":"quota_exhausted"`)
	})
	t.Run("after transport failures", func(t *testing.T) {
		q := privateQuota(t, quota.WithRatio(0), quota.WithFloor(1))
		r := newRig(t, "openai", func(c *Config) { c.Quota = q }, recoursetest.Reset(), recoursetest.Reset(), recoursetest.Reset())
		got := r.post(t, "/v1/chat/completions", chatBody)
		assert.Equal(t, 503, got.status)
		assert.Equal(t, "quota_exhausted", got.header.Get("X-Recourse-Outcome"))
		assert.Equal(t, "false", got.header.Get("X-Should-Retry"))
		assert.Contains(t, got.body, `"code":"quota_exhausted"`)
		assert.Contains(t, got.body, "retry quota for "+strings.TrimPrefix(r.up.URL, "http://")+" exhausted: 1 resend in the last 60 s")
		assert.Equal(t, "0", got.header.Get("X-Recourse-Quota-Remaining"))
		assert.Equal(t, 2, r.up.Count())
	})
	t.Run("remaining, by model", func(t *testing.T) {
		q := privateQuota(t, quota.WithRatio(0), quota.WithFloor(2), quota.ByModel())
		r := newRig(t, "openai", func(c *Config) { c.Quota = q; c.Policy.MaxAttempts = 2 },
			recoursetest.JSON(503, overloaded), recoursetest.JSON(503, overloaded))
		got := r.post(t, "/v1/chat/completions", chatBody)
		assert.Equal(t, "exhausted", got.header.Get("X-Recourse-Outcome"))
		assert.Equal(t, "1", got.header.Get("X-Recourse-Quota-Remaining"), "the failed resend stays counted against gpt-4o-mini's quota")
	})
	t.Run("chain order", func(t *testing.T) {
		h, err := New(Config{Provider: "openai", Upstream: "http://127.0.0.1:1", Quota: privateQuota(t),
			PerAttempt: stallLayer(t, stall.Limits{Idle: time.Minute})})
		require.NoError(t, err)
		assert.Equal(t, "quota > client-retries > retry > capture > progress > stall > redirectguard > sender", h.chain.Order())
	})
}

// TestSharedCooldown: a Retry-After seen by one call holds the first
// attempt of the next one, from another client, until its horizon.
func TestSharedCooldown(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	q := privateQuota(t)
	r := newRig(t, "openai", func(c *Config) {
		c.Quota = q
		c.Policy.WallClock = func() time.Time { return t0 }
	}, recoursetest.JSON(429, recoursetest.OpenAIError("rate_limit_exceeded", "rate_limit_exceeded", "slow down"), "Retry-After", "2"),
		recoursetest.JSON(200, recoursetest.OpenAIChat("one")), recoursetest.JSON(200, recoursetest.OpenAIChat("two")))
	assert.Equal(t, 200, r.post(t, "/v1/chat/completions", chatBody).status)
	got := r.post(t, "/v1/chat/completions", chatBody)
	assert.Equal(t, 200, got.status)
	assert.Equal(t, recoursetest.OpenAIChat("two"), got.body)
	assert.Equal(t, []time.Duration{2 * time.Second, 2 * time.Second}, r.sleeps.all(), "the resend and the next call's first attempt wait for the horizon")
	assert.Equal(t, 3, r.up.Count())
	r.logged(t, `"type":"cooldown_wait"`)
	assert.Contains(t, r.logs.String(), `"type":"cooldown_wait"`)
	assert.Regexp(t, `"type":"cooldown_wait".*"delay_ms":2000`, r.logs.String())
}

// TestSharedCooldownNoticeOnAStream: a stream held by the shared cooldown
// announces the wait once its response is committed.
func TestSharedCooldownNoticeOnAStream(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	q := privateQuota(t)
	events := recoursetest.OpenAIStream("Hel", "lo")
	r := newRig(t, "openai", func(c *Config) {
		c.Quota = q
		c.Policy.WallClock = func() time.Time { return t0 }
		c.StreamCommitAfter = time.Nanosecond
	}, recoursetest.JSON(429, recoursetest.OpenAIError("rate_limit_exceeded", "rate_limit_exceeded", "slow down"), "Retry-After", "2"),
		recoursetest.JSON(200, recoursetest.OpenAIChat("one")), recoursetest.SSE(events...))
	assert.Equal(t, 200, r.post(t, "/v1/chat/completions", chatBody).status)
	got := r.post(t, "/v1/chat/completions", streamBody)
	require.NoError(t, got.err)
	assert.Equal(t, 200, got.status)
	assert.Equal(t, ": waiting for the upstream's shared cooldown (attempt 1/4 in 2.0s)\n"+strings.Join(events, ""), got.body)
}

// TestClientRetriesAreChargedAsResends: a request marked by its SDK as a
// retry (X-Stainless-Retry-Count above 0) deposits nothing and withdraws a
// resend; refused, it never reaches the upstream; succeeded, it is
// refunded.
func TestClientRetriesAreChargedAsResends(t *testing.T) {
	q := privateQuota(t, quota.WithRatio(1), quota.WithFloor(0)) // one resend per call in the window
	overloaded := recoursetest.OpenAIError("server_error", "server_error", "The server is overloaded.")
	ok := recoursetest.JSON(200, recoursetest.OpenAIChat("ok"))
	r := newRig(t, "openai", func(c *Config) {
		c.Quota = q
		c.Policy.MaxAttempts = 1 // the proxy itself resends nothing: only the clients' retries count
		c.RepeatWindow = -1      // the quota's charge alone: the memory of final answers (R21.3) would answer these repeats
	}, ok, recoursetest.JSON(503, overloaded), ok, ok, recoursetest.JSON(503, overloaded))
	retry := func(n string) result {
		return r.post(t, "/v1/chat/completions", chatBody, "X-Stainless-Retry-Count", n)
	}
	first := r.post(t, "/v1/chat/completions", chatBody)
	assert.Equal(t, 200, first.status)
	assert.Equal(t, "1", first.header.Get("X-Recourse-Quota-Remaining"), "a call: 1 resend allowed")
	assert.Equal(t, 503, retry("1").status, "a client retry: charged, sent, failed (kept)")
	assert.Equal(t, 2, r.up.Count())

	got := retry("2")
	assert.Equal(t, 503, got.status)
	assert.Equal(t, 2, r.up.Count(), "refused before the upstream: the charged retry did not deposit")
	assert.Equal(t, "quota_exhausted", got.header.Get("X-Recourse-Outcome"))
	assert.Equal(t, "false", got.header.Get("X-Should-Retry"))
	assert.Equal(t, "0", got.header.Get("X-Recourse-Quota-Remaining"))
	assert.Contains(t, got.body, `"code":"quota_exhausted"`)
	assert.Contains(t, got.body, "recourse-proxy: not sent: the request is a client retry (X-Stainless-Retry-Count above 0), charged as a resend, and the retry quota for "+
		strings.TrimPrefix(r.up.URL, "http://")+" exhausted: 1 resend in the last 60 s")
	r.logged(t, `"status":503,"outcome":"quota_exhausted","client_retry":true`)

	assert.Equal(t, 200, r.post(t, "/v1/chat/completions", chatBody, "X-Stainless-Retry-Count", "0").status, "0 is a first request: a call, 2 resends allowed")
	assert.Equal(t, 200, retry("1").status, "charged, succeeded: refunded")
	assert.Equal(t, 503, retry("1").status, "allowed only because the last one was refunded")
	assert.Equal(t, 5, r.up.Count())
	assert.Equal(t, 503, retry("3").status)
	assert.Equal(t, 5, r.up.Count(), "refused")
}

// TestClientRetryWithoutQuotaIsACall: without a quota the marker changes
// nothing.
func TestClientRetryWithoutQuotaIsACall(t *testing.T) {
	r := newRig(t, "openai", nil, recoursetest.JSON(200, recoursetest.OpenAIChat("ok")))
	got := r.post(t, "/v1/chat/completions", chatBody, "X-Stainless-Retry-Count", "5")
	assert.Equal(t, 200, got.status)
	assert.Empty(t, got.header.Values("X-Recourse-Quota-Remaining"), "no quota, no header")
	r.logged(t, `"msg":"request"`)
	assert.NotContains(t, r.logs.String(), "client_retry")
}

// R21.1: the proxy's event lines are the lines eventlog writes for the same
// events — one mapping, with the stall, hint and Retry-After header fields
// included — so a reader of the proxy's log and of a library's log learns
// one format.
func TestR21_1_EventLinesAreEventlogLines(t *testing.T) {
	noTime := &slog.HandlerOptions{Level: slog.LevelDebug, ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
		if a.Key == slog.TimeKey {
			return slog.Attr{}
		}
		return a
	}}
	var proxyLog, libraryLog syncBuffer
	r := newRig(t, "openai", func(c *Config) {
		c.Logger = slog.New(slog.NewJSONHandler(&proxyLog, noTime))
		c.Policy.ProviderHints = true
		c.Policy.OnEvent = eventlog.New(slog.New(slog.NewJSONHandler(&libraryLog, noTime)))
	}, recoursetest.JSON(503, recoursetest.OpenAIError("server_error", "", "overloaded"), "retry-after-ms", "150"),
		recoursetest.JSON(200, recoursetest.OpenAIChat("ok")))
	got := r.post(t, "/v1/chat/completions", chatBody)
	require.Equal(t, 200, got.status)

	var events []string
	for line := range strings.Lines(proxyLog.String()) {
		if strings.Contains(line, `"msg":"`+eventlog.Message+`"`) {
			events = append(events, line)
		}
	}
	want := slices.Collect(strings.Lines(libraryLog.String()))
	require.Len(t, want, 6, "attempt_started, attempt_failed, delay_scheduled, retry_started, attempt_started, attempt_succeeded")
	assert.Equal(t, want, events)
	assert.Contains(t, want[1], `"retry_after":"milliseconds","retry_after_header":"retry-after-ms","retry_after_ms":150`)
}
