package retry

import (
	"context"
	"math"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/recourse-dev/recourse/event"
	"github.com/recourse-dev/recourse/layer"
)

// Default values of a Policy (R3).
const (
	DefaultBaseDelay    = 100 * time.Millisecond
	DefaultDelayCeiling = 30 * time.Second
)

// DefaultRetryableStatuses returns the HTTP statuses retried by default
// (R3): 429, 500, 502, 503, 504. Each call returns a new slice; changing it
// changes no policy.
func DefaultRetryableStatuses() []int { return slices.Clone(defaultStatuses) }

// DefaultRetryableCategories returns the failure categories retried by
// default (R3): transport and http. Each call returns a new slice; changing
// it changes no policy.
func DefaultRetryableCategories() []event.Category { return slices.Clone(defaultCategories) }

// The defaults a policy resolves to. Nothing outside this package can
// reach them, and a resolved policy only reads them, so a call shares them
// without a copy of its own.
var (
	defaultStatuses   = []int{429, 500, 502, 503, 504}
	defaultCategories = []event.Category{event.CategoryTransport, event.CategoryHTTP}
)

// MaxAttemptsLimit is the largest MaxAttempts a policy accepts: a bound on
// the work one call may do, and on the memory of a custom jitter's
// pre-sampled values (R3.2).
const MaxAttemptsLimit = 1000

// Policy is a recovery policy (R3). The zero value is an enabled policy with
// every default: one wire attempt (R1.2), base delay 100 ms, delay ceiling
// 30 s, no budget, no deadline, transport and HTTP 429/500/502/503/504
// eligible, no hooks, uniform random jitter and the real clocks. A Policy is
// a value: the engine, WithPolicy and chain.WithPolicy keep a deep copy of
// the one they are given, and Layer.Policy returns one (Clone, R3.4). The
// optional durations are pointers so that 0 can be said: write
// BaseDelay: new(200 * time.Millisecond).
type Policy struct {
	// MaxAttempts counts wire attempts including the first. The zero value
	// (the field left out) means one attempt (R1.2); a negative value or one
	// above MaxAttemptsLimit is a *layer.PolicyError.
	MaxAttempts int
	// BaseDelay is the backoff base; nil means 100 ms, 0 is allowed.
	BaseDelay *time.Duration
	// DelayCeiling caps every delay; nil means 30 s. A Retry-After minimum
	// above it refuses the retry with outcome delay_ceiling.
	DelayCeiling *time.Duration
	// Budget, when set, bounds admission waits and backoff from the first
	// completed failure, on the monotonic clock (R7).
	Budget *time.Duration
	// Deadline, when not zero, is an absolute wall-clock bound on admission
	// waits and backoff. Neither bound times out an active attempt (R7.2).
	Deadline time.Time
	// RetryableCategories selects eligible failure categories; nil means
	// transport and http. HTTP failures need both category and status (R4.7).
	RetryableCategories []event.Category
	// RetryableStatuses selects eligible HTTP statuses; nil means 429, 500,
	// 502, 503, 504. 400, 401 and 403 are never eligible (R4.2).
	RetryableStatuses []int
	// Admit is the admission hook (R8), the one place it is set; nil applies
	// the codec's default rule (layer.AdmissionRequired). AllowAll,
	// RejectAll and AdmissionQueue are ready-made hooks.
	Admit layer.AdmissionHook
	// OnEvent observes safe lifecycle events synchronously (R11). An error
	// it returns, or a panic, propagates to the caller and is never a retry.
	OnEvent func(event.Event) error
	// OnWire is the sensitive capture hook (R12); nil captures nothing.
	OnWire layer.WireHook
	// Jitter returns a sample in [0, 1]. When set it is sampled exactly
	// MaxAttempts-1 times before anything happens (R3.2); nil means uniform
	// random, sampled only after admission.
	Jitter func() float64
	// WallClock returns the wall-clock time; nil means time.Now.
	WallClock func() time.Time
	// MonotonicClock returns a monotonic reading; nil means the time elapsed
	// since the process's first use of the package (from time.Now's
	// monotonic clock).
	MonotonicClock func() time.Duration
	// Sleep waits for d or until ctx is done (it must honour ctx); nil means
	// a timer.
	Sleep func(ctx context.Context, d time.Duration) error
	// ProviderHints, when true, honours the resend hints OpenAI and Azure
	// OpenAI send with a failed response; false (the default) reads
	// Retry-After alone (R5). With it on:
	//   - retry-after-ms and x-ms-retry-after-ms (milliseconds) are delay
	//     minima exactly like Retry-After: refused above DelayCeiling
	//     (delay_ceiling) or the time left (deadline), never shortened.
	//     When several are present the first valid one in the order
	//     retry-after-ms, x-ms-retry-after-ms, Retry-After wins (the order
	//     the providers' own SDKs read them); Failure.RetryAfter.Header
	//     names the header it came from.
	//   - "x-should-retry: false" makes the failure not eligible, reason
	//     provider_no_retry (Failure.Hint x_should_retry_false). "true"
	//     changes nothing: the policy's statuses decide.
	//   - an HTTP 429 whose error code says the account's quota or spend
	//     limit is exhausted (layer.IsQuotaExhaustedCode, OpenAI
	//     insufficient_quota) is not eligible, reason insufficient_quota
	//     (Failure.Hint insufficient_quota): it is not a rate limit. The
	//     same code in a provider error object with a 2xx status — a whole
	//     body, the JSON document answering a stream, or a stream's in-band
	//     error frame — is not eligible with or without hints (R4.7); with
	//     them its reason is insufficient_quota instead of permanent.
	ProviderHints bool
}

