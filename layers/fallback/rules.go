package fallback

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/recourse-dev/recourse/codec"
	"github.com/recourse-dev/recourse/event"
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
	// Codes are provider error codes, as the codec reads them from an
	// error body (codec.Codec.ErrorCode: error.code on the OpenAI wires),
	// whose interruption falls back whatever its HTTP status: for example
	// context_length_exceeded, which a model with a longer context may
	// take. A code is compared exactly; it need not be one of
	// codec.KnownProviderCodes (the rules read the failure's private
	// evidence and never output it). Nil means none.
	Codes []string
	// NeverCodes are provider error codes whose failure never falls back,
	// whatever Statuses, Codes or the outcome say: for example
	// content_policy_violation, which every other target would refuse too
	// and which the caller must see as the provider's own error. A never
	// code wins over every other rule. Nil means none.
	NeverCodes []string
	// Stalls are the stall limits (package layers/stall) after which a
	// target other than the last is left at once for the next one: an
	// attempt that fails on one of them before any output is not resent
	// there, whatever attempts and quota remain (layer.Call's
	// LeaveOnStall), and the interruption falls back (R20.12). Nil means
	// none: a stall is retried on its target like any transport failure,
	// and the call falls back only once recovery there ends. The last
	// target, with nowhere to go, retries as without the rule.
	Stalls []event.StallLimit
	// Admit is asked before a fallback from an ambiguous failure of a
	// target that may still be running the request (codec.Facts'
	// LocalInference with acceptance other than "no", R20.4); its request
	// has Fallback set. Nil means no hook: such a call does not fall back
	// and ends with outcome admission_required.
	Admit layer.AdmissionHook
}

// Validate reports whether the rules can be used: every status of Statuses
// is a failure answer (400–599), every code is a non-empty word, no code
// is in both Codes and NeverCodes, and every stall is one of the three
// limits. It returns a *ConfigError naming the field,
// never the value given, and is the one check of every entry point:
// New, client.WithFallback and the proxy's -fallback-statuses (R20.2).
func (r Rules) Validate() error {
	for _, s := range r.Statuses {
		if s < 400 || s > 599 {
			// Only a failure answer can leave a target: a 2xx is an
			// answer the caller gets, a 3xx is refused (R2.2).
			return &ConfigError{Index: -1, Field: "Rules.Statuses", Problem: "holds a status outside 400–599: only a failure answer can leave a target"}
		}
	}
	for _, c := range []struct {
		field string
		codes []string
	}{{"Rules.Codes", r.Codes}, {"Rules.NeverCodes", r.NeverCodes}} {
		for _, code := range c.codes {
			if code == "" || strings.TrimSpace(code) != code {
				return &ConfigError{Index: -1, Field: c.field, Problem: "holds an empty code or one with surrounding spaces"}
			}
		}
	}
	for _, l := range r.Stalls {
		if !layer.StallSetOf(l).Has(l) {
			return &ConfigError{Index: -1, Field: "Rules.Stalls", Problem: "holds a value that is not header_timeout, first_output_timeout or idle_timeout"}
		}
	}
	for _, code := range r.Codes {
		if slices.Contains(r.NeverCodes, code) {
			return &ConfigError{Index: -1, Field: "Rules.Codes", Problem: "names a code NeverCodes names too: a code either falls back or never does"}
		}
	}
	return nil
}

// FallsBack reports whether e, the typed error of a target's run, lets the
// call fall back (R20.2, R20.3): no attempt of the target delivered
// semantic output to the caller, its final failure's provider code is not
// one of NeverCodes, and its outcome is exhausted, quota_exhausted or
// delay_ceiling, or interrupted on an HTTP status of Statuses, a provider
// code of Codes or a stall limit of Stalls. cancelled,
// deadline, admission outcomes and every other interruption never fall
// back. A nil e never falls back.
func (r Rules) FallsBack(e *layer.RecoveryError) bool {
	if e == nil || delivered(e) {
		return false
	}
	var code string
	if len(r.Codes) > 0 || len(r.NeverCodes) > 0 {
		code = providerCode(&e.Failure)
	}
	if code != "" && slices.Contains(r.NeverCodes, code) {
		return false
	}
	switch e.Outcome {
	case event.OutcomeExhausted, event.OutcomeQuotaExhausted, event.OutcomeDelayCeiling:
		return true
	case event.OutcomeInterrupted:
		f := e.Failure
		if code != "" && slices.Contains(r.Codes, code) {
			return true
		}
		if f.Stall != "" && slices.Contains(r.Stalls, f.Stall) {
			return true
		}
		return f.Category == event.CategoryHTTP && f.HTTPStatus != 0 && slices.Contains(r.Statuses, f.HTTPStatus)
	}
	return false
}

// providerCode returns the provider error code of f as the codec read it:
// its safe ProviderCode when the code is a known one, else the code kept
// in its private evidence. The code only decides; it is never output.
func providerCode(f *event.Failure) string {
	if f.ProviderCode != "" {
		return f.ProviderCode
	}
	if ev := event.Inspect(f); ev != nil {
		return ev.Response.Code
	}
	return ""
}

// delivered reports whether any attempt of e handed semantic output to the
// caller, or failed because it had (R20.3).
func delivered(e *layer.RecoveryError) bool {
	if e.Failure.Progress.Delivered.Any() || e.Failure.Classification.Reason == event.ReasonSemanticOutput {
		return true
	}
	for _, f := range e.History {
		if f.Progress.Delivered.Any() || f.Classification.Reason == event.ReasonSemanticOutput {
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
func (r Rules) admit(ctx context.Context, facts codec.Facts, e *layer.RecoveryError, step *event.FallbackStep, emit func(event.Type) error) (event.Outcome, error) {
	if !layer.AdmissionRequired(facts, e.Failure) {
		return "", nil
	}
	if r.Admit == nil {
		return event.OutcomeAdmissionRequired, nil
	}
	if err := emit(event.AdmissionPending); err != nil {
		return "", err
	}
	d, err := ask(ctx, r.Admit, layer.AdmissionRequest{Failure: e.Failure, NextAttempt: 1, Facts: facts, Fallback: step})
	switch {
	case err != nil || ctx.Err() != nil:
		return event.OutcomeAdmissionNoDecision, nil
	case d == layer.Allow:
		return "", emit(event.AdmissionAllowed)
	case d == layer.Reject:
		return event.OutcomeAdmissionRejected, nil
	}
	return event.OutcomeAdmissionNoDecision, nil
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
