package quota_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/recourse-dev/recourse/event"
	"github.com/recourse-dev/recourse/layers/quota"
	"github.com/recourse-dev/recourse/layers/retry"
)

// A Retry-After seen by one chain sets the upstream's horizon in the
// store, and a chain with another quota layer over the same store holds
// its first attempt until then (cooldown_wait).
func TestR18_4_RetryAfterDelaysOtherChains(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := quota.NewMemoryStore()
		p := newProvider(t, rateLimited("5"), completion(), completion())
		a := newRig(t, p, mustQuota(t, quota.WithStore(store)), retry.Policy{MaxAttempts: 1})
		b := newRig(t, p, mustQuota(t, quota.WithStore(store)), retry.Policy{MaxAttempts: 1})
		assert.Equal(t, event.OutcomeExhausted, recoveryError(t, a.call()).Outcome)
		time.Sleep(time.Second)
		start := time.Now()
		require.NoError(t, b.call())
		assert.Equal(t, 4*time.Second, time.Since(start), "the first attempt waited for the horizon")
		evs := b.take()
		require.Greater(t, len(evs), 1)
		// The breaker of b's quota first sees the cooldown a set (R20.13).
		assert.Equal(t, event.Breaker, evs[0].Type)
		require.NotNil(t, evs[0].Breaker)
		assert.Equal(t, start.Add(4*time.Second), evs[0].Breaker.CooldownUntil)
		assert.False(t, evs[0].Breaker.Refusing)
		assert.Equal(t, event.CooldownWait, evs[1].Type)
		assert.Equal(t, 4*time.Second, evs[1].Delay)
		assert.Equal(t, 1, evs[1].NextAttempt)
		j, err := json.Marshal(evs[1])
		require.NoError(t, err)
		assert.Contains(t, string(j), `"delay_ms":4000`)
		// Once the horizon passed, nothing waits, and the breaker reports
		// the cooldown's end once.
		require.NoError(t, b.call())
		assert.Equal(t, []string{"breaker", "attempt_started", "attempt_succeeded"}, b.types())
	})
}

// A resend's delay is at least the time to the shared horizon: another
// process raised it while this call's attempt was failing.
func TestR18_4_ResendWaitsForHorizon(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := quota.NewMemoryStore()
		gate := make(chan struct{})
		p := newProvider(t, unavailable().Gated(-1, gate), completion())
		r := newRig(t, p, mustQuota(t, quota.WithStore(store)), retry.Policy{MaxAttempts: 2})
		start := time.Now()
		require.NoError(t, r.callHeldAt(p, 1, gate, func() {
			require.NoError(t, store.SetHorizon(context.Background(), memKey(p), time.Now().Add(4*time.Second)))
		}))
		assert.Equal(t, 4*time.Second, time.Since(start), "the resend was sent at the horizon")
		var delays []time.Duration
		for _, ev := range r.take() {
			if ev.Type == event.DelayScheduled {
				delays = append(delays, ev.Delay)
			}
		}
		assert.Equal(t, []time.Duration{4 * time.Second}, delays)
	})
}

// A horizon beyond the delay ceiling refuses the resend (delay_ceiling),
// one beyond the deadline ends it with deadline (R5.5, R7), and a first
// attempt is never held beyond them.
func TestR18_4_RefusedByCeilingAndDeadline(t *testing.T) {
	for _, tc := range []struct {
		name    string
		horizon time.Duration
		pol     retry.Policy
		want    event.Outcome
		text    string
	}{
		{"ceiling", 40 * time.Second, retry.Policy{MaxAttempts: 2}, event.OutcomeDelayCeiling,
			"recourse: no retry: the upstream's shared cooldown lasts beyond the delay ceiling; outcome delay_ceiling (HTTP 503, wire attempt 1)"},
		{"deadline", 10 * time.Second, retry.Policy{MaxAttempts: 2}, event.OutcomeDeadline,
			"recourse: no retry: the recovery budget or deadline ran out; outcome deadline (HTTP 503, wire attempt 1)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				store := quota.NewMemoryStore()
				p := newProvider(t, repeat(unavailable(), 2)...)
				require.NoError(t, store.SetHorizon(context.Background(), memKey(p), time.Now().Add(tc.horizon)))
				if tc.name == "deadline" {
					tc.pol.Deadline = time.Now().Add(5 * time.Second)
				}
				r := newRig(t, p, mustQuota(t, quota.WithStore(store)), tc.pol)
				start := time.Now()
				re := recoveryError(t, r.call())
				assert.Zero(t, time.Since(start), "nothing waited")
				assert.Equal(t, tc.want, re.Outcome)
				assert.Equal(t, tc.text, re.Error())
				assert.Equal(t, []string{"breaker", "attempt_started", "attempt_failed", "exhausted"}, r.types(), "the first attempt was not held")
				assert.Equal(t, 1, p.Count())
			})
		})
	}
}

