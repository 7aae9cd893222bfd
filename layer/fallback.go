package layer

import (
	"github.com/recourse-dev/recourse/event"
	"strconv"
	"strings"
)

// TargetRecord is what a *RecoveryError keeps of one target of a call
// with fallback targets (R20.7): the outcome there, its final failure and
// its bounded history. Its fields are safe, like the error's.
type TargetRecord struct {
	// Target names the target.
	Target string `json:"target"`
	// Outcome is how recovery ended on the target.
	Outcome event.Outcome `json:"outcome"`
	// Failure is the safe record of the target's final failure.
	Failure event.Failure `json:"failure"`
	// History holds the target's completed wire attempts, oldest first.
	History []event.Failure `json:"history"`
}

// targetsText is the suffix of a RecoveryError's text when the call fell
// back: the targets tried, in order.
func targetsText(ts []TargetRecord) string {
	if len(ts) < 2 {
		return ""
	}
	var b strings.Builder
	b.WriteString("; ")
	b.WriteString(strconv.Itoa(len(ts)))
	b.WriteString(" fallback targets tried: ")
	for i, t := range ts {
		if i > 0 {
			b.WriteString(" → ")
		}
		b.WriteString(t.Target)
		b.WriteString(" (")
		b.WriteString(string(t.Outcome))
		b.WriteByte(')')
	}
	return b.String()
}
