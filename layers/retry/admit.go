package retry

// Ready-made admission hooks (R8): the decisions an application plugs into
// Policy.Admit, the one place a chain's admission hook is set.
//
// Admission is part of the engine's decision plane, not a stage of the
// chain: after the engine classified a failure as eligible and before any
// delay is computed, it asks the policy's hook whether the next attempt may
// be sent. Only an explicit layer.Allow authorizes a resend. An explicit
// layer.Reject stops with outcome admission_rejected. A hook that returns no
// decision, an unknown value or an error, or that panics, stops with
// admission_no_decision, and the error, panic value or unknown decision is
// kept as private evidence (event.Evidence.AdmissionCause). A hook that has
// not returned never permits a resend: its context is cancelled when the
// wait ends for any reason (deadline, budget, cancellation), and those keep
// their own outcomes.
//
// Without a hook the codec's facts decide (layer.AdmissionRequired):
// eligible failures of a hosted provider (OpenAI) may be resent, while
// eligible failures of a provider that runs inference locally (Ollama,
// oMLX) are ambiguous — the model may still be running — and stop with
// admission_required, unless nothing was provably sent.

import (
	"context"
	"sync"

	"github.com/recourse-dev/recourse/layer"
)

// AllowAll returns a hook that allows every resend: for a local server
// whose duplicated inference the application accepts (a model on the
// developer's own machine). It is safe for concurrent use.
func AllowAll() layer.AdmissionHook {
	return func(context.Context, layer.AdmissionRequest) (layer.Decision, error) { return layer.Allow, nil }
}

// RejectAll returns a hook that rejects every resend, so that every
// eligible failure ends with outcome admission_rejected. It is safe for
// concurrent use.
func RejectAll() layer.AdmissionHook {
	return func(context.Context, layer.AdmissionRequest) (layer.Decision, error) { return layer.Reject, nil }
}

// AdmissionQueue hands each admission request to the application as a
// *PendingAdmission, for a decision that is taken elsewhere (a person in a
// terminal, an approval service, a test). Its Hook blocks until the
// request is decided or the engine's wait ends. An AdmissionQueue is safe
// for concurrent use; its zero value is not ready: use NewAdmissionQueue.
type AdmissionQueue struct {
	ch chan *PendingAdmission
}

// NewAdmissionQueue returns an AdmissionQueue.
func NewAdmissionQueue() *AdmissionQueue { return &AdmissionQueue{ch: make(chan *PendingAdmission)} }

// PendingAdmission is one admission request waiting for a decision.
// Decide answers it; Done is closed when the engine stopped waiting for it
// (the call was cancelled, or its budget or deadline ran out), after which
// a decision does not count.
type PendingAdmission struct {
	// Request is what the engine asks about: the safe failure and the wire
	// attempt that would be sent next.
	Request layer.AdmissionRequest

	ctx   context.Context
	once  sync.Once
	reply chan layer.Decision
}

// Decide answers the request with d (layer.Allow or layer.Reject). Only the
// first call counts; it never blocks.
func (p *PendingAdmission) Decide(d layer.Decision) {
	p.once.Do(func() { p.reply <- d })
}

// Done returns a channel that is closed when the engine no longer waits
// for this request.
func (p *PendingAdmission) Done() <-chan struct{} { return p.ctx.Done() }

// Hook is the admission hook to set as Policy.Admit: it offers each
// request on Next and waits for its decision or for ctx.
func (q *AdmissionQueue) Hook(ctx context.Context, req layer.AdmissionRequest) (layer.Decision, error) {
	p := &PendingAdmission{Request: req, ctx: ctx, reply: make(chan layer.Decision, 1)}
	select {
	case q.ch <- p:
	case <-ctx.Done():
		return "", ctx.Err()
	}
	select {
	case d := <-p.reply:
		return d, nil
	case <-ctx.Done():
		return "", ctx.Err()
	}
}

// Next returns the next request waiting for a decision, blocking until one
// arrives or ctx is done (then it returns ctx's error).
func (q *AdmissionQueue) Next(ctx context.Context) (*PendingAdmission, error) {
	select {
	case p := <-q.ch:
		return p, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}
