package quota

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"math"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/recourse-dev/recourse/event"
	"github.com/recourse-dev/recourse/layer"
)

// The defaults of New.
const (
	// DefaultRatio is the share of a window's logical calls that may be
	// resent: 0.2, the value Envoy, Finagle, Linkerd and failsafe-go share.
	DefaultRatio = 0.2
	// DefaultWindow is the quota's window, longer than a typical LLM call.
	DefaultWindow = 60 * time.Second
	// DefaultFloor is the number of resends per window allowed whatever the
	// traffic, so that a process making few calls can still retry.
	DefaultFloor = 3
	// DefaultStoreTimeout bounds each operation of a shared store.
	DefaultStoreTimeout = 50 * time.Millisecond
)

// MaxNarrowedKeys bounds the quotas one Layer keeps per model or
// credential (ByModel, ByCredential): those values come from callers, so
// past this many distinct combinations a new one shares its upstream's own
// quota (scheme, host and port) instead of getting one of its own.
const MaxNarrowedKeys = 4096

// slots is the number of buckets a window is counted in.
const slots = 10

// ConfigError reports an invalid option of New; it names the option.
type ConfigError struct {
	// Option is the name of the offending option, for example "WithRatio".
	Option string
}

// Error returns a message naming the option.
func (e *ConfigError) Error() string { return "quota: invalid option " + e.Option }

// Option configures a Layer. An option only records its value: New
// validates them all and reports the first invalid one as a *ConfigError
// naming it (R3.5).
type Option func(*config)

type config struct {
	ratio        float64
	window       time.Duration
	floor        int
	limit        int
	unlimited    bool
	noCooldown   bool
	byModel      bool
	byCredential bool
	store        Store
	storeTimeout time.Duration
	invalid      string // the first invalid option's name, "" when none
}

// reject records that the option named name was given an invalid value;
// the first one recorded is the one New reports.
func (c *config) reject(name string) {
	if c.invalid == "" {
		c.invalid = name
	}
}

// WithRatio sets the share of the window's logical calls to an upstream
// that may be resent (default 0.2); it must be finite and ≥ 0.
func WithRatio(r float64) Option {
	return func(c *config) {
		if math.IsNaN(r) || math.IsInf(r, 0) || r < 0 {
			c.reject("WithRatio")
			return
		}
		c.ratio = r
	}
}

// MinWindow is the shortest window WithWindow accepts.
const MinWindow = 10 * time.Millisecond

// WithWindow sets the window over which calls and resends are counted
// (default 60 s); it must be at least MinWindow (10 ms).
func WithWindow(d time.Duration) Option {
	return func(c *config) {
		if d < MinWindow {
			c.reject("WithWindow")
			return
		}
		c.window = d
	}
}

// WithFloor sets the resends per window allowed whatever the traffic
// (default 3); it must be ≥ 0. It counts per process: a fleet of n
// replicas has n times the floor, unless WithFleetCap bounds it.
func WithFloor(n int) Option {
	return func(c *config) {
		if n < 0 {
			c.reject("WithFloor")
			return
		}
		c.floor = n
	}
}

// WithFleetCap sets an absolute cap on resends per window per upstream,
// counted in the store and so shared by every process using it (default
// 0: none); it must be ≥ 0.
func WithFleetCap(n int) Option {
	return func(c *config) {
		if n < 0 {
			c.reject("WithFleetCap")
			return
		}
		c.limit = n
	}
}

// Unlimited makes the quota allow every resend (for tests, or to keep only
// the shared cooldown); calls still deposit and the cooldown still applies.
func Unlimited() Option {
	return func(c *config) { c.unlimited = true }
}

// WithoutCooldown turns the shared cooldown off: a Retry-After (or a
// provider delay hint) then delays only the resend of the call that saw it,
// as without the quota, and never another call's attempts; the quota still
// counts and refuses resends. By default the cooldown is on.
func WithoutCooldown() Option {
	return func(c *config) { c.noCooldown = true }
}