// Clone returns a deep copy of p: its slices (RetryableCategories,
// RetryableStatuses) and optional durations (BaseDelay, DelayCeiling,
// Budget) are copied, so that changing either policy never changes the
// other; a nil slice stays nil (the default). The hooks, clocks and Jitter
// are functions and are shared. The Clone of a nil policy is nil. Clone
// only reads p, so it may run concurrently with other readers of p.
func (p *Policy) Clone() *Policy {
	if p == nil {
		return nil
	}
	c := *p
	c.BaseDelay = cloneDuration(p.BaseDelay)
	c.DelayCeiling = cloneDuration(p.DelayCeiling)
	c.Budget = cloneDuration(p.Budget)
	c.RetryableCategories = slices.Clone(p.RetryableCategories)
	c.RetryableStatuses = slices.Clone(p.RetryableStatuses)
	return &c
}

// cloneDuration returns a pointer to a copy of *d, or nil.
func cloneDuration(d *time.Duration) *time.Duration {
	if d == nil {
		return nil
	}
	return new(*d)
}

// Validate checks every field (R3.1) and returns a *layer.PolicyError naming
// the first invalid field, or nil.
func (p *Policy) Validate() error {
	if p.MaxAttempts < 0 || p.MaxAttempts > MaxAttemptsLimit {
		return layer.NewPolicyError("MaxAttempts")
	}
	for _, f := range []struct {
		name string
		d    *time.Duration
	}{{"BaseDelay", p.BaseDelay}, {"DelayCeiling", p.DelayCeiling}, {"Budget", p.Budget}} {
		if f.d != nil && (*f.d < 0 || *f.d > layer.MaxDuration) {
			return layer.NewPolicyError(f.name)
		}
	}
	for _, c := range p.RetryableCategories {
		if !c.Valid() {
			return layer.NewPolicyError("RetryableCategories")
		}
	}
	for _, s := range p.RetryableStatuses {
		if s < 100 || s > 599 {
			return layer.NewPolicyError("RetryableStatuses")
		}
	}
	return nil
}

// resolved is a validated policy with defaults applied, owned by one call.
type resolved struct {
	maxAttempts int
	base        time.Duration
	ceiling     time.Duration
	budget      time.Duration
	hasBudget   bool
	deadline    time.Time
	categories  []event.Category
	statuses    []int
	admit       layer.AdmissionHook
	onEvent     func(event.Event) error
	onWire      layer.WireHook
	samples     []float64 // pre-sampled custom jitter, in retry order
	jitter      func() float64
	wall        func() time.Time
	mono        func() time.Duration
	sleep       func(ctx context.Context, d time.Duration) error
	hints       bool
}

var processStart = time.Now()

