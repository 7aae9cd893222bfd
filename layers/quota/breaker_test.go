package quota_test

import (
	"context"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/recourse-dev/recourse/chain"
	"github.com/recourse-dev/recourse/chat"
	"github.com/recourse-dev/recourse/client"
	"github.com/recourse-dev/recourse/codecs/openai"
	"github.com/recourse-dev/recourse/event"
	"github.com/recourse-dev/recourse/layers/quota"
	"github.com/recourse-dev/recourse/layers/retry"
	"github.com/recourse-dev/recourse/recoursetest"
)

// breakers returns the breaker events of evs.
func breakers(t *testing.T, evs []event.Event) []event.BreakerState {
	var out []event.BreakerState
	for _, ev := range evs {
		if ev.Type == event.Breaker {
			require.NotNil(t, ev.Breaker)
			out = append(out, *ev.Breaker)
		}
	}
	return out
}

// The quota's breaker is in view (R20.13): a breaker event once per change
// — resends refused, a cooldown raised, each ended — not per call, and a
// snapshot per upstream with the failures counted.
func TestR20_13_BreakerChangesAreEventsOncePerChange(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newProvider(t, unavailable(), unavailable(), rateLimited("30"), completion())
		q := mustQuota(t, quota.WithFloor(0), quota.WithRatio(0), quota.WithStore(quota.NewMemoryStore()))
		r := newRig(t, p, q, retry.Policy{MaxAttempts: 2})
		host := strings.TrimPrefix(p.URL, "http://")

		// Two calls whose resend is refused: one change, one event.
		assert.Equal(t, event.OutcomeQuotaExhausted, recoveryError(t, r.call()).Outcome)
		assert.Equal(t, event.OutcomeQuotaExhausted, recoveryError(t, r.call()).Outcome)
		b := breakers(t, r.take())
		require.Len(t, b, 1, "a change is reported once, not per call")
		assert.Equal(t, event.BreakerState{Upstream: host, Refusing: true}, b[0], "reported as the first call's resend is refused, before it ends")

		// A Retry-After raises the cooldown: one more change.
		now := time.Now()
		assert.Equal(t, event.OutcomeQuotaExhausted, recoveryError(t, r.call()).Outcome)
		b = breakers(t, r.take())
		require.Len(t, b, 1)
		assert.Equal(t, now.Add(30*time.Second), b[0].CooldownUntil)
		assert.True(t, b[0].Open(now))
		snap := q.Breakers(time.Now())
		require.Len(t, snap, 1)
		assert.Equal(t, event.BreakerState{Upstream: host, Refusing: true, CooldownUntil: now.Add(30 * time.Second), Failures: 3}, snap[0])

		// Once the cooldown ran out the next call reports it, and succeeds.
		time.Sleep(31 * time.Second)
		require.NoError(t, r.call())
		b = breakers(t, r.take())
		require.Len(t, b, 1)
		assert.True(t, b[0].CooldownUntil.IsZero())
		assert.Equal(t, int64(3), q.Breakers(time.Now())[0].Failures, "a success is no failure")
	})
}

// A stream that failed after its 200 counts as a failure of its upstream.
func TestR20_13_StreamFailedAfterItsHeadersCountsAsAFailure(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		events := recoursetest.OpenAIStream("partial ", "answer")
		cut := recoursetest.SSE(events...).Cut(len(events[0]) + len(events[1]) + 4)
		srv := newProvider(t, cut)
		q := mustQuota(t, quota.WithStore(quota.NewMemoryStore()))
		ch, err := chain.Default(openai.New(), chain.WithPolicy(retry.Policy{MaxAttempts: 3}), chain.WithPerCall(q), chain.WithTransport(srv.Transport()))
		require.NoError(t, err)
		cl, err := client.New(srv.URL, ch)
		require.NoError(t, err)
		var serr error
		for _, err := range cl.Stream(context.Background(), &chat.Request{Model: "gpt-test", Stream: true, Messages: []chat.Message{{Role: chat.User, Content: "hi"}}}) {
			if err != nil {
				serr = err
			}
		}
		require.Error(t, serr)
		snap := q.Breakers(time.Now())
		require.Len(t, snap, 1)
		assert.Equal(t, int64(1), snap[0].Failures)
	})
}