// ByModel keys the quota by the requested model as well as the upstream.
func ByModel() Option {
	return func(c *config) { c.byModel = true }
}

// ByCredential keys the quota by the call's credential as well (the
// Authorization, Api-Key, X-Api-Key or X-Goog-Api-Key header, else a "key"
// query parameter), kept only as a truncated
// SHA-256 hash: provider rate limits are per key. It costs a hash per call.
func ByCredential() Option {
	return func(c *config) { c.byCredential = true }
}

// WithStore sets the store shared with other processes (default: one
// MemoryStore shared by every quota layer of the process that is given no
// store); nil is invalid.
func WithStore(s Store) Option {
	return func(c *config) {
		if s == nil {
			c.reject("WithStore")
			return
		}
		c.store = s
	}
}

// WithStoreTimeout bounds each store operation on a resend decision
// (default 50 ms); a store slower than that fails open. It must be > 0.
func WithStoreTimeout(d time.Duration) Option {
	return func(c *config) {
		if d <= 0 {
			c.reject("WithStoreTimeout")
			return
		}
		c.storeTimeout = d
	}
}

// Layer is the retry quota and shared cooldown, a per-call layer (see the
// package documentation). It is safe for concurrent use and meant to be
// shared: every chain given the same Layer shares its quotas.
type Layer struct {
	cfg       config
	base      time.Time    // when New ran: the windows count time since then
	mem       *MemoryStore // cfg.store when it is in process, else nil
	upstreams sync.Map     // bindKey → *upstream
	narrowed  atomic.Int64 // entries of upstreams keyed by model or credential
	last      atomic.Pointer[upstream]
	swept     atomic.Int64
}

// New returns a quota layer: ratio 0.2 of the logical calls over a 60 s
// window, at least 3 resends per window, per upstream, the process's
// shared MemoryStore for the cooldown horizon, no fleet cap. An invalid
// option, or a nil one, is a *ConfigError naming the first such option
// ("nil" for a nil one); the options after it are still applied but no
// Layer is returned.
//
// The windows are counted on the process's monotonic clock from the time
// New ran, and the store is given the wall time (time.Now); neither can be
// replaced. A test of timing runs the layer inside a testing/synctest
// bubble, where both are the bubble's clock (with
// recoursetest.NewMemoryServer as the provider). Such a test gives the
// layer a store of its own (WithStore(NewMemoryStore())): the process's
// shared store outlives the bubble, whose clock starts anew, so a horizon
// an earlier test set for the same upstream could still lie ahead.
func New(opts ...Option) (*Layer, error) {
	l := &Layer{cfg: config{ratio: DefaultRatio, window: DefaultWindow, floor: DefaultFloor,
		storeTimeout: DefaultStoreTimeout}}
	for _, o := range opts {
		if o == nil {
			l.cfg.reject("nil")
			continue
		}
		o(&l.cfg)
	}
	if l.cfg.invalid != "" {
		return nil, &ConfigError{Option: l.cfg.invalid}
	}
	if l.cfg.store == nil {
		l.cfg.store = defaultStore
	}
	l.mem, _ = l.cfg.store.(*MemoryStore)
	l.base = time.Now()
	return l, nil
}

// elapsed returns the time since New on the monotonic clock, which the
// windows are counted on. A monotonic reading costs a third of time.Now:
// the windows need durations only.
func (l *Layer) elapsed() time.Duration { return time.Since(l.base) }

// Name returns "quota".
func (*Layer) Name() string { return "quota" }

// Position returns layer.PerCall.
func (*Layer) Position() layer.Position { return layer.PerCall }

// Wrap returns next with the quota placed in every call's layer.Call
// (Call.Gate), created when the request has none. A call has one gate: a
// second quota layer closer to the engine replaces the first.
func (l *Layer) Wrap(next http.RoundTripper) http.RoundTripper {
	return roundTripper{l: l, next: next}
}

type roundTripper struct {
	l    *Layer
	next http.RoundTripper
}

