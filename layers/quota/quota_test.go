package quota_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/recourse-dev/recourse/chain"
	"github.com/recourse-dev/recourse/codecs/openai"
	"github.com/recourse-dev/recourse/event"
	"github.com/recourse-dev/recourse/layer"
	"github.com/recourse-dev/recourse/layers/quota"
	"github.com/recourse-dev/recourse/layers/retry"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func recoveryError(t *testing.T, err error) *layer.RecoveryError {
	t.Helper()
	var re *layer.RecoveryError
	require.True(t, errors.As(err, &re), "a *layer.RecoveryError, got %v", err)
	return re
}

// The peek comes before admission: a quota that is empty refuses with
// quota_exhausted and the admission hook is never asked (R10.4, R11.2).
func TestR18_2_PeekRefusesBeforeAdmission(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newProvider(t, repeat(unavailable(), 3)...)
		q := mustQuota(t, quota.WithFloor(0), quota.WithRatio(0), quota.WithStore(quota.NewMemoryStore()))
		var asked atomic.Int64
		r := newRig(t, p, q, retry.Policy{MaxAttempts: 3, Admit: func(context.Context, layer.AdmissionRequest) (layer.Decision, error) {
			asked.Add(1)
			return layer.Allow, nil
		}})
		err := r.call()
		re := recoveryError(t, err)
		assert.Equal(t, event.OutcomeQuotaExhausted, re.Outcome)
		assert.Equal(t, 1, p.Count(), "no resend")
		assert.Zero(t, asked.Load(), "admission is not asked about a resend the quota refuses")
		evs := r.take()
		var types []string
		for _, ev := range evs {
			types = append(types, string(ev.Type))
		}
		assert.Equal(t, []string{"attempt_started", "attempt_failed", "quota_refused", "breaker", "exhausted"}, types)
		require.NotNil(t, evs[2].Quota)
		assert.Equal(t, 2, evs[2].NextAttempt)
		host := strings.TrimPrefix(p.URL, "http://")
		assert.Equal(t, &event.QuotaRefusal{Upstream: host, Resends: 0, Window: 60 * time.Second}, evs[2].Quota)
		require.NotNil(t, re.Quota)
		assert.Equal(t, "recourse: not retried: retry quota for "+host+" exhausted: 0 resends in the last 60 s; outcome quota_exhausted (HTTP 503, wire attempt 1)", re.Error())
		assert.Len(t, re.History, 1, "the history is kept")
		assert.Equal(t, 503, re.Failure.HTTPStatus, "the final failure is kept")
		b, err := json.Marshal(re)
		require.NoError(t, err)
		assert.Contains(t, string(b), `"quota":{"upstream":"`+host+`","resends":0,"window_ms":60000}`)
	})
}

// The reserve after admission is atomic: a resend that lost the race for
// the last withdrawal while its hook was deciding is quota_exhausted, and
// an explicit Allow does not override the quota.
func TestR18_2_ReserveLostRaceAfterAllow(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newProvider(t, repeat(unavailable(), 4)...)
		q := mustQuota(t, quota.WithFloor(1), quota.WithRatio(0), quota.WithStore(quota.NewMemoryStore()))
		other := newRig(t, p, q, retry.Policy{MaxAttempts: 2})
		var otherErr error
		r := newRig(t, p, q, retry.Policy{MaxAttempts: 2, Admit: func(context.Context, layer.AdmissionRequest) (layer.Decision, error) {
			// While this hook decides, another call takes the only resend.
			otherErr = other.call()
			return layer.Allow, nil
		}})
		re := recoveryError(t, r.call())
		assert.Equal(t, event.OutcomeExhausted, recoveryError(t, otherErr).Outcome, "its failed resend stays counted")
		assert.Equal(t, event.OutcomeQuotaExhausted, re.Outcome)
		assert.Equal(t, []string{"attempt_started", "attempt_failed", "admission_pending", "admission_allowed", "quota_refused", "breaker", "exhausted"}, r.types())
		assert.Equal(t, []string{"attempt_started", "attempt_failed", "delay_scheduled", "retry_started", "attempt_started", "attempt_failed", "exhausted"}, other.types())
		assert.Equal(t, 3, p.Count())
		require.NotNil(t, re.Quota, "a quota refused")
		assert.Equal(t, 1, re.Quota.Resends)
	})
}

