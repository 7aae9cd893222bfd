package layer

import (
	"context"
	"github.com/recourse-dev/recourse/event"
	"net/http"
	"net/url"
	"time"
)

// ResendGate is a limit on resends shared beyond one logical completion: a
// retry quota per upstream and a shared cooldown horizon (package
// layers/quota provides one). A per-call layer places it in the call's
// Call.Gate; the engine binds it to the call's upstream once the request
// is read, and the decision plane (retry.Decider) consults the bound gate
// around admission:
//
//	classify → MaxAttempts, budget, deadline → Peek (refused: outcome
//	quota_exhausted, admission not asked) → admission → Reserve (atomic;
//	refused: quota_exhausted) → delay, at least until the Horizon →
//	delay_scheduled → sleep → resend → Settle (a resend that succeeded, or
//	that was never sent, is refunded)
//
// Implementations must be safe for concurrent use.
type ResendGate interface {
	// Bind returns the gate of the upstream that u names (scheme, host and
	// port), optionally narrowed by model and by the credential in h; it
	// does no I/O. A credential may only be kept as a one-way hash, never
	// in a key, an event or an error.
	Bind(u *url.URL, model string, h http.Header) UpstreamGate
}

// UpstreamGate is a ResendGate bound to one upstream. Deposit and Horizon
// are on the path of every call and must do no I/O; Peek, Reserve, Settle
// and Cooldown are on the path of resends only and may consult a shared
// store, bounded by ctx. Implementations must be safe for concurrent use.
type UpstreamGate interface {
	// Deposit records that a logical completion to the upstream started.
	Deposit()
	// Horizon returns the time before which nothing should be sent to the
	// upstream (the shared cooldown), or the zero time for none. It reads
	// a local copy and may be stale by a documented bound.
	Horizon() time.Time
	// Peek reports, without reserving anything, whether a resend could be
	// reserved now.
	Peek(ctx context.Context) GateVerdict
	// Reserve withdraws one resend atomically. When the verdict refuses,
	// nothing was withdrawn and the Reservation is nil. A non-nil
	// Reservation is settled at most once; one never settled (the call
	// ended by an observer's error) stays counted.
	Reserve(ctx context.Context) (Reservation, GateVerdict)
	// Cooldown raises the upstream's horizon to until (a Retry-After or a
	// provider delay hint); it never lowers it. It reports whether the
	// shared store was unavailable.
	Cooldown(ctx context.Context, until time.Time) (unavailable bool)
}

// Reservation is one resend withdrawn from a quota.
type Reservation interface {
	// Settle ends the reservation: refund gives the resend back (it
	// succeeded, or it was never sent); otherwise it stays counted.
	Settle(refund bool)
}

// GateVerdict is the answer of a gate's Peek or Reserve.
type GateVerdict struct {
	// Refusal is set when the quota refuses the resend.
	Refusal *event.QuotaRefusal
	// Horizon is the upstream's cooldown horizon as Reserve read it from
	// the shared store (the zero time for none, or when not read).
	Horizon time.Time
	// Unavailable reports that the shared store did not answer in time or
	// failed: the gate failed open (no refusal from the store's part).
	Unavailable bool
}

// BreakerGate is an optional interface of an UpstreamGate that keeps its
// upstream's event.BreakerState; the engine (package layers/retry) uses it when the
// bound gate has it. Implementations must be safe for concurrent use.
type BreakerGate interface {
	// Changed returns the upstream's breaker and true when its state
	// (Refusing, CooldownUntil as seen at now) changed since the last
	// report, to exactly one caller per change; otherwise false. The
	// engine asks after each gate decision and emits a breaker event.
	Changed(now time.Time) (event.BreakerState, bool)
	// Ended records how a logical completion to the upstream ended:
	// skipped (sent nothing, its circuit open) and failed (any outcome but
	// cancelled, a stream that failed after its 200 included).
	Ended(skipped, failed bool)
}
