package fallback

import (
	"context"

	"github.com/recourse-dev/recourse/codec"
	"github.com/recourse-dev/recourse/event"
	"github.com/recourse-dev/recourse/layer"
)

// Run is one call's walk through its targets, in order: it announces each
// target, decides after each failed one whether the call falls back
// (Rules), asks the admission question where R20.4 needs it, and keeps
// every target's history for the final error. The drop-in Layer runs one
// per call; client.WithFallback runs one per native call, with targets of
// any codec. A Run is used by one goroutine.
type Run struct {
	rules   Rules
	stalls  map[int][]event.StallLimit // a target's own Stalls (R20.16)
	names   []string
	facts   []codec.Facts
	emit    func(event.Event) error
	records []layer.TargetRecord
}

// NewRun returns the walk of a call through the targets names (index 0 is
// the first target), whose providers have facts (one per target), under
// rules. emit receives the walk's lifecycle events (target_started,
// fallback, and the admission events of R20.4); its error ends the call
// with that error; a nil emit emits nothing. A target without facts (facts
// shorter than names) has the zero Facts, a hosted provider's.
func NewRun(rules Rules, names []string, facts []codec.Facts, emit func(event.Event) error) *Run {
	if emit == nil {
		emit = func(event.Event) error { return nil }
	}
	return &Run{rules: rules, names: names, facts: facts, emit: emit}
}

// SetStalls makes stalls, when not nil, the stall limits after which
// target i is left for the next one in place of the rules' Stalls (a
// Target's or a client.FallbackTarget's own Stalls, R20.16); nil keeps the
// rules'. Call it before the walk starts.
func (r *Run) SetStalls(i int, stalls []event.StallLimit) {
	if stalls == nil {
		return
	}
	if r.stalls == nil {
		r.stalls = map[int][]event.StallLimit{}
	}
	r.stalls[i] = stalls
}

// FallsBack reports whether target i's typed error e lets the call fall
// back under the rules, with target i's own Stalls (SetStalls) in place of
// the rules' (Rules.FallsBack). It does not say whether a target is left
// to fall back to: After does.
func (r *Run) FallsBack(i int, e *layer.RecoveryError) bool { return r.rulesFor(i).FallsBack(e) }

// rulesFor returns the rules of target i.
func (r *Run) rulesFor(i int) Rules {
	rules := r.rules
	if s, ok := r.stalls[i]; ok {
		rules.Stalls = s
	}
	return rules
}

// Targets returns the number of targets.
func (r *Run) Targets() int { return len(r.names) }

// Start announces that target i starts: a target_started event built on
// ev (its provider, operation and model), whose Fallback names the target
// and, after a fallback, the target left.
func (r *Run) Start(i int, ev event.Event) error {
	ev.Type = event.TargetStarted
	step := &event.FallbackStep{To: r.names[i], Index: i}
	if i > 0 && len(r.records) >= i {
		prev := r.records[i-1]
		step.From, step.Outcome, step.Attempts, step.Skipped = prev.Target, prev.Outcome, attempts(&prev), skipped(&prev)
	}
	ev.Fallback = step
	return r.emit(ev)
}

// After decides once target i ended with the typed error e (ev carries the
// target's identity, provider, operation and model for the events). next
// reports that the call falls back to target i+1: the fallback event was
// emitted. Otherwise final is the error the call ends with — e itself, its
// Targets set when more than one target was tried, or an admission outcome
// of R20.4 — and err an observer's error.
func (r *Run) After(ctx context.Context, i int, e *layer.RecoveryError, ev event.Event) (next bool, final *layer.RecoveryError, err error) {
	rec := layer.TargetRecord{Target: r.names[i], Outcome: e.Outcome, Failure: e.Failure, History: e.History}
	r.records = append(r.records, rec)
	if i+1 >= len(r.names) || ctx.Err() != nil || !r.FallsBack(i, e) {
		return false, r.final(e), nil
	}
	step := &event.FallbackStep{From: rec.Target, To: r.names[i+1], Index: i + 1, Outcome: e.Outcome,
		Attempts: attempts(&rec), Skipped: skipped(&rec)}
	f := e.Failure
	emit := func(t event.Type) error {
		x := ev
		x.Type, x.Failure, x.Fallback, x.NextAttempt = t, &f, step, 1
		return r.emit(x)
	}
	var facts codec.Facts
	if i < len(r.facts) {
		facts = r.facts[i]
	}
	o, err := r.rules.admit(ctx, facts, e, step, emit)
	if err != nil {
		return false, nil, err
	}
	if o != "" {
		if err := emit(o.TerminalEvent()); err != nil {
			return false, nil, err
		}
		fe := layer.NewRecoveryError(o, e.Failure, e.History, nil)
		return false, r.final(fe), nil
	}
	if err := emit(event.Fallback); err != nil {
		return false, nil, err
	}
	return true, nil, nil
}

// Opened returns, for target i whose response was handed to the caller
// (a stream that opened), the function that completes the error its run
// may still end with: it records the target's outcome and sets the error's
// Targets, as After does for a target that failed before (R20.7). prev, a
// layer.Call's earlier Finish, runs after it. For the first target, with
// no target left behind, it returns prev.
//
// logicalID is the logical ID of the target's run: an error of another
// logical completion (a *layer.Call used again) is left to prev alone.
func (r *Run) Opened(i int, logicalID string, prev func(*layer.RecoveryError)) func(*layer.RecoveryError) {
	if i == 0 || len(r.records) != i {
		return prev
	}
	name := r.names[i]
	left := r.records
	return func(e *layer.RecoveryError) {
		if logicalID != "" && e.Failure.LogicalID != "" && e.Failure.LogicalID != logicalID {
			if prev != nil {
				prev(e)
			}
			return
		}
		rec := layer.TargetRecord{Target: name, Outcome: e.Outcome, Failure: e.Failure, History: e.History}
		e.Targets = append(append(make([]layer.TargetRecord, 0, len(left)+1), left...), rec)
		if prev != nil {
			prev(e)
		}
	}
}

// final sets e's Targets when the call tried more than one.
func (r *Run) final(e *layer.RecoveryError) *layer.RecoveryError {
	if len(r.records) > 1 {
		e.Targets = append([]layer.TargetRecord(nil), r.records...)
	}
	return e
}

// attempts is the number of wire attempts a target's run sent.
func attempts(t *layer.TargetRecord) int {
	n := t.Failure.WireAttempt
	for _, f := range t.History {
		n = max(n, f.WireAttempt)
	}
	return n
}

// skipped reports that a target's run sent nothing because its circuit was
// open (R20.5).
func skipped(t *layer.TargetRecord) bool {
	return t.Outcome == event.OutcomeDelayCeiling && attempts(t) == 0
}