func (t roundTripper) RoundTrip(req *http.Request) (*http.Response, error) {
	req, c := layer.CallOf(req)
	c.Gate = t.l
	return t.next.RoundTrip(req)
}

// bindKey is what Bind looks an upstream up by, without allocating.
type bindKey struct {
	scheme, host, model, cred string
}

// Bind returns the gate of u's upstream (scheme, host and port), narrowed
// by model with ByModel and by h's credential with ByCredential. It does
// no I/O; after an upstream's first call it allocates nothing (without
// ByCredential).
func (l *Layer) Bind(u *url.URL, model string, h http.Header) layer.UpstreamGate {
	k := bindKey{scheme: u.Scheme, host: u.Host}
	if l.cfg.byModel {
		k.model = model
	}
	if l.cfg.byCredential {
		k.cred = credentialHash(h, u)
	}
	if up := l.last.Load(); up != nil && up.bk == k {
		return up // the common case: one upstream
	}
	v, ok := l.upstreams.Load(k)
	if !ok {
		if k.model != "" || k.cred != "" {
			if l.narrowed.Load() >= MaxNarrowedKeys {
				// Models and credentials come from callers (a proxy's
				// clients): beyond the bound, a new combination shares
				// the upstream's own quota instead of growing the map.
				return l.Bind(&url.URL{Scheme: u.Scheme, Host: u.Host}, "", nil)
			}
		}
		var loaded bool
		v, loaded = l.upstreams.LoadOrStore(k, l.newUpstream(k))
		if !loaded && (k.model != "" || k.cred != "") {
			l.narrowed.Add(1)
		}
	}
	up := v.(*upstream)
	l.last.Store(up)
	return up
}

// Remaining returns how many resends the quota of u's upstream (narrowed
// by model and h's credential as Bind narrows it) allows now in this
// process: max(floor, ratio × the window's calls) less the window's resends,
// never below 0; -1 for an Unlimited quota. It reads this process's counts
// only, so a fleet cap (WithFleetCap) and the other processes' resends are
// not reflected. It does no I/O and is safe for concurrent use; a proxy
// may report it to its clients.
func (l *Layer) Remaining(u *url.URL, model string, h http.Header) int {
	if l.cfg.unlimited {
		return -1
	}
	up := l.Bind(u, model, h).(*upstream)
	at := l.elapsed()
	up.mu.Lock()
	_, e := up.bucket(at)
	calls, sent := up.totals(e)
	up.mu.Unlock()
	return max(0, up.allowed(calls)-sent)
}

// Window returns the quota's window (default 60 s).
func (l *Layer) Window() time.Duration { return l.cfg.window }

// SharesCooldown reports whether the quota shares Retry-After cooldowns
// through its store (true unless WithoutCooldown was given).
func (l *Layer) SharesCooldown() bool { return !l.cfg.noCooldown }

// apiKeyHeaders are the headers credentialHash reads, in order.
var apiKeyHeaders = layer.APIKeyHeaders()

// credentialHash returns the first 16 hex digits of the SHA-256 of the
// call's credential: the first API key header that is set or, without
// one, the "key" query parameter of u (Gemini's ?key=, R23.4); "" when it
// has none.
func credentialHash(h http.Header, u *url.URL) string {
	var v string
	for _, name := range apiKeyHeaders {
		if v = h.Get(name); v != "" {
			break
		}
	}
	if v == "" && u != nil && u.RawQuery != "" {
		v = u.Query().Get("key")
	}
	if v == "" {
		return ""
	}
	sum := sha256.Sum256([]byte("recourse quota credential\x00" + v))
	return hex.EncodeToString(sum[:8])
}

// maxModelKey is the longest model name kept in a key as it is; a longer
// one is hashed.
const maxModelKey = 128

