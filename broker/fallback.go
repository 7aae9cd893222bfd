package broker

import (
	"encoding/json"
	"strconv"

	"github.com/recourse-dev/recourse/event"
)

// EventFallback is the event of a Notice carrying a FallbackNotice.
const EventFallback NoticeEvent = "llm_fallback"

// FallbackNotice announces that a completion falls back to its next target:
// recovery on one model or upstream ended, nothing reached the
// caller, and the next one is asked. It is derived from the fallback
// lifecycle event of a client with fallback targets (client.WithFallback)
// and delivered before the next target's request. Every field is safe:
// target names are model names or hosts, never a key, a header, a body or
// tool output.
type FallbackNotice struct {
	// Completion is the 1-based index of the completion within the run.
	Completion int
	// From names the target left, To the target asked next.
	From, To string
	// Outcome is how recovery ended on From.
	Outcome event.Outcome
	// Attempts is the number of wire attempts sent to From (0 when its
	// circuit was open and it was skipped).
	Attempts int
	// Skipped reports that From was not contacted: its shared cooldown lay
	// beyond the delay ceiling.
	Skipped bool
	// HTTPStatus is the status of From's final failure, 0 when none.
	HTTPStatus int
	// Error is the safe description of From's final failure, for example
	// "HTTP 503" (see FailureText).
	Error string
}

// fallbackWire is the JSON form of a FallbackNotice.
type fallbackWire struct {
	Completion int    `json:"completion"`
	From       string `json:"from"`
	To         string `json:"to"`
	Outcome    string `json:"outcome"`
	Attempts   int    `json:"attempts"`
	Skipped    bool   `json:"skipped,omitempty"`
	Status     int    `json:"status,omitempty"`
	Error      string `json:"error"`
}

// MarshalJSON encodes the notice with status and skipped left out when
// they are zero.
func (n FallbackNotice) MarshalJSON() ([]byte, error) {
	return json.Marshal(fallbackWire{Completion: n.Completion, From: n.From, To: n.To, Outcome: string(n.Outcome),
		Attempts: n.Attempts, Skipped: n.Skipped, Status: n.HTTPStatus, Error: n.Error})
}

// UnmarshalJSON decodes the form written by MarshalJSON.
func (n *FallbackNotice) UnmarshalJSON(b []byte) error {
	var w fallbackWire
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	*n = FallbackNotice{Completion: w.Completion, From: w.From, To: w.To, Outcome: event.Outcome(w.Outcome),
		Attempts: w.Attempts, Skipped: w.Skipped, HTTPStatus: w.Status, Error: w.Error}
	return nil
}

// FormatFallback renders a fallback notice as one status line: "falling
// back to gpt-4o-mini after HTTP 503 (4 attempts)", or "falling back to
// gpt-4o-mini: gpt-4o is cooling down" for a target skipped without a
// request.
func FormatFallback(n FallbackNotice) string {
	if n.Skipped {
		return "falling back to " + n.To + ": " + n.From + " is cooling down"
	}
	what := n.Error
	if what == "" {
		what = string(n.Outcome)
	}
	unit := " attempts)"
	if n.Attempts == 1 {
		unit = " attempt)"
	}
	return "falling back to " + n.To + " after " + what + " (" + strconv.Itoa(n.Attempts) + unit
}

// fallbackNotice builds the notice of a fallback event of completion idx.
func fallbackNotice(idx int, ev event.Event) FallbackNotice {
	n := FallbackNotice{Completion: idx, Error: ev.Failure.Text()}
	if f := ev.Fallback; f != nil {
		n.From, n.To, n.Outcome, n.Attempts, n.Skipped = f.From, f.To, f.Outcome, f.Attempts, f.Skipped
	}
	if f := ev.Failure; f != nil {
		n.HTTPStatus = f.HTTPStatus
	}
	return n
}