// Each logical call deposits and each resend withdraws: with a floor of 0
// and ratio 0.2, five calls pay for one resend, and the window refills.
func TestR18_1_RatioAndWindowRefill(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newProvider(t, repeat(unavailable(), 20)...)
		q := mustQuota(t, quota.WithFloor(0), quota.WithStore(quota.NewMemoryStore()))
		r := newRig(t, p, q, retry.Policy{MaxAttempts: 2, BaseDelay: new(time.Duration)})
		outcomes := func(n int) (exhausted, refused int) {
			for range n {
				switch recoveryError(t, r.call()).Outcome {
				case event.OutcomeExhausted:
					exhausted++
				case event.OutcomeQuotaExhausted:
					refused++
				}
			}
			return
		}
		// Calls 1..4: 0.2 × calls < 1 allows nothing; call 5 deposits the
		// fifth call and may resend; calls 6..9 may not (1 resend of 0.2 × 9).
		ex, ref := outcomes(9)
		assert.Equal(t, 1, ex)
		assert.Equal(t, 8, ref)
		assert.Equal(t, 9+1, p.Count())
		// A window later the old calls and resends no longer count.
		time.Sleep(61 * time.Second)
		ex, ref = outcomes(4)
		assert.Equal(t, 0, ex)
		assert.Equal(t, 4, ref)
		ex, _ = outcomes(1)
		assert.Equal(t, 1, ex, "the fifth call of the new window pays for a resend")
	})
}

// A resend that succeeded is refunded (AWS's quota): a floor of one resend
// serves any number of calls whose resends succeed.
func TestR18_2_RefundsSucceededResend(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newProvider(t, alternate(5)...)
		q := mustQuota(t, quota.WithFloor(1), quota.WithRatio(0), quota.WithStore(quota.NewMemoryStore()))
		r := newRig(t, p, q, retry.Policy{MaxAttempts: 2})
		for i := range 5 {
			require.NoError(t, r.call(), "call %d", i)
		}
		assert.Equal(t, 10, p.Count())
	})
}

// A failed resend stays counted: the next call is refused.
func TestR18_2_FailedResendStaysCounted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newProvider(t, repeat(unavailable(), 3)...)
		q := mustQuota(t, quota.WithFloor(1), quota.WithRatio(0), quota.WithStore(quota.NewMemoryStore()))
		r := newRig(t, p, q, retry.Policy{MaxAttempts: 3})
		re := recoveryError(t, r.call())
		assert.Equal(t, event.OutcomeQuotaExhausted, re.Outcome, "the second resend of the call is refused")
		assert.Equal(t, 2, p.Count())
		require.NotNil(t, re.Quota, "a quota refused")
		assert.Equal(t, 1, re.Quota.Resends)
		assert.Len(t, re.History, 2)
		re = recoveryError(t, r.call())
		assert.Equal(t, event.OutcomeQuotaExhausted, re.Outcome)
		assert.Equal(t, 3, p.Count())
	})
}

// Unlimited allows every resend.
func TestQuotaUnlimited(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newProvider(t, repeat(unavailable(), 12)...)
		q := mustQuota(t, quota.Unlimited(), quota.WithFloor(0), quota.WithRatio(0), quota.WithStore(quota.NewMemoryStore()))
		r := newRig(t, p, q, retry.Policy{MaxAttempts: 4})
		for range 3 {
			assert.Equal(t, event.OutcomeExhausted, recoveryError(t, r.call()).Outcome)
		}
		assert.Equal(t, 12, p.Count())
	})
}

