package retry

// admission.go holds the decision plane's admission step (R8): asking the policy's hook, bounded by the call's context.

import (
	"context"
	"sync"

	"github.com/recourse-dev/recourse/event"
	"github.com/recourse-dev/recourse/layer"
)

// admit runs admission for attempt next (R8). It returns the empty outcome
// when the resend is allowed (or needs no hook).
func (d *Decider) admit(ctx context.Context, f *event.Failure, next int, emit Emit) (event.Outcome, error) {
	if d.reading {
		// A resume read sends nothing to infer (R19.13).
		return "", nil
	}
	hook := d.r.admit
	if hook == nil {
		if layer.AdmissionRequired(d.facts, *f) || d.ambiguous(f) {
			return event.OutcomeAdmissionRequired, nil
		}
		return "", nil
	}
	if err := emit(event.AdmissionPending, f, 0, next); err != nil {
		return "", err
	}
	// The wait is bounded by the budget and the deadline on the policy's
	// clocks, with the library's own timer: the Sleep hook is the backoff's
	// alone (R6.2).
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var expired bool
	var wg sync.WaitGroup
	if rem, set := d.Remaining(); set {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if sleepTimer(wctx, rem) == nil && wctx.Err() == nil {
				expired = true
				cancel()
			}
		}()
	}
	v, cause := waitAdmission(wctx, hook, layer.AdmissionRequest{Failure: *f, NextAttempt: next, Facts: d.facts})
	cancel()
	wg.Wait()
	switch {
	case ctx.Err() != nil:
		return event.OutcomeCancelled, nil
	case v == verdictPending && expired:
		return event.OutcomeDeadline, nil
	case v == verdictRejected:
		return event.OutcomeAdmissionRejected, nil
	case v == verdictAllowed:
		if err := emit(event.AdmissionAllowed, f, 0, next); err != nil {
			return "", err
		}
		return "", nil
	default:
		f.SetAdmissionCause(cause)
		return event.OutcomeAdmissionNoDecision, nil
	}
}

type verdict int

const (
	verdictAllowed verdict = iota + 1
	verdictRejected
	verdictNoDecision
	verdictPending // the wait ended (ctx done) before the hook returned
)

// waitAdmission runs hook on its own goroutine and waits for its decision
// until ctx is done, so a hook that never returns cannot hold the call
// (R8.2). cause is the hook's error, panic value or unknown decision. A hook
// that ignores its context keeps its goroutine until it returns.
func waitAdmission(ctx context.Context, hook layer.AdmissionHook, req layer.AdmissionRequest) (verdict, any) {
	hctx, cancel := context.WithCancel(ctx)
	defer cancel()
	type result struct {
		d     layer.Decision
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
		dec, err := hook(hctx, req)
		if err != nil {
			r = result{cause: err}
			return
		}
		r = result{d: dec}
	}()
	select {
	case <-ctx.Done():
		return verdictPending, nil
	case r := <-ch:
		if ctx.Err() != nil {
			// The wait ended; what the hook answered while its context was
			// being cancelled does not count.
			return verdictPending, nil
		}
		switch {
		case r.cause != nil:
			return verdictNoDecision, r.cause
		case r.d == layer.Allow:
			return verdictAllowed, nil
		case r.d == layer.Reject:
			return verdictRejected, nil
		default:
			return verdictNoDecision, r.d
		}
	}
}
