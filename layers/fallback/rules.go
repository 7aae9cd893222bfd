package fallback

import (
	"context"
	"fmt"
	"slices"

	"github.com/recourse-dev/recourse/codec"
	"github.com/recourse-dev/recourse/layer"
)

// Rules decide whether the outcome of one target lets a call fall back to
// the next one (R20.2). The zero value falls back after exhausted,
// quota_exhausted and delay_ceiling only. Rules are values and safe for
// concurrent use.
type Rules struct {
	// Statuses are the HTTP statuses of an interrupted call that fall back
	// too: a status recovery does not retry but another model or upstream
	// may take (404 for a model that is not found, 400 for a context
	// longer than the model's). Nil means none.
	Statuses []int
	// Admit is asked before a fallback from an ambiguous failure of a
	// target that may still be running the request (codec.Facts'
	// LocalInference with acceptance other than "no", R20.4); its request
	// has Fallback set. Nil means no hook: such a call does not fall back
	// and ends with outcome admission_required.
	Admit layer.AdmissionHook
}

// FallsBack reports whether e, the typed error of a target's run, lets the
// call fall back (R20.2, R20.3): its outcome is exhausted, quota_exhausted
// or delay_ceiling, or interrupted on an HTTP status of Statuses, and no
// attempt of the target delivered semantic output to the caller. cancelled,
// deadline, admission outcomes and every other interruption never fall
// back. A nil e never falls back.
func (r Rules) FallsBack(e *layer.RecoveryError) bool {
	if e == nil || delivered(e) {
		return false
	}
	switch e.Outcome {
	case layer.OutcomeExhausted, layer.OutcomeQuotaExhausted, layer.OutcomeDelayCeiling:
		return true
	case layer.OutcomeInterrupted:
		f := e.Failure
		return f.Category == layer.CategoryHTTP && f.HTTPStatus != 0 && slices.Contains(r.Statuses, f.HTTPStatus)
	}
	return false
}

// delivered reports whether any attempt of e handed semantic output to the
// caller, or failed because it had (R20.3).
func delivered(e *layer.RecoveryError) bool {
	if e.Failure.Progress.Delivered.Any() || e.Failure.Classification.Reason == layer.ReasonSemanticOutput {
		return true
	}
	for _, f := range e.History {
		if f.Progress.Delivered.Any() || f.Classification.Reason == layer.ReasonSemanticOutput {
			return true
		}
	}
	return false
}

// admit asks the admission question of a fallback from e's target, whose
// provider has facts, to the target that step names (R20.4). It returns
// the empty outcome when the fallback may go, or the admission outcome
// that ends the call. The hook's panic is its no decision, never the
// caller's panic.
func (r Rules) admit(ctx context.Context, facts codec.Facts, e *layer.RecoveryError, step *layer.Fallback, emit func(layer.EventType) error) (layer.Outcome, error) {
	if !layer.AdmissionRequired(facts, e.Failure) {
		return "", nil
	}
	if r.Admit == nil {
		return layer.OutcomeAdmissionRequired, nil
	}
	if err := emit(layer.EventAdmissionPending); err != nil {
		return "", err
	}
	d, err := ask(ctx, r.Admit, layer.AdmissionRequest{Failure: e.Failure, NextAttempt: 1, Facts: facts, Fallback: step})
	switch {
	case err != nil || ctx.Err() != nil:
		return layer.OutcomeAdmissionNoDecision, nil
	case d == layer.Allow:
		return "", emit(layer.EventAdmissionAllowed)
	case d == layer.Reject:
		return layer.OutcomeAdmissionRejected, nil
	}
	return layer.OutcomeAdmissionNoDecision, nil
}

// ask calls hook, turning a panic into an error.
func ask(ctx context.Context, hook layer.AdmissionHook, req layer.AdmissionRequest) (d layer.Decision, err error) {
	defer func() {
		if v := recover(); v != nil {
			d, err = "", fmt.Errorf("fallback: the admission hook panicked")
		}
	}()
	return hook(ctx, req)
}