// Several chains sharing one quota hold the ratio across them.
func TestQuotaSharedAcrossChainsHoldsRatio(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const calls = 100
		p := newProvider(t, repeat(unavailable(), 4*calls)...)
		q := mustQuota(t, quota.WithStore(quota.NewMemoryStore()))
		var rigs []*rig
		for range 4 {
			rigs = append(rigs, newRig(t, p, q, retry.Policy{MaxAttempts: 4}))
		}
		done := make(chan struct{})
		for _, r := range rigs {
			go func() {
				defer func() { done <- struct{}{} }()
				for range calls / len(rigs) {
					_ = r.call()
				}
			}()
		}
		for range rigs {
			<-done
		}
		resends := p.Count() - calls
		assert.LessOrEqual(t, resends, max(3, calls/5), "resends within max(floor, 0.2 × calls)")
		assert.GreaterOrEqual(t, resends, calls/5, "the quota is used, not starved")
	})
}

// Options are validated.
func TestQuotaOptionsValidated(t *testing.T) {
	for name, o := range map[string]quota.Option{"WithRatio": quota.WithRatio(-1), "WithWindow": quota.WithWindow(0),
		"WithFloor": quota.WithFloor(-1), "WithFleetCap": quota.WithFleetCap(-1), "WithStore": quota.WithStore(nil),
		"WithStoreTimeout": quota.WithStoreTimeout(0), "nil": nil} {
		l, err := quota.New(o)
		var ce *quota.ConfigError
		require.ErrorAs(t, err, &ce, name)
		assert.Equal(t, name, ce.Option)
		assert.Nil(t, l, name)
	}
}

// R3.5: an option cannot fail; New names the first invalid option, also
// when valid options follow it, and returns no layer.
func TestR3_5_QuotaNewNamesTheFirstInvalidOption(t *testing.T) {
	l, err := quota.New(quota.WithFloor(1), quota.WithWindow(time.Millisecond), quota.WithRatio(-1), nil, quota.WithFloor(2))
	var ce *quota.ConfigError
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, "WithWindow", ce.Option)
	assert.Equal(t, "quota: invalid option WithWindow", err.Error())
	assert.Nil(t, l)
}

// The upstream is scheme://host:port: a default port and its absence are
// one upstream, and the safe name leaves the default port out.
func TestQuotaUpstreamKey(t *testing.T) {
	q := mustQuota(t, quota.WithFloor(0), quota.WithRatio(0), quota.WithStore(quota.NewMemoryStore()))
	v := q.Bind(mustURL(t, "https://api.openai.com/v1/chat/completions"), "", nil).Peek(context.Background())
	require.NotNil(t, v.Refusal)
	assert.Equal(t, "api.openai.com", v.Refusal.Upstream)
	v = q.Bind(mustURL(t, "http://user:pw@127.0.0.1:11434/api/chat"), "", nil).Peek(context.Background())
	assert.Equal(t, "127.0.0.1:11434", v.Refusal.Upstream, "never the userinfo")
}

// A drop-in caller (an SDK's http.Client, no layer.Call) gets the final
// failure response marked so that its SDK does not retry on top (R10.4).
func TestR18_3_DropInGetsTheFinalResponse(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newProvider(t, repeat(unavailable(), 3)...)
		q := mustQuota(t, quota.WithFloor(0), quota.WithRatio(0), quota.WithStore(quota.NewMemoryStore()))
		ch, err := chain.Default(openai.New(), chain.WithPolicy(retry.Policy{MaxAttempts: 3}), chain.WithPerCall(q),
			chain.WithTransport(p.Transport()))
		require.NoError(t, err)
		resp, err := (&http.Client{Transport: ch}).Post(p.URL+"/v1/chat/completions", "application/json",
			strings.NewReader(`{"model":"gpt-test","messages":[{"role":"user","content":"hi"}]}`))
		require.NoError(t, err)
		defer resp.Body.Close()
		assert.Equal(t, 503, resp.StatusCode)
		assert.Equal(t, "false", resp.Header.Get(retry.HeaderShouldRetry))
		assert.Equal(t, "quota_exhausted", resp.Header.Get(retry.HeaderOutcome))
		assert.Equal(t, 1, p.Count())
	})
}