// unavailableStore fails every shared operation, slowly when slow is set
// (until the operation's context ends).
type unavailableStore struct {
	slow bool
	mu   sync.Mutex
	keys []string
}

func (s *unavailableStore) fail(ctx context.Context, key string) error {
	s.mu.Lock()
	s.keys = append(s.keys, key)
	s.mu.Unlock()
	if s.slow {
		<-ctx.Done()
		return fmt.Errorf("%w: %w", quota.ErrUnavailable, ctx.Err())
	}
	return quota.ErrUnavailable
}
func (s *unavailableStore) Horizon(string) time.Time { return time.Time{} }
func (s *unavailableStore) SetHorizon(ctx context.Context, key string, _ time.Time) error {
	return s.fail(ctx, key)
}
func (s *unavailableStore) Peek(ctx context.Context, key string, _ time.Time, _ time.Duration) (int, error) {
	return 0, s.fail(ctx, key)
}
func (s *unavailableStore) Reserve(ctx context.Context, key string, _ time.Time, _ int, _ time.Duration) (quota.Reserved, error) {
	return quota.Reserved{}, s.fail(ctx, key)
}
func (s *unavailableStore) Refund(ctx context.Context, key, _ string) error { return s.fail(ctx, key) }

// A store that fails, or does not answer within the store timeout, fails
// open: the resend is decided by the process's ratio, the engine says so
// with quota_unavailable, and the completion succeeds.
func TestR18_5_StoreUnavailableFailsOpen(t *testing.T) {
	for _, slow := range []bool{false, true} {
		t.Run(fmt.Sprint("slow=", slow), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				p := newProvider(t, rateLimited("1"), completion())
				st := &unavailableStore{slow: slow}
				q := mustQuota(t, quota.WithStore(st), quota.WithFleetCap(10), quota.WithStoreTimeout(20*time.Millisecond))
				r := newRig(t, p, q, retry.Policy{MaxAttempts: 2})
				start := time.Now()
				require.NoError(t, r.call())
				assert.Equal(t, []string{"attempt_started", "attempt_failed", "quota_unavailable", "quota_unavailable", "quota_unavailable",
					"delay_scheduled", "retry_started", "attempt_started", "attempt_succeeded"}, r.types(),
					"the cooldown write, the peek and the reserve failed open")
				assert.Equal(t, 2, p.Count())
				wait := time.Second // the Retry-After
				if slow {
					wait += 3 * 20 * time.Millisecond // three store operations, each given up after the store timeout
				}
				assert.Equal(t, wait, time.Since(start))
			})
		})
	}
}

// recordingStore records every key a quota hands its store.
type recordingStore struct {
	*quota.MemoryStore
	mu   sync.Mutex
	keys []string
}

func (s *recordingStore) rec(k string) {
	s.mu.Lock()
	s.keys = append(s.keys, k)
	s.mu.Unlock()
}
func (s *recordingStore) Horizon(k string) time.Time { s.rec(k); return s.MemoryStore.Horizon(k) }
func (s *recordingStore) SetHorizon(ctx context.Context, k string, t time.Time) error {
	s.rec(k)
	return s.MemoryStore.SetHorizon(ctx, k, t)
}
func (s *recordingStore) Reserve(ctx context.Context, k string, now time.Time, limit int, w time.Duration) (quota.Reserved, error) {
	s.rec(k)
	return s.MemoryStore.Reserve(ctx, k, now, limit, w)
}

