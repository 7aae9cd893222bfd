package redisstore_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/recourse-dev/recourse/event"
	"github.com/recourse-dev/recourse/layer"
	"github.com/recourse-dev/recourse/layers/quota"
	"github.com/recourse-dev/recourse/layers/retry"
	"github.com/recourse-dev/recourse/redisstore"
)

const hour = time.Hour // a refresh that never ticks during a test

// Each operation is one script on keys that expire: the horizon only
// rises and expires at itself, the cap's set expires a window after its
// last reservation, a refund frees a place, and nothing stays.
func TestStoreOperations(t *testing.T) {
	srv := startRedis(t)
	s, _ := newStore(t, srv.addr(), redisstore.WithRefresh(hour))
	raw := redis.NewClient(&redis.Options{Addr: srv.addr()})
	defer raw.Close()
	ctx := context.Background()
	key := "https://api.example.com:443"
	now := time.Now()

	require.NoError(t, s.SetHorizon(ctx, key, now.Add(5*time.Second)))
	require.NoError(t, s.SetHorizon(ctx, key, now.Add(time.Second)))
	v, err := raw.Get(ctx, "recourse:quota:{"+key+"}:horizon").Int64()
	require.NoError(t, err)
	assert.Equal(t, now.Add(5*time.Second).UnixMilli(), v, "never lowered")
	ttl := raw.PTTL(ctx, "recourse:quota:{"+key+"}:horizon").Val()
	assert.True(t, ttl > 0 && ttl <= 5*time.Second, "expires at the horizon: %v", ttl)

	a, err := s.Reserve(ctx, key, now, 2, time.Minute)
	require.NoError(t, err)
	b, _ := s.Reserve(ctx, key, now, 2, time.Minute)
	c, _ := s.Reserve(ctx, key, now, 2, time.Minute)
	assert.True(t, a.OK && b.OK)
	assert.False(t, c.OK)
	assert.Equal(t, 2, c.Count)
	assert.Equal(t, now.Add(5*time.Second).UnixMilli(), c.Horizon.UnixMilli(), "read in the same step")
	ttl = raw.PTTL(ctx, "recourse:quota:{"+key+"}:cap").Val()
	assert.True(t, ttl > 0 && ttl <= time.Minute, "the set expires with the window: %v", ttl)
	require.NoError(t, s.Refund(ctx, key, a.ID))
	d, _ := s.Reserve(ctx, key, now, 2, time.Minute)
	assert.True(t, d.OK, "the refund freed a place")
	e, _ := s.Reserve(ctx, key, now.Add(61*time.Second), 2, time.Minute)
	assert.True(t, e.OK, "the window passed")
	assert.Equal(t, 1, e.Count)

	// No cap: nothing is counted, the horizon is still read.
	f, err := s.Reserve(ctx, "https://other.example.com:443", now, 0, time.Minute)
	require.NoError(t, err)
	assert.True(t, f.OK)
	assert.Empty(t, f.ID)
	keys, _ := raw.Keys(ctx, "recourse:quota:{https://other*").Result()
	assert.Empty(t, keys, "nothing kept for an upstream without a cap or horizon")
}

// The round trips: none on a call that never resends, one per resend
// decision (the reserve script), one more to refund a succeeded resend
// with a fleet cap, one to share a Retry-After.
func TestRoundTrips(t *testing.T) {
	srv := startRedis(t)
	for _, tc := range []struct {
		name    string
		cap     int
		script  func(int) answer
		retries int
		want    int64
	}{
		{"first attempt succeeds", 10, always(200), 0, 0},
		{"one resend, no cap", 0, func(i int) answer { return answer{status: map[bool]int{true: 503, false: 200}[i == 1]} }, 1, 1},
		{"one resend, cap, refunded", 10, func(i int) answer { return answer{status: map[bool]int{true: 503, false: 200}[i == 1]} }, 1, 2},
		{"Retry-After shared, then a resend", 0, func(i int) answer {
			if i == 1 {
				return answer{status: 429, header: []string{"Retry-After", "1"}}
			}
			return answer{status: 200}
		}, 1, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, c := newStore(t, srv.addr(), redisstore.WithRefresh(hour), redisstore.WithPrefix("rt:"+tc.name+":"))
			p := newProvider(t, tc.script)
			opts := []quota.Option{quota.WithStore(s), quota.WithStoreTimeout(testTimeout)}
			if tc.cap > 0 {
				opts = append(opts, quota.WithFleetCap(tc.cap))
			}
			r := newRig(t, p, mustQuota(t, opts...), retry.Policy{MaxAttempts: 2})
			// Warm up: the scripts loaded, the connection open.
			require.NoError(t, s.Ping(context.Background()))
			c.n.Store(0)
			require.NoError(t, r.call())
			assert.Equal(t, tc.retries, count(r.take(), event.RetryStarted))
			assert.Equal(t, tc.want, c.n.Load(), "Redis round trips")
		})
	}
}

