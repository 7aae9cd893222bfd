// Package redisstore is a quota.Store on Redis: the shared part of
// recourse's retry quota (package layers/quota) for a fleet of processes —
// the per-upstream cooldown horizon and the optional absolute cap on
// resends per window (quota.WithFleetCap). The ratio of resends to calls
// stays in each process, where it holds fleet-wide without coordination.
//
//	rdb := redis.NewClient(redisstore.ClientOptions("127.0.0.1:6379"))
//	store := redisstore.New(rdb)
//	defer store.Close()
//	q, _ := quota.New(quota.WithStore(store), quota.WithFleetCap(30))
//	ch, _ := chain.Default(openai.New(), chain.WithPerCall(q))
//
// Every operation is one atomic Lua script on keys that expire: a horizon
// key expires at its horizon, a cap's sorted set a window after its last
// reservation, so nothing is kept after the window. A call that never
// resends makes no Redis round trip: its first attempt reads the horizon
// from a local copy, which a background refresh (every WithRefresh,
// default 250 ms, one pipelined round trip for every upstream the process
// has used) keeps at most that stale, plus the round trip. A resend
// decision makes one round trip (the reserve script, which also reads the
// fresh horizon); a refunded resend (one that succeeded, with a fleet cap)
// one more; a failure carrying a Retry-After one to raise the horizon.
//
// When Redis is unavailable or slow — every operation is bounded by
// WithTimeout (default 50 ms) — the operation returns an error wrapping
// quota.ErrUnavailable, the quota fails open and the engine emits
// quota_unavailable; the background refresh reports its failures to
// WithOnUnavailable. An outage of Redis never blocks or fails a
// completion. When Redis comes back, sharing resumes by itself (go-redis
// reconnects; scripts are reloaded).
package redisstore

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/recourse-dev/recourse/layers/quota"
	"github.com/redis/go-redis/v9"
)

// The defaults of New.
const (
	DefaultPrefix  = "recourse:quota:"
	DefaultTimeout = 50 * time.Millisecond
	DefaultRefresh = 250 * time.Millisecond
	// MaxKeys bounds the upstream keys a Store keeps a local copy of; the
	// horizon of further keys is read on resends only.
	MaxKeys = 4096
)

// ClientOptions returns go-redis options for addr suited to a store that
// must fail fast: 100 ms to dial, 50 ms to read or write, context
// deadlines honoured, no client-side retries.
func ClientOptions(addr string) *redis.Options {
	return &redis.Options{Addr: addr, DialTimeout: 100 * time.Millisecond, ReadTimeout: 50 * time.Millisecond,
		WriteTimeout: 50 * time.Millisecond, ContextTimeoutEnabled: true, MaxRetries: -1, PoolTimeout: 100 * time.Millisecond}
}

// Option configures a Store.
type Option func(*Store)

// WithPrefix sets the prefix of every Redis key (default
// "recourse:quota:").
func WithPrefix(p string) Option { return func(s *Store) { s.prefix = p } }

// WithTimeout bounds each Redis operation (default 50 ms; ≤ 0 keeps it).
func WithTimeout(d time.Duration) Option {
	return func(s *Store) {
		if d > 0 {
			s.timeout = d
		}
	}
}

// WithRefresh sets the interval of the background refresh of the local
// copies (default 250 ms; ≤ 0 keeps it): the staleness of the horizon a
// first attempt reads.
func WithRefresh(d time.Duration) Option {
	return func(s *Store) {
		if d > 0 {
			s.refresh = d
		}
	}
}

// WithOnUnavailable sets a function told of every failed Redis operation
// (op is "ping", "refresh", "set_horizon", "reserve" or "refund"); it is called
// synchronously and must not block. err wraps quota.ErrUnavailable and
// never holds a credential.
func WithOnUnavailable(f func(op string, err error)) Option {
	return func(s *Store) { s.onUnavailable = f }
}

// Store is a quota.Store on Redis. It is safe for concurrent use. Close
// stops its background refresh; it does not close the Redis client.
type Store struct {
	rdb           redis.UniversalClient
	prefix        string
	timeout       time.Duration
	refresh       time.Duration
	onUnavailable func(string, error)

	local sync.Map // key → *local
	n     atomic.Int64

	stop chan struct{}
	done chan struct{}
	once sync.Once
}

