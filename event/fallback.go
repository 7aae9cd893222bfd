package event

// The lifecycle events of a call with fallback targets (R20, package
// layers/fallback and client.WithFallback). They are emitted by the
// fallback, never by the engine, and only when a call has targets.
const (
	// TargetStarted announces that a target's run of the call starts:
	// the first target (the request as given) and every target fallen back
	// to. Its Fallback names the target (To) and its index.
	TargetStarted Type = "target_started"
	// Fallback announces that the call leaves a target for the next
	// one: its Fallback names both and the outcome that caused it, its
	// Failure is the left target's final failure.
	Fallback Type = "fallback"
)

// FallbackStep describes one step of a call with fallback targets (R20): the
// target left (From), the target started (To) and why. Every field is
// safe: target names are model names, upstream hosts or names the caller
// gave, never a credential, a path or a query.
type FallbackStep struct {
	// From names the target left; empty on the first target_started.
	From string `json:"from,omitempty"`
	// To names the target that runs next.
	To string `json:"to"`
	// Index is To's 0-based index among the call's targets (0 is the
	// request as given).
	Index int `json:"index"`
	// Outcome is how recovery ended on From; empty on the first
	// target_started.
	Outcome Outcome `json:"outcome,omitempty"`
	// Attempts is the number of wire attempts sent to From (0 when it was
	// skipped, its circuit open).
	Attempts int `json:"attempts"`
	// Skipped reports that From was not contacted: its shared cooldown
	// horizon lay beyond the delay ceiling (R20.5).
	Skipped bool `json:"skipped,omitempty"`
}
