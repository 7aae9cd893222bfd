package layer

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
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
	Refusal *QuotaRefusal
	// Horizon is the upstream's cooldown horizon as Reserve read it from
	// the shared store (the zero time for none, or when not read).
	Horizon time.Time
	// Unavailable reports that the shared store did not answer in time or
	// failed: the gate failed open (no refusal from the store's part).
	Unavailable bool
}

// QuotaRefusal says, in safe terms, which quota refused a resend. It names
// the upstream's host (and port when it is not the scheme's default) and
// counts; it never holds a credential, a path or a query.
type QuotaRefusal struct {
	// Upstream is the host (and non-default port) of the refusing quota,
	// for example "api.openai.com".
	Upstream string `json:"upstream"`
	// Resends is the number of resends counted in the window.
	Resends int `json:"resends"`
	// Window is the quota's window.
	Window time.Duration `json:"-"`
	// Fleet reports that the fleet-wide cap refused (a shared store),
	// rather than this process's ratio.
	Fleet bool `json:"fleet,omitempty"`
}

// Text returns the safe description of the refusal, for example "retry
// quota for api.openai.com exhausted: 14 resends in the last 60 s".
func (r *QuotaRefusal) Text() string {
	if r == nil {
		return "retry quota exhausted"
	}
	kind := "retry quota"
	if r.Fleet {
		kind = "fleet retry quota"
	}
	unit := " resends"
	if r.Resends == 1 {
		unit = " resend"
	}
	return kind + " for " + r.Upstream + " exhausted: " + strconv.Itoa(r.Resends) + unit +
		" in the last " + windowText(r.Window)
}

// windowText renders a window as "60 s" (whole seconds from one second up)
// or "500 ms".
func windowText(d time.Duration) string {
	if d >= time.Second && d%time.Second == 0 {
		return strconv.FormatInt(int64(d/time.Second), 10) + " s"
	}
	return strconv.FormatInt(d.Milliseconds(), 10) + " ms"
}

// MarshalJSON encodes the refusal with its window in whole milliseconds
// (window_ms).
func (r QuotaRefusal) MarshalJSON() ([]byte, error) {
	type plain QuotaRefusal
	return json.Marshal(struct {
		plain
		WindowMS int64 `json:"window_ms"`
	}{plain(r), r.Window.Milliseconds()})
}

// Breaker is the state of one upstream's breaker: its retry quota and
// shared cooldown (package layers/quota) seen as a circuit breaker
// (R20.13). Its fields are safe: the upstream's host, flags, a time and
// counts.
type Breaker struct {
	// Upstream is the host (and non-default port) of the upstream, for
	// example "api.openai.com".
	Upstream string `json:"upstream"`
	// Refusing reports that the upstream's resends are being refused: the
	// last resend decision of its quota refused (quota_exhausted).
	Refusing bool `json:"refusing"`
	// CooldownUntil is the shared cooldown horizon (a Retry-After) before
	// which nothing is sent to the upstream; zero when none holds.
	CooldownUntil time.Time `json:"cooldown_until,omitzero"`
	// Skipped counts the calls that went straight to a fallback target
	// without a request to the upstream, its circuit open (R20.5).
	Skipped int64 `json:"skipped"`
	// Failures counts the calls to the upstream that ended in failure (any
	// outcome but cancelled), a stream that failed after its 200 included.
	Failures int64 `json:"failures"`
}

// Open reports whether the breaker keeps calls from the upstream: its
// resends are refused or its cooldown holds at now.
func (b Breaker) Open(now time.Time) bool { return b.Refusing || b.CooldownUntil.After(now) }

// BreakerGate is an optional interface of an UpstreamGate that keeps its
// upstream's Breaker; the engine (package layers/retry) uses it when the
// bound gate has it. Implementations must be safe for concurrent use.
type BreakerGate interface {
	// Changed returns the upstream's breaker and true when its state
	// (Refusing, CooldownUntil as seen at now) changed since the last
	// report, to exactly one caller per change; otherwise false. The
	// engine asks after each gate decision and emits a breaker event.
	Changed(now time.Time) (Breaker, bool)
	// Ended records how a logical completion to the upstream ended:
	// skipped (sent nothing, its circuit open) and failed (any outcome but
	// cancelled, a stream that failed after its 200 included).
	Ended(skipped, failed bool)
}