// local is the local copy of one key.
type local struct {
	horizon atomic.Int64 // unix ns, 0 for none
	count   atomic.Int64 // resends counted in the window at the last refresh
	at      atomic.Int64 // unix ns of the count, 0 for none
	window  atomic.Int64 // the window the count is for (ns), 0 unknown
	used    atomic.Bool  // read or written since the last refresh
	idle    atomic.Int64 // refreshes in a row that found it unused
}

// New returns a Store on rdb and starts its background refresh. It loads
// the scripts first (Ping, one round trip bounded by WithTimeout); when
// Redis does not answer, that is reported to WithOnUnavailable and the
// scripts load on first use.
func New(rdb redis.UniversalClient, opts ...Option) *Store {
	s := &Store{rdb: rdb, prefix: DefaultPrefix, timeout: DefaultTimeout, refresh: DefaultRefresh,
		stop: make(chan struct{}), done: make(chan struct{})}
	for _, o := range opts {
		if o != nil {
			o(s)
		}
	}
	_ = s.Ping(context.Background())
	go s.loop()
	return s
}

// Close stops the background refresh and waits for it to end. It is
// idempotent and returns nil.
func (s *Store) Close() error {
	s.once.Do(func() { close(s.stop) })
	<-s.done
	return nil
}

// lua is a script and its source (to load it after Redis lost it).
type lua struct {
	sc  *redis.Script
	src string
}

func newLua(src string) *lua { return &lua{sc: redis.NewScript(src), src: src} }

// scripts are every script of the store.
var scripts = []string{setHorizonSrc, reserveSrc, refundSrc, readSrc}

// Ping loads the store's scripts into Redis (one pipelined round trip), so
// that every later operation is one round trip; it also tells whether
// Redis answers. New calls it, and Refresh again after Redis lost its
// scripts (a restart). Its error wraps
// quota.ErrUnavailable.
func (s *Store) Ping(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	pipe := s.rdb.Pipeline()
	for _, src := range scripts {
		pipe.ScriptLoad(ctx, src)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return s.unavailable("ping", err)
	}
	return nil
}

// run runs script with one round trip once Redis has it (EVALSHA), loading
// it after a NOSCRIPT answer.
func (s *Store) run(ctx context.Context, script *lua, keys []string, args ...any) *redis.Cmd {
	r := script.sc.EvalSha(ctx, s.rdb, keys, args...)
	if redis.HasErrorPrefix(r.Err(), "NOSCRIPT") {
		if err := s.rdb.ScriptLoad(ctx, script.src).Err(); err != nil {
			return r
		}
		return script.sc.EvalSha(ctx, s.rdb, keys, args...)
	}
	return r
}

func (s *Store) loop() {
	defer close(s.done)
	t := time.NewTicker(s.refresh)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
			_ = s.Refresh(context.Background())
		}
	}
}

// The keys of an upstream key k share a hash tag, so a script's keys are in
// one cluster slot.
func (s *Store) horizonKey(k string) string { return s.prefix + "{" + k + "}:horizon" }
func (s *Store) capKey(k string) string     { return s.prefix + "{" + k + "}:cap" }

// copyOf returns k's local copy, created (up to MaxKeys) when missing.
func (s *Store) copyOf(k string) *local {
	if v, ok := s.local.Load(k); ok {
		l := v.(*local)
		if !l.used.Load() {
			l.used.Store(true)
		}
		return l
	}
	if s.n.Load() >= MaxKeys {
		return nil
	}
	fresh := &local{}
	fresh.used.Store(true)
	v, loaded := s.local.LoadOrStore(k, fresh)
	if !loaded {
		s.n.Add(1)
	}
	return v.(*local)
}

func (s *Store) unavailable(op string, err error) error {
	err = fmt.Errorf("%w: redis %s: %w", quota.ErrUnavailable, op, err)
	if s.onUnavailable != nil {
		s.onUnavailable(op, err)
	}
	return err
}

// Horizon returns the local copy of key's horizon: no I/O. A key seen for
// the first time is registered for the background refresh and reads as
// none until the next refresh.
func (s *Store) Horizon(key string) time.Time {
	l := s.copyOf(key)
	if l == nil {
		return time.Time{}
	}
	if h := l.horizon.Load(); h != 0 {
		return time.Unix(0, h)
	}
	return time.Time{}
}