// resolve validates p, applies defaults and pre-samples a custom jitter
// once per possible resend (R3.2), setting r (which a call allocates with
// itself). It runs before capture, HTTP or any event.
func (r *resolved) resolve(p *Policy, resends int) error {
	if err := p.Validate(); err != nil {
		return err
	}
	base, ceiling := p.delays()
	*r = resolved{
		maxAttempts: max(p.MaxAttempts, 1),
		base:        base,
		ceiling:     ceiling,
		deadline:    p.Deadline,
		categories:  slices.Clone(p.RetryableCategories),
		statuses:    slices.Clone(p.RetryableStatuses),
		admit:       p.Admit,
		onEvent:     p.OnEvent,
		onWire:      p.OnWire,
		jitter:      p.Jitter,
		wall:        p.WallClock,
		mono:        p.MonotonicClock,
		sleep:       p.Sleep,
		hints:       p.ProviderHints,
	}
	if p.Budget != nil {
		r.budget, r.hasBudget = *p.Budget, true
	}
	if r.categories == nil {
		r.categories = defaultCategories
	}
	// statuses stays nil for the default statuses: Classify reads them,
	// with a codec's overload status (R22.1).
	if r.wall == nil {
		r.wall = time.Now
	}
	if r.mono == nil {
		r.mono = func() time.Duration { return time.Since(processStart) }
	}
	if r.sleep == nil {
		r.sleep = sleepTimer
	}
	if p.Jitter != nil {
		r.samples = make([]float64, 0, resends)
		for range resends {
			v, ok := sampleJitter(p.Jitter)
			if !ok || math.IsNaN(v) || v < 0 || v > 1 {
				return layer.NewPolicyError("Jitter")
			}
			r.samples = append(r.samples, v)
		}
	}
	if p.Jitter == nil {
		r.jitter = rand.Float64
	}
	return nil
}

// delays returns the base delay and the ceiling with defaults applied.
func (p *Policy) delays() (base, ceiling time.Duration) {
	base, ceiling = DefaultBaseDelay, DefaultDelayCeiling
	if p.BaseDelay != nil {
		base = *p.BaseDelay
	}
	if p.DelayCeiling != nil {
		ceiling = *p.DelayCeiling
	}
	return base, ceiling
}

// sample returns the jitter for the n-th retry (1-based): a pre-sampled
// custom value, or a fresh default sample taken now, after admission.
func (r *resolved) sample(n int) float64 {
	if len(r.samples) > 0 {
		return r.samples[min(n, len(r.samples))-1]
	}
	return r.jitter()
}

func sleepTimer(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// Backoff returns the full-jitter delay for failed attempt n (1-based):
// jitter * min(ceiling, base * 2^(n-1)), computed without overflow (R6.1).
func Backoff(n int, base, ceiling time.Duration, jitter float64) time.Duration {
	if base <= 0 || n < 1 {
		return 0
	}
	exp := ceiling
	if base < ceiling {
		exp = base
		for i := 1; i < n; i++ {
			if exp > ceiling/2 {
				exp = ceiling
				break
			}
			exp *= 2
		}
		exp = min(exp, ceiling)
	}
	return time.Duration(jitter * float64(exp))
}

// sampleJitter calls a custom jitter; a panic is an invalid sample (a
// PolicyError for field Jitter), never a panic of the call.
func sampleJitter(j func() float64) (v float64, ok bool) {
	defer func() {
		if recover() != nil {
			v, ok = 0, false
		}
	}()
	return j(), true
}

// PanicError is the private cause recorded when a hook (Sleep, a capture
// hook) panicked: Value is what it panicked with. Its Error text is safe and never shows
// the value.
type PanicError struct {
	// Value is what the hook panicked with (sensitive: it may hold
	// anything); it never appears in Error.
	Value any
}

// Error returns a safe message.
func (*PanicError) Error() string { return "recourse: a policy hook panicked" }

// Recommended returns a starting policy for a chain that retries: four
// attempts (the first and three resends), every other field at its default
// (100 ms base delay, 30 s ceiling, transport failures and HTTP 429, 500,
// 502, 503 and 504 eligible). The zero Policy makes one attempt (R1.2);
// this is the one identifier away from a chain that recovers.
func Recommended() Policy { return Policy{MaxAttempts: 4} }
