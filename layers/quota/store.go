package quota

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// ErrUnavailable is the explicit "store unavailable" result: a Store
// returns an error wrapping it when its backend did not answer in time or
// failed. The quota then fails open — the resend is decided by this
// process's ratio alone — and the engine emits quota_unavailable. Any
// other error from a Store is treated the same way.
var ErrUnavailable = errors.New("quota: store unavailable")

// Store holds what a fleet of processes shares per upstream: the cooldown
// horizon ("no resend to this upstream before T") and, optionally, an
// absolute cap on resends per window. The ratio of resends to calls is
// never in a Store: it holds fleet-wide without coordination (see the
// package documentation). Keys are the quota's upstream keys
// ("https://api.openai.com:443", optionally narrowed by model and by a
// credential's hash); they never contain a credential. Times are passed in
// by the caller, so a Store keeps no clock of its own. Implementations
// must be safe for concurrent use, keep nothing about a key after its
// window and horizon passed, and bound every operation by ctx.
type Store interface {
	// Horizon returns key's cooldown horizon (the zero time for none)
	// from a local copy, with no I/O: it is on the path of every call. A
	// shared store documents how stale the copy may be.
	Horizon(key string) time.Time
	// SetHorizon raises key's horizon to t (never lowers it); the horizon
	// expires at t.
	SetHorizon(ctx context.Context, key string, t time.Time) error
	// Peek returns the resends counted for key in the window ending at
	// now. A shared store may answer from a local copy.
	Peek(ctx context.Context, key string, now time.Time, window time.Duration) (int, error)
	// Reserve counts one resend for key in the window ending at now unless
	// limit resends are counted already (limit 0: no cap, count nothing),
	// and reads the horizon, in one atomic step.
	Reserve(ctx context.Context, key string, now time.Time, limit int, window time.Duration) (Reserved, error)
	// Refund removes reservation id of key, when it is still counted.
	Refund(ctx context.Context, key, id string) error
}

// Reserved is the answer of Store.Reserve.
type Reserved struct {
	// OK reports that the resend was counted (always true without a cap).
	OK bool
	// ID names the reservation for Refund ("" when nothing was counted).
	ID string
	// Count is the number of resends counted in the window, including
	// this one when OK.
	Count int
	// Horizon is key's cooldown horizon, read in the same step.
	Horizon time.Time
}

// MemoryStore is the in-process Store: every quota layer of the process
// that is given no store shares one, so every chain of the
// process respects the same cooldown horizons. It is safe for concurrent
// use; its zero value is not ready: use NewMemoryStore. Entries are
// dropped once their window and horizon passed.
type MemoryStore struct {
	keys sync.Map // string → *memKey
	seq  atomic.Uint64
}

// memKey is one key's state.
type memKey struct {
	horizon atomic.Int64 // unix nanoseconds, 0 for none
	mu      sync.Mutex
	counted []memEntry // oldest first
	window  time.Duration
	dead    atomic.Bool // swept: no longer in the map (set with mu held)
}

type memEntry struct {
	id string
	at int64
}

// NewMemoryStore returns an empty in-process store.
func NewMemoryStore() *MemoryStore { return &MemoryStore{} }

// defaultStore is the process's shared in-process store, the one a quota
// layer uses when it is given none.
var defaultStore = NewMemoryStore()

// locked returns key's state, created when missing, with its lock held.
func (s *MemoryStore) locked(key string) *memKey {
	for {
		v, ok := s.keys.Load(key)
		if !ok {
			v, _ = s.keys.LoadOrStore(key, &memKey{})
		}
		k := v.(*memKey)
		k.mu.Lock()
		if !k.dead.Load() {
			return k
		}
		k.mu.Unlock() // swept meanwhile: take the new one
	}
}

// live returns key's state, created when missing; a quota layer keeps it
// to read the horizon without a map lookup until a Sweep drops it.
func (s *MemoryStore) live(key string) *memKey {
	k := s.locked(key)
	k.mu.Unlock()
	return k
}