// raise raises l's horizon to h (unix ns).
func (l *local) raise(h int64) {
	for {
		cur := l.horizon.Load()
		if cur >= h || l.horizon.CompareAndSwap(cur, h) {
			return
		}
	}
}

// setHorizon raises KEYS[1] to ARGV[1] (unix ms) with an expiry of ARGV[2]
// ms, never lowering it; it returns the horizon kept.
const setHorizonSrc = `
local cur = tonumber(redis.call('GET', KEYS[1]) or '0')
local h = tonumber(ARGV[1])
if h > cur then
  redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
  return h
end
return cur
`

var setHorizon = newLua(setHorizonSrc)

// SetHorizon raises key's horizon to t in Redis (one round trip) and in the
// local copy.
func (s *Store) SetHorizon(ctx context.Context, key string, t time.Time) error {
	if l := s.copyOf(key); l != nil {
		l.raise(t.UnixNano())
	}
	ttl := time.Until(t).Milliseconds()
	if ttl < 1 {
		return nil // already passed: nothing to share
	}
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	if err := s.run(ctx, setHorizon, []string{s.horizonKey(key)}, t.UnixMilli(), ttl).Err(); err != nil {
		return s.unavailable("set_horizon", err)
	}
	return nil
}

// Peek returns the resends counted for key in the window from the local
// copy (no I/O; as stale as the refresh), and registers the window for
// the refresh. Reserve is the authoritative, atomic check. A count that is
// a whole window older than now (Redis has not answered since) is 0: every
// resend it counted has left the window, so an outage never keeps a spent
// cap refusing.
func (s *Store) Peek(_ context.Context, key string, now time.Time, window time.Duration) (int, error) {
	l := s.copyOf(key)
	if l == nil {
		return 0, nil
	}
	l.window.Store(int64(window))
	if now.UnixNano()-l.at.Load() >= int64(window) {
		return 0, nil
	}
	return int(l.count.Load()), nil
}

// reserve reads the horizon KEYS[2] and, when ARGV[3] (the cap) is > 0,
// drops the members of the sorted set KEYS[1] older than the window
// ARGV[2] before ARGV[1] (ms) and adds ARGV[4] unless the cap is reached;
// the set expires a window after its last member. It returns {ok, count,
// horizon ms}.
const reserveSrc = `
local h = tonumber(redis.call('GET', KEYS[2]) or '0')
local limit = tonumber(ARGV[3])
if limit <= 0 then
  return {1, 0, h}
end
local now = tonumber(ARGV[1])
local window = tonumber(ARGV[2])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - window)
local n = redis.call('ZCARD', KEYS[1])
if n >= limit then
  return {0, n, h}
end
redis.call('ZADD', KEYS[1], now, ARGV[4])
redis.call('PEXPIRE', KEYS[1], window)
return {1, n + 1, h}
`

var reserve = newLua(reserveSrc)

// noScript is a refresh that found Redis without its scripts.
type noScript struct{ err error }

func (e *noScript) Error() string { return e.err.Error() }

var seq atomic.Uint64

// procID tells this process's reservation IDs from other processes'.
var procID = strconv.FormatInt(time.Now().UnixNano(), 36)

// Reserve counts one resend for key unless limit are counted in the window,
// and reads the horizon, in one round trip.
func (s *Store) Reserve(ctx context.Context, key string, now time.Time, limit int, window time.Duration) (quota.Reserved, error) {
	id := ""
	if limit > 0 {
		id = procID + "-" + strconv.FormatUint(seq.Add(1), 36)
	}
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	v, err := s.run(ctx, reserve, []string{s.capKey(key), s.horizonKey(key)},
		now.UnixMilli(), window.Milliseconds(), limit, id).Int64Slice()
	if err != nil {
		return quota.Reserved{}, s.unavailable("reserve", err)
	}
	if len(v) != 3 {
		return quota.Reserved{}, s.unavailable("reserve", errors.New("unexpected reply"))
	}
	r := quota.Reserved{OK: v[0] == 1, Count: int(v[1])}
	if r.OK {
		r.ID = id
	}
	if v[2] > 0 {
		r.Horizon = time.UnixMilli(v[2])
	}
	if l := s.copyOf(key); l != nil {
		l.window.Store(int64(window))
		l.count.Store(v[1])
		l.at.Store(now.UnixNano())
		if v[2] > 0 {
			l.raise(r.Horizon.UnixNano())
		}
	}
	return r, nil
}