// Several chains, each with its own quota and its own store client (as
// separate processes have), share one fleet cap: the floors would allow 4
// × 3 resends, the cap allows 5.
func TestFleetCapAcrossChains(t *testing.T) {
	srv := startRedis(t)
	p := newProvider(t, always(503))
	var rigs []*rig
	for range 4 {
		s, _ := newStore(t, srv.addr(), redisstore.WithRefresh(hour))
		rigs = append(rigs, newRig(t, p, mustQuota(t, quota.WithStore(s), quota.WithFleetCap(5), quota.WithStoreTimeout(testTimeout)), retry.Policy{MaxAttempts: 4}))
	}
	var wg sync.WaitGroup
	var resends, refused, exhausted atomic.Int64
	for _, r := range rigs {
		wg.Go(func() {
			for range 5 {
				err := r.call()
				var re *layer.RecoveryError
				if errors.As(err, &re) && re.Outcome == event.OutcomeQuotaExhausted {
					refused.Add(1)
				} else if re != nil && re.Outcome == event.OutcomeExhausted {
					exhausted.Add(1)
				}
			}
			resends.Add(int64(count(r.take(), event.RetryStarted)))
		})
	}
	wg.Wait()
	assert.Equal(t, int64(5), resends.Load(), "the fleet cap, not 4 floors of 3")
	assert.Equal(t, 20+5, p.Count())
	assert.Equal(t, int64(20), refused.Load()+exhausted.Load(), "every call failed, refused or after its attempts")
	assert.LessOrEqual(t, exhausted.Load(), int64(5/3), "only a call that got 3 of the 5 resends ran out of attempts")
}

// Several chains sharing one quota over Redis hold the ratio across them.
func TestSharedQuotaHoldsRatioOverRedis(t *testing.T) {
	srv := startRedis(t)
	p := newProvider(t, always(503))
	s, _ := newStore(t, srv.addr(), redisstore.WithRefresh(hour))
	q := mustQuota(t, quota.WithStore(s), quota.WithFloor(0), quota.WithStoreTimeout(testTimeout))
	var wg sync.WaitGroup
	for range 3 {
		r := newRig(t, p, q, retry.Policy{MaxAttempts: 3})
		wg.Go(func() {
			for range 20 {
				_ = r.call()
			}
		})
	}
	wg.Wait()
	resends := p.Count() - 60
	assert.LessOrEqual(t, resends, 12, "at most 0.2 × 60 calls")
	assert.GreaterOrEqual(t, resends, 10)
}

// The first attempt reads the horizon from the local copy the refresh
// keeps: a Retry-After another process shared holds it (cooldown_wait).
func TestRefreshedHorizonHoldsFirstAttempt(t *testing.T) {
	srv := startRedis(t)
	other, _ := newStore(t, srv.addr(), redisstore.WithRefresh(hour))
	s, c := newStore(t, srv.addr(), redisstore.WithRefresh(hour))
	p := newProvider(t, always(200))
	r := newRig(t, p, mustQuota(t, quota.WithStore(s), quota.WithStoreTimeout(testTimeout)), retry.Policy{MaxAttempts: 2})
	require.NoError(t, r.call()) // the upstream is now known to s
	r.take()
	key := "http://" + strings.TrimPrefix(p.srv.URL, "http://")
	require.NoError(t, other.SetHorizon(context.Background(), key, time.Now().Add(5*time.Second)))
	require.NoError(t, s.Refresh(context.Background()))
	c.n.Store(0)
	require.NoError(t, r.call())
	all := r.take()
	assert.Equal(t, 1, count(all, event.Breaker), "the shared cooldown is one breaker change")
	evs := lifecycle(all)
	require.NotEmpty(t, evs)
	assert.Equal(t, event.CooldownWait, evs[0].Type)
	assert.True(t, evs[0].Delay > 3*time.Second && evs[0].Delay <= 5*time.Second, "%v", evs[0].Delay)
	assert.Zero(t, c.n.Load(), "the first attempt made no round trip")
}

