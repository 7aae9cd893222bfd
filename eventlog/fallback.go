package eventlog

import (
	"log/slog"

	"github.com/recourse-dev/recourse/event"
)

// fallbackAttr is the "fallback" group of a target_started or fallback
// event: the targets' names, the target's index, and for a step
// away from a target the outcome there, its wire attempts and whether it
// was skipped.
func fallbackAttr(f *event.FallbackStep) slog.Attr {
	a := []any{slog.String("to", f.To), slog.Int("index", f.Index)}
	if f.From != "" {
		a = append(a, slog.String("from", f.From), slog.String("outcome", string(f.Outcome)), slog.Int("attempts", f.Attempts))
	}
	if f.Skipped {
		a = append(a, slog.Bool("skipped", true))
	}
	return slog.Group("fallback", a...)
}
