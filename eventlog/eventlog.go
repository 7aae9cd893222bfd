// Package eventlog writes recourse's safe lifecycle events to a
// *slog.Logger: one structured record per event, at a level chosen by the
// event type, with only the safe fields of the event and its failure.
// It never writes a credential, a prompt, a body, a header
// value or a tool argument: those are not in an event in the first place,
// and this package adds nothing but the event's own typed fields.
//
//	p := retry.Recommended()
//	p.OnEvent = eventlog.New(logger)
//
// Levels: Debug for attempt_started, attempt_succeeded and Ollama's progress
// and metrics; Info for admission_pending, admission_allowed,
// delay_scheduled, retry_started, cooldown_wait and cancelled; Warn for
// attempt_failed, quota_refused, quota_unavailable, fallback and breaker (target_started
// is Info);
// Error for the terminal outcomes that end a call without success
// (exhausted, interrupted) and for admission_rejected,
// admission_no_decision and admission_required.
package eventlog

import (
	"context"
	"log/slog"

	"github.com/recourse-dev/recourse/event"
)

// Message is the message of every record.
const Message = "recourse event"

// Level returns the level of an event of type t (see the package
// documentation).
func Level(t event.Type) slog.Level {
	switch t {
	case event.AttemptStarted, event.AttemptSucceeded, event.Telemetry, event.Metrics:
		return slog.LevelDebug
	case event.AttemptFailed, event.QuotaRefused, event.QuotaUnavailable, event.Fallback, event.Breaker:
		return slog.LevelWarn
	case event.Exhausted, event.Interrupted,
		event.AdmissionRejected, event.AdmissionNoDecision, event.AdmissionRequired:
		return slog.LevelError
	}
	return slog.LevelInfo
}

// New returns an observer for retry.Policy.OnEvent that writes each event
// to logger as one record (Message, at Level(event type)) and always
// returns nil, so logging never changes a call. A nil logger means
// slog.Default() at the time of each event. The observer is safe for
// concurrent use when logger's handler is (slog's handlers are).
func New(logger *slog.Logger) func(event.Event) error {
	return func(ev event.Event) error {
		l := logger
		if l == nil {
			l = slog.Default()
		}
		lvl := Level(ev.Type)
		ctx := context.Background()
		if !l.Enabled(ctx, lvl) {
			return nil
		}
		l.LogAttrs(ctx, lvl, Message, Attrs(ev)...)
		return nil
	}
}