// horizonOf returns k's horizon.
func (k *memKey) horizonOf() time.Time {
	if h := k.horizon.Load(); h != 0 {
		return time.Unix(0, h)
	}
	return time.Time{}
}

// Horizon returns key's horizon; it allocates nothing.
func (s *MemoryStore) Horizon(key string) time.Time {
	v, ok := s.keys.Load(key)
	if !ok {
		return time.Time{}
	}
	h := v.(*memKey).horizon.Load()
	if h == 0 {
		return time.Time{}
	}
	return time.Unix(0, h)
}

// SetHorizon raises key's horizon to t.
func (s *MemoryStore) SetHorizon(_ context.Context, key string, t time.Time) error {
	k := s.locked(key)
	defer k.mu.Unlock()
	if n := t.UnixNano(); n > k.horizon.Load() {
		k.horizon.Store(n)
	}
	return nil
}

// prune drops the entries of k older than the window ending at now and
// records the window; k.mu is held.
func (k *memKey) prune(now int64, window time.Duration) {
	k.window = window
	cut := now - int64(window)
	i := 0
	for i < len(k.counted) && k.counted[i].at <= cut {
		i++
	}
	if i > 0 {
		k.counted = append(k.counted[:0], k.counted[i:]...)
	}
}

// Peek returns the resends counted for key in the window.
func (s *MemoryStore) Peek(_ context.Context, key string, now time.Time, window time.Duration) (int, error) {
	v, ok := s.keys.Load(key)
	if !ok {
		return 0, nil
	}
	k := v.(*memKey)
	k.mu.Lock()
	defer k.mu.Unlock()
	k.prune(now.UnixNano(), window)
	return len(k.counted), nil
}

// Reserve counts one resend for key unless limit are counted.
func (s *MemoryStore) Reserve(_ context.Context, key string, now time.Time, limit int, window time.Duration) (Reserved, error) {
	if limit <= 0 {
		return Reserved{OK: true, Horizon: s.Horizon(key)}, nil
	}
	k := s.locked(key)
	defer k.mu.Unlock()
	r := Reserved{OK: true}
	if h := k.horizon.Load(); h != 0 {
		r.Horizon = time.Unix(0, h)
	}
	k.prune(now.UnixNano(), window)
	if len(k.counted) >= limit {
		r.OK, r.Count = false, len(k.counted)
		return r, nil
	}
	r.ID = strconv.FormatUint(s.seq.Add(1), 10)
	k.counted = append(k.counted, memEntry{id: r.ID, at: now.UnixNano()})
	r.Count = len(k.counted)
	return r, nil
}

// Refund removes reservation id of key.
func (s *MemoryStore) Refund(_ context.Context, key, id string) error {
	v, ok := s.keys.Load(key)
	if !ok {
		return nil
	}
	k := v.(*memKey)
	k.mu.Lock()
	defer k.mu.Unlock()
	for i, e := range k.counted {
		if e.id == id {
			k.counted = append(k.counted[:i], k.counted[i+1:]...)
			break
		}
	}
	return nil
}

// Sweep drops every key whose window (ending at now; the window its quota
// last counted with, else window) holds no resend and whose horizon
// passed, so that nothing is kept after the window. A quota layer calls it
// at most once per window.
func (s *MemoryStore) Sweep(now time.Time, window time.Duration) {
	n := now.UnixNano()
	s.keys.Range(func(key, v any) bool {
		k := v.(*memKey)
		k.mu.Lock()
		w := window
		if k.window > 0 {
			w = k.window
		}
		k.prune(n, w)
		if len(k.counted) == 0 && k.horizon.Load() <= n {
			k.dead.Store(true)
			s.keys.CompareAndDelete(key, v)
		}
		k.mu.Unlock()
		return true
	})
}