// Redis killed mid-run: every call still completes (fail open, with
// quota_unavailable events and the store's report), none hangs; Redis
// restarted on the same port: sharing resumes.
func TestRedisKilledFailsOpenThenResumes(t *testing.T) {
	srv := startRedis(t)
	var reports atomic.Int64
	s, _ := newStore(t, srv.addr(), redisstore.WithRefresh(hour), redisstore.WithOnUnavailable(func(op string, err error) {
		assert.ErrorIs(t, err, quota.ErrUnavailable)
		reports.Add(1)
	}))
	other, _ := newStore(t, srv.addr(), redisstore.WithRefresh(hour))
	p := newProvider(t, func(i int) answer { return answer{status: map[bool]int{true: 503, false: 200}[i%2 == 1]} })
	r := newRig(t, p, mustQuota(t, quota.WithStore(s), quota.WithFleetCap(100), quota.WithStoreTimeout(testTimeout)), retry.Policy{MaxAttempts: 2})
	require.NoError(t, r.call())
	assert.Zero(t, count(r.take(), event.QuotaUnavailable))

	srv.stop()
	for i := range 4 {
		start := time.Now()
		require.NoError(t, r.call(), "call %d completes while Redis is down", i)
		assert.Less(t, time.Since(start), 10*time.Second, "no hang")
		evs := r.take()
		assert.Equal(t, 1, count(evs, event.RetryStarted), "the resend happened")
		assert.GreaterOrEqual(t, count(evs, event.QuotaUnavailable), 1, "and the event says the store failed open")
	}
	assert.Positive(t, reports.Load())
	assert.Error(t, s.Refresh(context.Background()))
	assert.Equal(t, 10, p.Count(), "nothing lost: every call's attempts reached the provider")

	srv.start()
	key := "http://" + strings.TrimPrefix(p.srv.URL, "http://")
	var err error
	for range 5 { // the first command on each stale pooled connection may fail
		if err = other.SetHorizon(context.Background(), key, time.Now().Add(20*time.Second)); err == nil {
			break
		}
	}
	require.NoError(t, err)
	for range 5 {
		if err = s.Refresh(context.Background()); err == nil && !s.Horizon(key).IsZero() {
			break
		}
	}
	require.NoError(t, err)
	assert.False(t, s.Horizon(key).IsZero(), "sharing resumed: the horizon came through Redis")
	require.NoError(t, r.call())
	evs := lifecycle(r.take())
	assert.Zero(t, count(evs, event.QuotaUnavailable))
	require.NotEmpty(t, evs)
	assert.Equal(t, event.CooldownWait, evs[0].Type)
}

// Close stops the background refresh (goleak checks it), and the refresh
// keeps the local copy fresh by itself.
func TestBackgroundRefresh(t *testing.T) {
	srv := startRedis(t)
	other, _ := newStore(t, srv.addr(), redisstore.WithRefresh(hour))
	s, _ := newStore(t, srv.addr(), redisstore.WithRefresh(10*time.Millisecond))
	key := "https://api.example.com:443"
	assert.True(t, s.Horizon(key).IsZero())
	h := time.Now().Add(time.Minute)
	require.NoError(t, other.SetHorizon(context.Background(), key, h))
	// Bounded wait for the ticker: a correctness check, not a timing one.
	deadline := time.Now().Add(20 * time.Second)
	for s.Horizon(key).IsZero() && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	assert.Equal(t, h.UnixMilli(), s.Horizon(key).UnixMilli())
	require.NoError(t, s.Close())
	require.NoError(t, s.Close(), "idempotent")
}