const refundSrc = `return redis.call('ZREM', KEYS[1], ARGV[1])`

var refund = newLua(refundSrc)

// Refund removes reservation id of key (one round trip).
func (s *Store) Refund(ctx context.Context, key, id string) error {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	if err := s.run(ctx, refund, []string{s.capKey(key)}, id).Err(); err != nil {
		return s.unavailable("refund", err)
	}
	return nil
}

// read returns the horizon KEYS[2] (ms) and the members of KEYS[1] newer
// than ARGV[1] (ms; no count when ARGV[1] is negative), reading only.
const readSrc = `
local h = tonumber(redis.call('GET', KEYS[2]) or '0')
local since = tonumber(ARGV[1])
local n = 0
if since >= 0 then
  n = redis.call('ZCOUNT', KEYS[1], '(' .. since, '+inf')
end
return {h, n}
`

var read = newLua(readSrc)

// Refresh brings every local copy up to date in one pipelined round trip
// (two more when Redis lost its scripts); the background refresh calls it
// every WithRefresh. Its error wraps quota.ErrUnavailable.
func (s *Store) Refresh(ctx context.Context) error {
	err := s.refreshOnce(ctx)
	var ns *noScript
	if errors.As(err, &ns) {
		if err := s.Ping(ctx); err != nil {
			return err
		}
		if err = s.refreshOnce(ctx); errors.As(err, &ns) {
			return s.unavailable("refresh", ns.err)
		}
	}
	return err
}

// IdleKeep is how long a local copy nobody reads or writes is kept and
// refreshed (at least its quota's window, when that is longer): after that,
// with its horizon passed, the copy is dropped and nothing of the key is
// read from Redis again until a call names it.
const IdleKeep = time.Minute

// prune drops l, the local copy of key, when it went unused for IdleKeep
// (or its window) and its horizon has passed; it reports whether it did.
func (s *Store) prune(key string, l *local, now time.Time) bool {
	if l.used.Swap(false) {
		l.idle.Store(0)
		return false
	}
	keep := max(IdleKeep, time.Duration(l.window.Load()))
	rounds := int64(keep/max(s.refresh, time.Millisecond)) + 1
	if l.idle.Add(1) < rounds || l.horizon.Load() > now.UnixNano() {
		return false
	}
	if s.local.CompareAndDelete(key, l) {
		s.n.Add(-1)
	}
	return true
}

// Keys returns how many upstream keys the Store keeps a local copy of (at
// most MaxKeys); copies unused for IdleKeep are dropped by the refresh.
func (s *Store) Keys() int { return int(s.n.Load()) }

func (s *Store) refreshOnce(ctx context.Context) error {
	type item struct {
		l   *local
		cmd *redis.Cmd
	}
	var items []item
	now := time.Now()
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	pipe := s.rdb.Pipeline()
	s.local.Range(func(k, v any) bool {
		key, l := k.(string), v.(*local)
		if s.prune(key, l, now) {
			return true
		}
		since := int64(-1)
		if w := l.window.Load(); w > 0 {
			since = now.Add(-time.Duration(w)).UnixMilli()
		}
		items = append(items, item{l, read.sc.EvalSha(ctx, pipe, []string{s.capKey(key), s.horizonKey(key)}, since)})
		return true
	})
	if len(items) == 0 {
		return nil
	}
	if _, err := pipe.Exec(ctx); err != nil {
		if redis.HasErrorPrefix(err, "NOSCRIPT") {
			return &noScript{err}
		}
		return s.unavailable("refresh", err)
	}
	for _, it := range items {
		v, err := it.cmd.Int64Slice()
		if err != nil || len(v) != 2 {
			continue
		}
		if v[0] > 0 {
			it.l.raise(time.UnixMilli(v[0]).UnixNano())
		}
		it.l.count.Store(v[1])
		it.l.at.Store(now.UnixNano())
	}
	return nil
}
