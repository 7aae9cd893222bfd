package eventlog_test

import (
	"log/slog"
	"os"
	"time"

	"github.com/recourse-dev/recourse/codec"
	"github.com/recourse-dev/recourse/event"
	"github.com/recourse-dev/recourse/eventlog"
)

// New writes each lifecycle event as one record; here a delay_scheduled
// event to a text handler without timestamps.
func ExampleNew() {
	logger := slog.New(slog.NewTextHandler(os.Stdout, &slog.HandlerOptions{
		ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey {
				return slog.Attr{}
			}
			return a
		},
	}))
	onEvent := eventlog.New(logger)
	_ = onEvent(event.Event{
		Type:     event.DelayScheduled,
		Identity: event.Identity{LogicalID: "5d1c2a40-0000-4000-8000-000000000000", WireAttempt: 1},
		Provider: codec.OpenAI, Operation: codec.Ordinary, MaxAttempts: 4,
		Delay: 1200 * time.Millisecond, NextAttempt: 2,
		Failure: &event.Failure{Category: event.CategoryHTTP, HTTPStatus: 504, Acceptance: event.AcceptanceUnknown,
			Classification: event.Classification{Eligible: true, Reason: event.ReasonTransient}},
	})
	// Output:
	// level=INFO msg="recourse event" type=delay_scheduled logical_request_id=5d1c2a40-0000-4000-8000-000000000000 wire_attempt=1 max_attempts=4 provider=openai operation=ordinary elapsed_ms=0 delay_ms=1200 next_attempt=2 progress.headers_received=false progress.raw_bytes=0 progress.observed_content_bytes=0 progress.observed_reasoning_bytes=0 progress.observed_tool_fragments=0 progress.delivered_content_bytes=0 failure.category=http failure.reason=transient failure.eligible=true failure.acceptance=unknown failure.http_status=504
}