func (l *Layer) newUpstream(k bindKey) *upstream {
	host, port := k.host, ""
	if h, p, err := net.SplitHostPort(k.host); err == nil {
		host, port = h, p
	}
	if port == "" {
		switch strings.ToLower(k.scheme) {
		case "http":
			port = "80"
		default:
			port = "443"
		}
	}
	name := host
	if (strings.EqualFold(k.scheme, "http") && port != "80") || (!strings.EqualFold(k.scheme, "http") && port != "443") {
		name = net.JoinHostPort(host, port)
	}
	key := strings.ToLower(k.scheme) + "://" + net.JoinHostPort(strings.ToLower(host), port)
	if k.model != "" {
		m := k.model
		if len(m) > maxModelKey || strings.ContainsAny(m, "\x00\r\n") {
			sum := sha256.Sum256([]byte(m))
			m = "sha256:" + hex.EncodeToString(sum[:8])
		}
		key += "|model=" + m
	}
	if k.cred != "" {
		key += "|cred=" + k.cred
	}
	return &upstream{l: l, bk: k, name: name, key: key, width: l.cfg.window / slots}
}

// upstream is the quota of one upstream key in this process: deposits and
// resends counted in slots buckets of width each, and the shared store.
type upstream struct {
	l     *Layer
	bk    bindKey
	mk    atomic.Pointer[memKey] // the in-process store's state of key
	name  string                 // safe: host and non-default port
	key   string                 // the store key
	width time.Duration

	// The breaker view (layer.BreakerGate): whether the last resend
	// decision refused, the calls skipped and failed, and the state last
	// reported by Changed (seenH: the horizon in Unix nanoseconds, 0 for
	// none), written with bmu held.
	refusing atomic.Bool
	skipped  atomic.Int64
	failures atomic.Int64
	seenRef  atomic.Bool
	seenH    atomic.Int64
	bmu      sync.Mutex

	mu    sync.Mutex
	epoch [slots]atomic.Int64 // the bucket index each slot holds; written with mu held
	calls [slots]atomic.Int64 // deposits: added without mu (a deposit racing a slot's reset may be lost, which only lowers the quota)
	sent  [slots]int          // resends, with mu held
}

// bucket returns the slot of the bucket holding now, cleared when it held
// an older bucket; u.mu is held.
func (u *upstream) bucket(at time.Duration) (slot int, e int64) {
	e = int64(at / u.width)
	slot = int(e % slots)
	if slot < 0 {
		slot += slots
	}
	if u.epoch[slot].Load() != e {
		u.calls[slot].Store(0)
		u.sent[slot] = 0
		u.epoch[slot].Store(e)
	}
	return slot, e
}

// totals returns the calls and resends of the window ending at bucket e;
// u.mu is held.
func (u *upstream) totals(e int64) (calls, sent int) {
	for i := range slots {
		if ep := u.epoch[i].Load(); ep > e-slots && ep <= e {
			calls += int(u.calls[i].Load())
			sent += u.sent[i]
		}
	}
	return calls, sent
}

// allowed returns the resends the window allows for calls.
func (u *upstream) allowed(calls int) int {
	// A huge ratio means "no practical limit": clamp before converting, as
	// a float beyond the int range converts to a negative int.
	return max(u.l.cfg.floor, int(min(u.l.cfg.ratio*float64(calls), math.MaxInt32)))
}

// Deposit records a logical call.
func (u *upstream) Deposit() {
	at := u.l.elapsed()
	e := int64(at / u.width)
	slot := int(e % slots)
	if slot < 0 {
		slot += slots
	}
	if u.epoch[slot].Load() != e {
		u.mu.Lock()
		u.bucket(at)
		u.mu.Unlock()
	}
	u.calls[slot].Add(1)
	u.l.sweep(at)
}

// sweep drops the in-process store's expired keys, at most once per window.
func (l *Layer) sweep(at time.Duration) {
	ms := l.mem
	if ms == nil {
		return
	}
	n, last := int64(at), l.swept.Load()
	if n-last < int64(l.cfg.window) || !l.swept.CompareAndSwap(last, n) {
		return
	}
	ms.Sweep(time.Now(), l.cfg.window)
}