// Canary: keyed by credential and model, the quota's store keys, events
// and errors never contain the API key or the prompt.
func TestQuotaCanaryCredentialNeverInKeysEventsOrErrors(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newProvider(t, repeat(rateLimited("1"), 3)...)
		st := &recordingStore{MemoryStore: quota.NewMemoryStore()}
		q := mustQuota(t, quota.WithStore(st), quota.ByCredential(), quota.ByModel(), quota.WithFloor(1), quota.WithRatio(0))
		r := newRig(t, p, q, retry.Policy{MaxAttempts: 3})
		err := r.call()
		re := recoveryError(t, err)
		assert.Equal(t, event.OutcomeQuotaExhausted, re.Outcome)
		var safe []string
		safe = append(safe, err.Error(), fmt.Sprintf("%v %+v", err, err))
		b, jerr := json.Marshal(re)
		require.NoError(t, jerr)
		safe = append(safe, string(b))
		for _, ev := range r.take() {
			b, jerr := json.Marshal(ev)
			require.NoError(t, jerr)
			safe = append(safe, string(b), fmt.Sprintf("%+v", ev))
		}
		st.mu.Lock()
		safe = append(safe, st.keys...)
		require.NotEmpty(t, st.keys)
		assert.Contains(t, st.keys[0], "|model=gpt-test|cred=", "keyed by model and the credential's hash")
		st.mu.Unlock()
		for _, s := range safe {
			for _, canary := range []string{canaryKey, "canary", "recipe", "QUOTA-0123"} {
				assert.NotContains(t, s, canary)
			}
		}
	})
}

// Cancelling while a first attempt waits for the cooldown ends the call
// as cancelled with nothing sent (R9.2).
func TestR18_4_CancelDuringCooldownWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := quota.NewMemoryStore()
		p := newProvider(t, completion())
		require.NoError(t, store.SetHorizon(context.Background(), memKey(p), time.Now().Add(5*time.Second)))
		ctx, cancel := context.WithCancel(context.Background())
		r := newRig(t, p, mustQuota(t, quota.WithStore(store)), retry.Policy{MaxAttempts: 2})
		done := make(chan error, 1)
		go func() { done <- r.callCtx(ctx) }()
		synctest.Wait()
		assert.Equal(t, []string{"breaker", "cooldown_wait"}, r.types(), "the first attempt waits for the horizon")
		time.Sleep(time.Second)
		cancel()
		err := <-done
		re := recoveryError(t, err)
		assert.Equal(t, event.OutcomeCancelled, re.Outcome)
		assert.ErrorIs(t, err, context.Canceled)
		assert.Equal(t, []string{"cancelled"}, r.types())
		assert.Equal(t, 0, p.Count(), "nothing was sent")
		assert.Equal(t, event.AcceptanceNo, re.Failure.Acceptance)
	})
}

// WithoutCooldown keeps the quota's counting but shares no horizon: the
// Retry-After one chain saw neither holds another chain's first attempt
// nor lengthens its resend's delay, and nothing is written to the store.
func TestWithoutCooldownSharesNoHorizon(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := quota.NewMemoryStore()
		gate := make(chan struct{})
		p := newProvider(t, rateLimited("5"), unavailable().Gated(-1, gate), completion())
		a := newRig(t, p, mustQuota(t, quota.WithStore(store), quota.WithoutCooldown()), retry.Policy{MaxAttempts: 1})
		assert.Equal(t, event.OutcomeExhausted, recoveryError(t, a.call()).Outcome)
		assert.True(t, store.Horizon(memKey(p)).IsZero(), "a quota without cooldown writes no horizon")
		zero := time.Duration(0)
		b := newRig(t, p, mustQuota(t, quota.WithStore(store), quota.WithoutCooldown()), retry.Policy{MaxAttempts: 2, BaseDelay: &zero})
		start := time.Now()
		require.NoError(t, b.callHeldAt(p, 2, gate, func() {
			require.NoError(t, store.SetHorizon(context.Background(), memKey(p), time.Now().Add(20*time.Second)))
		}))
		assert.Zero(t, time.Since(start), "nothing waited for the horizon another process set")
		scheduled := 0
		for _, ev := range b.take() {
			assert.NotEqual(t, event.CooldownWait, ev.Type)
			if ev.Type == event.DelayScheduled {
				scheduled++
				assert.Less(t, ev.Delay, time.Second, "the horizon another process set is not a minimum here")
			}
		}
		assert.Equal(t, 1, scheduled, "the 503 was resent once")
	})
}
