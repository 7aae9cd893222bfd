package retry

import (
	"context"
	"time"

	"github.com/recourse-dev/recourse/codec"
	"github.com/recourse-dev/recourse/event"
	"github.com/recourse-dev/recourse/layer"
)

// Decider is the decision plane of one logical completion: given the safe
// failure of an attempt it classifies it (R4) and decides about the resend
// that may follow — budget and deadline (R7), admission (R8), the delay
// (R5, R6), the sleep — under one resolved policy. The engine runs one per
// logical completion; the broker runs one per answer for its continuations
// (R17.3), so a continuation waits, asks and backs off exactly like a
// retry. A Decider is used by one goroutine at a time.
type Decider struct {
	r      resolved
	facts  codec.Facts
	failed bool          // a failure completed: the budget runs
	first  time.Duration // the monotonic time of the first completed failure

	// background: the call creates a background response (R19.11);
	// reading: its next attempt is a resume read, which needs no
	// admission (R19.13).
	background, reading bool

	gate    layer.UpstreamGate // the call's bound resend gate, or nil
	held    layer.Reservation  // the reservation of the resend in flight
	refusal *event.QuotaRefusal
}

// Bind makes the decision plane consult g (a retry quota and shared
// cooldown bound to the call's upstream) on every resend; nil removes it.
// The engine binds the gate of the call's layer.Call; the broker binds the
// chain's for its continuations.
func (d *Decider) Bind(g layer.UpstreamGate) { d.gate = g }

// Refusal returns what the gate said when it refused the last resend
// (outcome quota_exhausted), or nil.
func (d *Decider) Refusal() *event.QuotaRefusal { return d.refusal }

// Observe is told of every completed failure f, after its attempt_failed
// event: the resend in flight, if any, stays counted in the quota, and a
// valid Retry-After (or provider delay hint) raises the upstream's shared
// cooldown horizon. It emits quota_unavailable when the shared store did
// not answer. Without a gate it does nothing.
func (d *Decider) Observe(ctx context.Context, f *event.Failure, emit Emit) error {
	d.settle(false)
	if d.gate == nil || !f.RetryAfter.Valid() || f.RetryAfter.Delay <= 0 {
		return nil
	}
	if d.gate.Cooldown(ctx, d.r.wall().Add(f.RetryAfter.Delay)) {
		return emit(event.QuotaUnavailable, f, 0, 0)
	}
	return nil
}

// Succeeded is told that the resend in flight succeeded: its reservation is
// refunded.
func (d *Decider) Succeeded() { d.settle(true) }

func (d *Decider) settle(refund bool) {
	if d.held != nil {
		d.held.Settle(refund)
		d.held = nil
	}
}

// HoldFirst holds a first attempt until the gate's cooldown horizon (read
// from its local copy), announcing the wait with cooldown_wait: the shared
// cooldown delays every chain that uses the same store. A horizon further
// away than the delay ceiling, or than the deadline, is not waited for (a
// first attempt is never refused), nor is one when a Sleep hook fails. It
// reports whether ctx ended during the wait; err is an observer's error.
func (d *Decider) HoldFirst(ctx context.Context, emit Emit) (cancelled bool, err error) {
	if d.gate == nil {
		return false, nil
	}
	h := d.gate.Horizon()
	if h.IsZero() {
		return false, nil
	}
	wait := h.Sub(d.r.wall())
	if wait <= 0 || wait > d.r.ceiling {
		return false, nil
	}
	if rem, set := d.Remaining(); set && wait >= rem {
		return false, nil
	}
	if err := emit(event.CooldownWait, nil, wait, 1); err != nil {
		return false, err
	}
	if d.sleep(ctx, wait) != nil || ctx.Err() != nil {
		return ctx.Err() != nil, nil
	}
	return false, nil
}

// OpenCircuit reports whether the bound gate's shared cooldown horizon
// (its local copy) lies further away than the delay ceiling: that
// upstream's circuit is open, and a call that may go elsewhere (a
// fallback target, R20.5) is not sent there. Without a gate it reports
// false.
func (d *Decider) OpenCircuit() bool {
	if d.gate == nil {
		return false
	}
	h := d.gate.Horizon()
	return !h.IsZero() && h.Sub(d.r.wall()) > d.r.ceiling
}

// NewDecider validates p, applies its defaults and pre-samples a custom
// Jitter once per possible resend (R3.2): resends samples, in resend order.
// The engine asks for MaxAttempts-1; the broker for its continuation
// budget. facts are the codec's (the admission default of R8.3). An invalid
// policy or jitter sample is a *layer.PolicyError.
func (p *Policy) NewDecider(facts codec.Facts, resends int) (*Decider, error) {
	d := &Decider{facts: facts}
	if err := d.r.resolve(p, resends); err != nil {
		return nil, err
	}
	return d, nil
}

// Emit receives the events of the decision plane: admission_pending,
// admission_allowed, delay_scheduled (with the delay) and retry_started,
// about failure f and the attempt next that would follow. A non-nil error
// (an observer failed) ends the call with that error (R11.4).
type Emit func(typ event.Type, f *event.Failure, delay time.Duration, next int) error

// Failed records that a failure completed now: the budget starts at the
// first one (R7.1).
func (d *Decider) Failed() {
	if !d.failed {
		d.failed, d.first = true, d.r.mono()
	}
}

