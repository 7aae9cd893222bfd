package layer

import (
	"context"
	"github.com/recourse-dev/recourse/event"

	"github.com/recourse-dev/recourse/codec"
)

// Decision is an admission hook's answer (R8). The zero value is "no
// decision": only an explicit Allow authorizes a resend.
type Decision string

// The explicit admission decisions.
const (
	// Allow authorizes the resend.
	Allow Decision = "allow"
	// Reject stops the call with outcome admission_rejected.
	Reject Decision = "reject"
)

// AdmissionRequest is what an admission hook is asked about: the safe
// failure of the attempt that just failed and the wire attempt number that
// would be sent next (R8.4).
type AdmissionRequest struct {
	// Failure is the safe failure of the attempt that just failed.
	Failure event.Failure
	// NextAttempt is the wire attempt that would be sent next.
	NextAttempt int
	// Facts are the codec's facts, so that a hook can ask only where the
	// default rule would stop: AdmissionRequired(Facts, Failure).
	Facts codec.Facts
	// Fallback, when set, says that the hook is asked about a fallback to
	// another target (R20.4), not a resend to the same one: the target
	// left may still be running the request. Nil for a resend.
	Fallback *event.FallbackStep
}

// AdmissionHook decides whether a failed, eligible attempt may be resent
// (R8). It may block (to ask a person, or another system) until it decides
// or ctx is done, and must return promptly once ctx is done; waiting consumes
// no wire attempt. An error, a panic, no decision or an unknown value stops
// the call with outcome admission_no_decision and is kept as private
// evidence (event.Evidence.AdmissionCause); it is never read as a refusal.
type AdmissionHook func(ctx context.Context, req AdmissionRequest) (Decision, error)

// AdmissionRequired is the default admission rule (R8.3): without a hook,
// the eligible failure f of a provider with the given facts may be resent
// only when the provider runs no local inference, or when nothing was
// provably sent (acceptance "no"). Otherwise the call stops with
// admission_required.
func AdmissionRequired(facts codec.Facts, f event.Failure) bool {
	return facts.LocalInference && f.Acceptance != event.AcceptanceNo
}