// A Redis that stops answering (the process frozen with SIGSTOP) is
// bounded by the store timeout: the call fails open and completes, with
// quota_unavailable events, and sharing works again once Redis answers.
func TestRedisFrozenFailsOpenWithinTheTimeout(t *testing.T) {
	srv := startRedis(t)
	const short = 200 * time.Millisecond
	rdb := redis.NewClient(redisstore.ClientOptions(srv.addr()))
	defer rdb.Close()
	s := redisstore.New(rdb, redisstore.WithRefresh(hour), redisstore.WithTimeout(short))
	defer s.Close()
	p := newProvider(t, func(i int) answer { return answer{status: map[bool]int{true: 503, false: 200}[i%2 == 1]} })
	r := newRig(t, p, mustQuota(t, quota.WithStore(s), quota.WithFleetCap(100), quota.WithStoreTimeout(short)), retry.Policy{MaxAttempts: 2})
	require.NoError(t, s.Ping(context.Background()))
	require.NoError(t, srv.cmd.Process.Signal(syscall.SIGSTOP))
	start := time.Now()
	err := r.call()
	took := time.Since(start)
	require.NoError(t, srv.cmd.Process.Signal(syscall.SIGCONT))
	require.NoError(t, err, "the completion does not fail")
	evs := r.take()
	assert.Equal(t, 1, count(evs, event.RetryStarted))
	assert.GreaterOrEqual(t, count(evs, event.QuotaUnavailable), 1)
	assert.Less(t, took, 10*time.Second, "bounded by the store timeout, not blocked")
	var err2 error
	for range 5 { // connections that timed out are dropped from the pool
		if err2 = s.Ping(context.Background()); err2 == nil {
			break
		}
	}
	assert.NoError(t, err2, "Redis answers again")
}

// A local copy nobody reads or writes is dropped by the refresh once it was
// idle for IdleKeep (here one refresh interval, which is longer) and its
// horizon has passed; a copy in use, or one whose horizon is ahead, stays.
func TestIdleCopiesArePruned(t *testing.T) {
	srv := startRedis(t)
	s, _ := newStore(t, srv.addr(), redisstore.WithRefresh(hour))
	ctx := context.Background()
	s.Horizon("https://idle.example.com:443")
	s.Horizon("https://busy.example.com:443")
	require.NoError(t, s.SetHorizon(ctx, "https://cooling.example.com:443", time.Now().Add(hour)))
	assert.Equal(t, 3, s.Keys())

	require.NoError(t, s.Refresh(ctx))
	assert.Equal(t, 3, s.Keys(), "every copy was used since the last refresh")
	s.Horizon("https://busy.example.com:443")
	require.NoError(t, s.Refresh(ctx))
	assert.Equal(t, 2, s.Keys(), "the idle copy with no horizon is dropped")
	assert.False(t, s.Horizon("https://cooling.example.com:443").IsZero(), "the copy whose horizon is ahead is kept")

	s.Horizon("https://idle.example.com:443")
	assert.Equal(t, 3, s.Keys(), "a dropped key comes back when a call names it")
}

// R18.5: a fleet cap spent before Redis went down refuses only while its
// window can still hold the counted resends: a Peek a window after the
// last count Redis gave is 0, so an outage never keeps a spent cap
// refusing.
func TestR18_5_OutageDoesNotKeepASpentCapRefusing(t *testing.T) {
	srv := startRedis(t)
	s, _ := newStore(t, srv.addr(), redisstore.WithRefresh(hour))
	ctx := context.Background()
	key := "https://api.example.com:443"
	now := time.Now()
	for range 2 {
		r, err := s.Reserve(ctx, key, now, 2, time.Minute)
		require.NoError(t, err)
		require.True(t, r.OK)
	}
	n, err := s.Peek(ctx, key, now.Add(time.Second), time.Minute)
	require.NoError(t, err)
	assert.Equal(t, 2, n, "spent")

	srv.stop()
	require.Error(t, s.Refresh(ctx), "Redis is down")
	n, _ = s.Peek(ctx, key, now.Add(59*time.Second), time.Minute)
	assert.Equal(t, 2, n, "within the window the last count stands")
	n, _ = s.Peek(ctx, key, now.Add(time.Minute), time.Minute)
	assert.Zero(t, n, "a window later every counted resend has left it")
}
