// Package admission is the gate that decides whether a failed, eligible
// attempt may be sent again (R8). It runs on the decision plane, after the
// retry layer classified a failure as eligible and before any delay is
// computed.
//
// Only an explicit Allow authorizes a resend. An explicit Reject stops with
// outcome admission_rejected. A hook that returns no decision, an unknown
// value or an error, or that panics, stops with admission_no_decision; the
// error, panic value or unknown decision is kept as private evidence
// (layer.Evidence.AdmissionCause). A hook that has not returned never permits
// a resend: its context is cancelled when the wait ends for any reason
// (deadline, budget, cancellation), and those keep their own outcomes.
//
// Without a hook, eligible OpenAI failures may be resent, while eligible
// Ollama and oMLX failures are ambiguous local executions and stop with
// admission_required — unless nothing was provably sent (acceptance "no").
package admission

import (
	"context"
	"net/http"

	"github.com/recourse-dev/recourse/layer"
)

// Decision is an admission hook's answer. The zero value is "no decision".
type Decision string

// The explicit decisions.
const (
	Allow  Decision = "allow"
	Reject Decision = "reject"
)

// Request is what a hook is asked about: the safe failure of the attempt
// that just failed and the wire attempt number that would be sent next.
type Request struct {
	Failure     layer.Failure
	NextAttempt int
}

// Hook decides whether a failed attempt may be resent. It may block (for
// example to ask a person) until it decides or ctx is done; it must return
// promptly once ctx is done. Waiting consumes no wire attempt (R8.4).
type Hook func(ctx context.Context, req Request) (Decision, error)

// Verdict is the result of waiting for a hook.
type Verdict int

// The verdicts of Wait.
const (
	// Allowed: the hook returned Allow.
	Allowed Verdict = iota + 1
	// Rejected: the hook returned Reject.
	Rejected
	// NoDecision: the hook returned another value, an error, or panicked.
	NoDecision
	// Pending: the wait ended (ctx done) before the hook returned.
	Pending
)

// Wait runs hook in its own goroutine and waits for its decision until ctx
// is done, so a hook that never returns cannot hold the caller. It cancels
// the context it gave the hook before returning. cause is the hook's error,
// panic value, or unknown decision for a NoDecision verdict. A hook that
// ignores its context keeps its goroutine until it returns.
func Wait(ctx context.Context, hook Hook, req Request) (v Verdict, cause any) {
	hctx, cancel := context.WithCancel(ctx)
	defer cancel()
	type result struct {
		d     Decision
		cause any
	}
	ch := make(chan result, 1)
	go func() {
		var r result
		defer func() {
			if p := recover(); p != nil {
				r = result{cause: p}
			}
			ch <- r
		}()
		d, err := hook(hctx, req)
		if err != nil {
			r = result{cause: err}
			return
		}
		r = result{d: d}
	}()
	select {
	case <-ctx.Done():
		return Pending, nil
	case r := <-ch:
		if ctx.Err() != nil {
			// The wait ended; whatever the hook answered while its context
			// was being cancelled does not count.
			return Pending, nil
		}
		switch {
		case r.cause != nil:
			return NoDecision, r.cause
		case r.d == Allow:
			return Allowed, nil
		case r.d == Reject:
			return Rejected, nil
		default:
			return NoDecision, r.d
		}
	}
}

// Required reports whether a resend of f needs an explicit hook decision
// when no hook is configured (R8.3): true for Ollama and oMLX failures
// unless nothing was provably sent.
func Required(f layer.Failure) bool {
	return f.Provider != layer.OpenAI && f.Acceptance != layer.AcceptanceNo
}

// Layer is the admission layer of a chain. It does not touch the wire: it
// gives its hook to the retry layer, which consults it between attempts. A
// Layer with a nil hook applies the default rule (R8.3). It is safe for
// concurrent use.
type Layer struct {
	hook Hook
}

// New returns an admission layer that asks hook; nil means the default rule.
func New(hook Hook) *Layer { return &Layer{hook: hook} }

// Kind returns layer.KindAdmission.
func (*Layer) Kind() layer.Kind { return layer.KindAdmission }

// Wrap returns next unchanged: admission runs on the decision plane.
func (*Layer) Wrap(next http.RoundTripper) http.RoundTripper { return next }

// Hook returns the layer's hook (nil for the default rule).
func (l *Layer) Hook() Hook { return l.hook }