// Attrs returns the safe attributes of ev as New writes them, and as
// recourse-proxy writes its event lines: the event type ("type"), the
// identity, provider, operation, requested model, attempt limit, elapsed
// time and progress counters, the delay or next attempt when the event has
// them, the refusing quota of a quota_refused event (group "quota":
// upstream, resends, window_ms, fleet and the quota's safe text), the
// fallback step of a target_started or fallback event (group "fallback"),
// the HTTP status, the cursor of a background stream's resume (group
// "resume": cursor; never the response ID), and the failure's safe
// fields (group "failure": category, reason, eligibility, acceptance, and
// when set the HTTP status, phase, stall limit, honoured provider hint,
// known provider code, valid provider request ID, Retry-After form, the
// name of the header it was read from when that is not Retry-After, and
// its delay). It never returns a header value, a body, a prompt or a tool
// argument: an event holds none.
// It is one function of more than 80 lines because it is a flat list, one
// attribute or group per event field in the order a line shows them, each a
// few lines at most; split, that order would be spread over several
// functions.
func Attrs(ev event.Event) []slog.Attr {
	a := []slog.Attr{
		slog.String("type", string(ev.Type)),
		slog.String("logical_request_id", ev.LogicalID),
		slog.Int("wire_attempt", ev.WireAttempt),
		slog.Int("max_attempts", ev.MaxAttempts),
		slog.String("provider", string(ev.Provider)),
		slog.String("operation", string(ev.Operation)),
		slog.Int64("elapsed_ms", ev.Elapsed.Milliseconds()),
	}
	if ev.AttemptID != "" {
		a = append(a, slog.String("attempt_id", ev.AttemptID))
	}
	if ev.Model != "" {
		a = append(a, slog.String("model", ev.Model))
	}
	if ev.Type == event.DelayScheduled || ev.Type == event.CooldownWait {
		a = append(a, slog.Int64("delay_ms", ev.Delay.Milliseconds()))
	}
	if q := ev.Quota; q != nil {
		a = append(a, slog.Group("quota",
			slog.String("upstream", q.Upstream),
			slog.Int("resends", q.Resends),
			slog.Int64("window_ms", q.Window.Milliseconds()),
			slog.Bool("fleet", q.Fleet),
			slog.String("text", q.Text()),
		))
	}
	if b := ev.Breaker; b != nil {
		ba := []any{slog.String("upstream", b.Upstream), slog.Bool("refusing", b.Refusing)}
		if !b.CooldownUntil.IsZero() {
			ba = append(ba, slog.Time("cooldown_until", b.CooldownUntil.UTC()))
		}
		ba = append(ba, slog.Int64("skipped", b.Skipped), slog.Int64("failures", b.Failures))
		a = append(a, slog.Group("breaker", ba...))
	}
	if ev.NextAttempt != 0 {
		a = append(a, slog.Int("next_attempt", ev.NextAttempt))
	}
	if f := ev.Fallback; f != nil {
		a = append(a, fallbackAttr(f))
	}
	if ev.HTTPStatus != 0 {
		a = append(a, slog.Int("http_status", ev.HTTPStatus))
	}
	if r := ev.Resume; r != nil {
		a = append(a, slog.Group("resume", slog.Int64("cursor", r.Cursor)))
	}
	if ev.Type == event.Telemetry {
		a = append(a, slog.Int("frame", ev.Frame))
	}
	p := ev.Progress
	a = append(a, slog.Group("progress",
		slog.Bool("headers_received", p.HeadersReceived),
		slog.Int64("raw_bytes", p.RawBytes),
		slog.Int64("observed_content_bytes", p.Observed.ContentBytes),
		slog.Int64("observed_reasoning_bytes", p.Observed.ReasoningBytes),
		slog.Int64("observed_tool_fragments", p.Observed.ToolFragments),
		slog.Int64("delivered_content_bytes", p.Delivered.ContentBytes),
	))
	if m := ev.Metrics; m != nil {
		a = append(a, slog.Group("metrics",
			slog.Int("prompt_eval_count", m.PromptEvalCount),
			slog.Int("eval_count", m.EvalCount),
			slog.Int64("total_duration_ms", m.TotalDuration.Milliseconds()),
		))
	}
	if f := ev.Failure; f != nil {
		fa := []any{
			slog.String("category", string(f.Category)),
			slog.String("reason", string(f.Classification.Reason)),
			slog.Bool("eligible", f.Classification.Eligible),
			slog.String("acceptance", string(f.Acceptance)),
		}
		if f.HTTPStatus != 0 {
			fa = append(fa, slog.Int("http_status", f.HTTPStatus))
		}
		if f.Phase != "" {
			fa = append(fa, slog.String("phase", string(f.Phase)))
		}
		if f.Stall != "" {
			fa = append(fa, slog.String("stall", string(f.Stall)))
		}
		if f.Hint != event.HintNone {
			fa = append(fa, slog.String("hint", string(f.Hint)))
		}
		if f.ProviderCode != "" {
			fa = append(fa, slog.String("provider_code", f.ProviderCode))
		}
		if f.ProviderRequestID != "" {
			fa = append(fa, slog.String("provider_request_id", f.ProviderRequestID))
		}
		if ra := f.RetryAfter; ra.Kind != "" && ra.Kind != event.RetryAfterAbsent {
			fa = append(fa, slog.String("retry_after", string(ra.Kind)))
			if ra.Header != "" {
				fa = append(fa, slog.String("retry_after_header", ra.Header))
			}
			if ra.Valid() {
				fa = append(fa, slog.Int64("retry_after_ms", ra.Delay.Milliseconds()))
			}
		}
		a = append(a, slog.Group("failure", fa...))
	}
	return a
}