// A reservation whose resend is never sent (here its delay runs past the
// deadline) is refunded: the next call may still resend.
func TestR18_2_UnsentResendIsRefunded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newProvider(t, unavailable("Retry-After", "10"), unavailable(), completion())
		q := mustQuota(t, quota.WithFloor(1), quota.WithRatio(0), quota.WithStore(quota.NewMemoryStore()))
		a := newRig(t, p, q, retry.Policy{MaxAttempts: 2, Deadline: time.Now().Add(5 * time.Second)})
		assert.Equal(t, event.OutcomeDeadline, recoveryError(t, a.call()).Outcome)
		time.Sleep(11 * time.Second) // past the Retry-After's shared horizon
		b := newRig(t, p, q, retry.Policy{MaxAttempts: 2})
		require.NoError(t, b.call(), "the unsent resend was refunded")
		assert.Equal(t, 3, p.Count())
	})
}

// TestQuotaRemaining: Remaining follows deposits, withdrawals, refunds and
// the window, per key, without reserving anything.
func TestQuotaRemaining(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := mustQuota(t, quota.WithFloor(1), quota.WithRatio(0.5), quota.WithStore(quota.NewMemoryStore()), quota.ByModel())
		u, _ := url.Parse("https://api.openai.com/v1/chat/completions")
		assert.Equal(t, time.Minute, q.Window())
		assert.Equal(t, 1, q.Remaining(u, "a", nil), "the floor")
		g := q.Bind(u, "a", nil)
		for range 4 {
			g.Deposit()
		}
		assert.Equal(t, 2, q.Remaining(u, "a", nil), "0.5 × 4 calls")
		assert.Equal(t, 2, q.Remaining(u, "a", nil), "reading reserves nothing")
		res, v := g.Reserve(context.Background())
		require.Nil(t, v.Refusal)
		assert.Equal(t, 1, q.Remaining(u, "a", nil))
		assert.Equal(t, 1, q.Remaining(u, "b", nil), "another model: its own quota")
		res.Settle(true)
		assert.Equal(t, 2, q.Remaining(u, "a", nil), "refunded")
		for range 2 {
			_, v = g.Reserve(context.Background())
			require.Nil(t, v.Refusal)
		}
		assert.Equal(t, 0, q.Remaining(u, "a", nil))
		_, v = g.Reserve(context.Background())
		assert.NotNil(t, v.Refusal, "0 remaining: refused")
		time.Sleep(61 * time.Second)
		assert.Equal(t, 1, q.Remaining(u, "a", nil), "a window later: the floor again")

		unlimited := mustQuota(t, quota.Unlimited(), quota.WithStore(quota.NewMemoryStore()))
		assert.Equal(t, -1, unlimited.Remaining(u, "", nil))
	})
}

// Models and credentials come from callers: past MaxNarrowedKeys distinct
// combinations a new one shares its upstream's own quota, so a caller
// sending random model names cannot grow the layer without bound.
func TestNarrowedKeysAreBounded(t *testing.T) {
	q := mustQuota(t, quota.WithFloor(1), quota.WithRatio(0.5), quota.WithStore(quota.NewMemoryStore()), quota.ByModel())
	u, _ := url.Parse("https://api.openai.com/v1/chat/completions")
	for i := range quota.MaxNarrowedKeys {
		q.Bind(u, fmt.Sprintf("model-%d", i), nil)
	}
	g := q.Bind(u, "one-more", nil)
	for range 4 {
		g.Deposit()
	}
	assert.Equal(t, 2, q.Remaining(u, "yet-another", nil), "both new models share the upstream's quota: 0.5 × 4 calls")
	assert.Equal(t, 2, q.Remaining(u, "", nil), "which is the plain upstream's")
	assert.Equal(t, 1, q.Remaining(u, "model-0", nil), "a model bound before the bound keeps its own quota")
}

// A ratio too large for the window's count ("no practical limit") allows
// more than the floor, never less.
func TestHugeRatioIsNoLimit(t *testing.T) {
	q := mustQuota(t, quota.WithFloor(3), quota.WithRatio(1e19), quota.WithStore(quota.NewMemoryStore()))
	u, _ := url.Parse("https://api.openai.com/v1/chat/completions")
	g := q.Bind(u, "", nil)
	for range 5 {
		g.Deposit()
	}
	assert.Greater(t, q.Remaining(u, "", nil), 1000)
}