// Horizon returns the store's local copy of the upstream's horizon; with
// the in-process store it reads the key's state directly.
func (u *upstream) Horizon() time.Time {
	if u.l.cfg.noCooldown {
		return time.Time{}
	}
	if ms := u.l.mem; ms != nil {
		k := u.mk.Load()
		if k == nil || k.dead.Load() {
			k = ms.live(u.key)
			u.mk.Store(k)
		}
		return k.horizonOf()
	}
	return u.l.cfg.store.Horizon(u.key)
}

// Changed returns the upstream's breaker and true when whether it refuses
// resends, or its cooldown horizon as seen at now, changed since the last
// report; exactly one caller gets each change (layer.BreakerGate).
func (u *upstream) Changed(now time.Time) (event.BreakerState, bool) {
	ref, h := u.refusing.Load(), u.horizonAt(now)
	if ref == u.seenRef.Load() && h == u.seenH.Load() {
		return event.BreakerState{}, false
	}
	u.bmu.Lock()
	defer u.bmu.Unlock()
	if ref == u.seenRef.Load() && h == u.seenH.Load() {
		return event.BreakerState{}, false
	}
	u.seenRef.Store(ref)
	u.seenH.Store(h)
	return u.breaker(ref, h), true
}

// Ended records how a logical completion to the upstream ended.
func (u *upstream) Ended(skipped, failed bool) {
	if skipped {
		u.skipped.Add(1)
	}
	if failed {
		u.failures.Add(1)
	}
}

// horizonAt returns the cooldown horizon in Unix nanoseconds when it lies
// after now, else 0.
func (u *upstream) horizonAt(now time.Time) int64 {
	if h := u.Horizon(); h.After(now) {
		return h.UnixNano()
	}
	return 0
}

// breaker returns the upstream's breaker for the refusing flag ref and the
// horizon h (Unix nanoseconds, 0 for none).
func (u *upstream) breaker(ref bool, h int64) event.BreakerState {
	b := event.BreakerState{Upstream: u.name, Refusing: ref, Skipped: u.skipped.Load(), Failures: u.failures.Load()}
	if h != 0 {
		b.CooldownUntil = time.Unix(0, h)
	}
	return b
}

// Breakers returns the breaker of every upstream the layer has seen, one
// per upstream host (the quotas of one host narrowed by model or
// credential merged: refusing when any refuses, the furthest horizon, the
// counts summed), sorted by host, as seen at now (R20.13). It is safe for
// concurrent use; a metrics scrape reads it.
func (l *Layer) Breakers(now time.Time) []event.BreakerState {
	by := map[string]*event.BreakerState{}
	l.upstreams.Range(func(_, v any) bool {
		u := v.(*upstream)
		b := u.breaker(u.refusing.Load(), u.horizonAt(now))
		m, ok := by[b.Upstream]
		if !ok {
			by[b.Upstream] = &b
			return true
		}
		m.Refusing = m.Refusing || b.Refusing
		if b.CooldownUntil.After(m.CooldownUntil) {
			m.CooldownUntil = b.CooldownUntil
		}
		m.Skipped += b.Skipped
		m.Failures += b.Failures
		return true
	})
	out := make([]event.BreakerState, 0, len(by))
	for _, b := range by {
		out = append(out, *b)
	}
	slices.SortFunc(out, func(a, b event.BreakerState) int { return strings.Compare(a.Upstream, b.Upstream) })
	return out
}

// refusal returns the refusal of the ratio for sent resends.
func (u *upstream) refusal(sent int, fleet bool) *event.QuotaRefusal {
	return &event.QuotaRefusal{Upstream: u.name, Resends: sent, Window: u.l.cfg.window, Fleet: fleet}
}