// Remaining returns the time left before the budget or the deadline,
// whichever is nearer, and whether either is set (R7.1).
func (d *Decider) Remaining() (time.Duration, bool) {
	var rem time.Duration
	set := false
	if !d.r.deadline.IsZero() {
		rem, set = d.r.deadline.Sub(d.r.wall()), true
	}
	if d.r.hasBudget && d.failed {
		b := d.r.budget - (d.r.mono() - d.first)
		if !set || b < rem {
			rem = b
		}
		set = true
	}
	return rem, set
}

// Expired reports whether the budget or the deadline ran out.
func (d *Decider) Expired() bool {
	rem, set := d.Remaining()
	return set && rem <= 0
}

// Resend decides about the n-th resend (1-based: the resend after failed
// attempt n, whose backoff is that of R6.1 for n) of the eligible failure
// f, which would be sent as wire attempt next, in the order of R6.2 and R8:
// budget and deadline, admission, the delay (a valid Retry-After is a
// minimum, refused above the ceiling or the time left), delay_scheduled,
// the sleep, the recheck of cancellation, budget and deadline, then
// retry_started. It returns the empty outcome when the resend may go, or
// the outcome that ends the call; the terminal event of that outcome is
// the caller's to emit. err is an observer's error from emit. Admission's
// private cause and a Sleep hook's error are attached to f.
//
// With a gate bound (Bind), the quota is peeked right after budget and
// deadline — a refusal ends the call with quota_exhausted before admission
// is asked — and reserved right after admission allowed (a refusal then,
// a lost race, is quota_exhausted too); the delay is at least the time to
// the upstream's cooldown horizon, refused like a Retry-After above the
// ceiling or the time left. A reservation whose resend is not sent is
// refunded; the engine settles the others (Observe, Succeeded). An
// explicit Allow never overrides the quota.
func (d *Decider) Resend(ctx context.Context, f *event.Failure, n, next int, emit Emit) (event.Outcome, error) {
	d.settle(false) // a resend before this one failed: it stays counted
	d.refusal = nil
	if d.Expired() {
		return event.OutcomeDeadline, nil
	}
	if d.gate != nil {
		if o, err := d.verdict(d.gate.Peek(ctx), f, next, emit); o != "" || err != nil {
			return o, err
		}
	}
	if o, err := d.admit(ctx, f, next, emit); o != "" || err != nil {
		return o, err
	}
	var horizon time.Time
	if d.gate != nil {
		res, v := d.gate.Reserve(ctx)
		if o, err := d.verdict(v, f, next, emit); o != "" || err != nil {
			if res != nil {
				res.Settle(true)
			}
			return o, err
		}
		d.held = res
		horizon = v.Horizon
		if h := d.gate.Horizon(); h.After(horizon) {
			horizon = h
		}
	}
	o, err := d.delay(ctx, f, n, next, horizon, emit)
	if o != "" || err != nil {
		d.settle(true) // the resend is not sent
	}
	return o, err
}

// verdict turns a gate's verdict into the outcome quota_exhausted (after
// its quota_refused event) or the empty outcome, emitting
// quota_unavailable first when the store failed open.
func (d *Decider) verdict(v layer.GateVerdict, f *event.Failure, next int, emit Emit) (event.Outcome, error) {
	if v.Unavailable {
		if err := emit(event.QuotaUnavailable, f, 0, next); err != nil {
			return "", err
		}
	}
	if v.Refusal == nil {
		return "", nil
	}
	d.refusal = v.Refusal
	if err := emit(event.QuotaRefused, f, 0, next); err != nil {
		return "", err
	}
	return event.OutcomeQuotaExhausted, nil
}

// delay computes the delay of the n-th resend (R5, R6; at least until
// horizon when it is set), schedules it, sleeps and rechecks (R6.2).
func (d *Decider) delay(ctx context.Context, f *event.Failure, n, next int, horizon time.Time, emit Emit) (event.Outcome, error) {
	delay := Backoff(n, d.r.base, d.r.ceiling, d.r.sample(n))
	if f.RetryAfter.Valid() {
		if f.RetryAfter.Delay > d.r.ceiling {
			return event.OutcomeDelayCeiling, nil
		}
		delay = max(delay, f.RetryAfter.Delay)
	}
	if !horizon.IsZero() {
		// The shared cooldown is a minimum like a Retry-After (R5.5).
		if wait := horizon.Sub(d.r.wall()); wait > delay {
			if wait > d.r.ceiling {
				return event.OutcomeDelayCeiling, nil
			}
			delay = wait
		}
	}
	if rem, set := d.Remaining(); set && delay >= rem {
		return event.OutcomeDeadline, nil
	}
	if err := emit(event.DelayScheduled, f, delay, next); err != nil {
		return "", err
	}
	if err := d.sleep(ctx, delay); err != nil {
		if ctx.Err() != nil {
			return event.OutcomeCancelled, nil
		}
		f.SetDelayCause(err)
		return event.OutcomeInterrupted, nil
	}
	if ctx.Err() != nil {
		return event.OutcomeCancelled, nil
	}
	if d.Expired() {
		return event.OutcomeDeadline, nil
	}
	if err := emit(event.RetryStarted, f, 0, next); err != nil {
		return "", err
	}
	return "", nil
}

// sleep runs the policy's Sleep; a panic in it becomes a *PanicError (kept
// as the failure's DelayCause), never a panic of the call.
func (d *Decider) sleep(ctx context.Context, delay time.Duration) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = &PanicError{Value: v}
		}
	}()
	return d.r.sleep(ctx, delay)
}