// Peek reports whether a resend could be reserved now.
func (u *upstream) Peek(ctx context.Context) layer.GateVerdict {
	now := time.Now()
	at := now.Sub(u.l.base)
	if !u.l.cfg.unlimited {
		u.mu.Lock()
		_, e := u.bucket(at)
		calls, sent := u.totals(e)
		u.mu.Unlock()
		if sent >= u.allowed(calls) {
			u.refusing.Store(true)
			return layer.GateVerdict{Refusal: u.refusal(sent, false)}
		}
	}
	if u.l.cfg.limit <= 0 {
		u.refusing.Store(false)
		return layer.GateVerdict{}
	}
	sctx, cancel := context.WithTimeout(ctx, u.l.cfg.storeTimeout)
	defer cancel()
	n, err := u.l.cfg.store.Peek(sctx, u.key, now, u.l.cfg.window)
	if err != nil {
		return layer.GateVerdict{Unavailable: true}
	}
	if n >= u.l.cfg.limit {
		u.refusing.Store(true)
		return layer.GateVerdict{Refusal: u.refusal(n, true)}
	}
	u.refusing.Store(false)
	return layer.GateVerdict{}
}

// Reserve withdraws one resend: from this process's ratio, then from the
// store's cap (when set) in the step that reads the shared horizon.
func (u *upstream) Reserve(ctx context.Context) (layer.Reservation, layer.GateVerdict) {
	now := time.Now()
	at := now.Sub(u.l.base)
	r := &reservation{u: u, slot: -1}
	if !u.l.cfg.unlimited {
		u.mu.Lock()
		s, e := u.bucket(at)
		calls, sent := u.totals(e)
		if sent >= u.allowed(calls) {
			u.mu.Unlock()
			u.refusing.Store(true)
			return nil, layer.GateVerdict{Refusal: u.refusal(sent, false)}
		}
		u.sent[s]++
		u.mu.Unlock()
		r.slot, r.epoch = s, e
	}
	sctx, cancel := context.WithTimeout(ctx, u.l.cfg.storeTimeout)
	defer cancel()
	res, err := u.l.cfg.store.Reserve(sctx, u.key, now, u.l.cfg.limit, u.l.cfg.window)
	if err != nil {
		return r, layer.GateVerdict{Unavailable: true}
	}
	if !res.OK {
		r.Settle(true)
		u.refusing.Store(true)
		return nil, layer.GateVerdict{Refusal: u.refusal(res.Count, true), Horizon: res.Horizon}
	}
	u.refusing.Store(false)
	r.id = res.ID
	if u.l.cfg.noCooldown {
		return r, layer.GateVerdict{}
	}
	return r, layer.GateVerdict{Horizon: res.Horizon}
}

// Cooldown raises the shared horizon to until.
func (u *upstream) Cooldown(ctx context.Context, until time.Time) bool {
	if u.l.cfg.noCooldown {
		return false
	}
	if !until.After(u.Horizon()) {
		return false // already known: no store round trip
	}
	sctx, cancel := context.WithTimeout(ctx, u.l.cfg.storeTimeout)
	defer cancel()
	return u.l.cfg.store.SetHorizon(sctx, u.key, until) != nil
}

// reservation is one resend withdrawn from an upstream.
type reservation struct {
	u       *upstream
	slot    int // -1: nothing counted in this process
	epoch   int64
	id      string // the store's reservation, or ""
	settled bool
}

// Settle refunds the resend when refund is set; it is idempotent.
func (r *reservation) Settle(refund bool) {
	if r.settled {
		return
	}
	r.settled = true
	if !refund {
		return
	}
	u := r.u
	if r.slot >= 0 {
		u.mu.Lock()
		if u.epoch[r.slot].Load() == r.epoch && u.sent[r.slot] > 0 {
			u.sent[r.slot]--
		}
		u.mu.Unlock()
	}
	if r.id != "" {
		ctx, cancel := context.WithTimeout(context.Background(), u.l.cfg.storeTimeout)
		defer cancel()
		_ = u.l.cfg.store.Refund(ctx, u.key, r.id) // an unavailable store keeps it counted until the window ends
	}
}
