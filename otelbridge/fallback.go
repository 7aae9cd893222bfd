package otelbridge

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/recourse-dev/recourse/event"
)

// The attribute keys of a call with fallback targets.
const (
	keyFallbackTarget  = attribute.Key("recourse.fallback.target")
	keyFallbackIndex   = attribute.Key("recourse.fallback.index")
	keyFallbackFrom    = attribute.Key("recourse.fallback.from")
	keyFallbackOutcome = attribute.Key("recourse.fallback.outcome")
	keyFallbackSkipped = attribute.Key("recourse.fallback.skipped")
)

// targetState is the tracing state of the target a call with fallback
// targets runs on: its span, under the logical span, holds the target's
// attempt spans.
type targetState struct {
	span trace.Span
	ctx  context.Context
	name string // the target's name, for the metric label
	base int    // the attempts of the targets before it
	// idSet: the target's span carries its run's logical ID; lidSet: the
	// logical span carries the first run's (a target_started event, which
	// named the span, had none yet).
	idSet, lidSet bool
}

// startTarget opens the span of the target a target_started event names,
// ending the previous one. c.mu must be held.
func (c *call) startTarget(ev *event.Event, now time.Time) {
	c.endTarget(now)
	f := ev.Fallback
	attrs := []attribute.KeyValue{keyFallbackTarget.String(f.To), keyFallbackIndex.Int(f.Index)}
	if f.From != "" {
		attrs = append(attrs, keyFallbackFrom.String(f.From), keyFallbackOutcome.String(string(f.Outcome)))
	}
	ctx, span := c.l.tracer.Start(c.lctx, "recourse.target "+f.To,
		trace.WithSpanKind(trace.SpanKindInternal), trace.WithTimestamp(now), trace.WithAttributes(attrs...))
	if ev.Model != "" {
		span.SetAttributes(keyRequestModel.String(ev.Model))
	}
	c.tgt = targetState{span: span, ctx: ctx, name: f.To, base: c.attempts, lidSet: c.tgt.lidSet || f.Index > 0}
	// A new target's run starts clean: the outcome of the one before it
	// was recorded on that target's span.
	c.terminal, c.succeeded = nil, false
}

// fellBack records a fallback event: the left target's span ends with the
// outcome that caused it, and the logical span gets the event. c.mu must be
// held.
func (c *call) fellBack(ev *event.Event, now time.Time) {
	attrs := eventAttributes(ev)
	if f := ev.Fallback; f != nil {
		attrs = append(attrs, keyFallbackFrom.String(f.From), keyFallbackTarget.String(f.To),
			keyFallbackOutcome.String(string(f.Outcome)), keyAttempts.Int(f.Attempts))
		if f.Skipped {
			attrs = append(attrs, keyFallbackSkipped.Bool(true))
		}
	}
	c.logical.AddEvent("recourse.fallback", trace.WithTimestamp(now), trace.WithAttributes(attrs...))
	if s := c.tgt.span; s != nil {
		if t := c.terminal; t != nil {
			s.AddEvent(eventName(t.Type), trace.WithTimestamp(c.terminalTime), trace.WithAttributes(eventAttributes(t)...))
		}
		if f := ev.Fallback; f != nil {
			s.SetAttributes(keyOutcome.String(string(f.Outcome)))
			s.SetStatus(codes.Error, "recourse: fell back after "+string(f.Outcome))
		}
	}
	c.terminal = nil
}

// noteLogicalID puts the logical ID of a target's run on the target's
// span, and the first run's on the logical span, which a target_started
// event named before any run had an ID. c.mu must be held.
func (c *call) noteLogicalID(ev *event.Event) {
	if c.tgt.span == nil || ev.LogicalID == "" || ev.Type == event.Fallback {
		return
	}
	if !c.tgt.idSet {
		c.tgt.idSet = true
		c.tgt.span.SetAttributes(keyLogicalID.String(ev.LogicalID))
	}
	if !c.tgt.lidSet {
		c.tgt.lidSet = true
		c.logical.SetAttributes(keyLogicalID.String(ev.LogicalID))
	}
}

// endTarget ends the current target's span, if any. c.mu must be held.
func (c *call) endTarget(now time.Time) {
	if c.tgt.span != nil {
		c.tgt.span.End(trace.WithTimestamp(now))
		c.tgt.span = nil
	}
}

// attemptParent is the context attempt spans start under: the current
// target's span, or the logical span. c.mu must be held.
func (c *call) attemptParent() context.Context {
	if c.tgt.ctx != nil {
		return c.tgt.ctx
	}
	return c.lctx
}

// fallbackLabel is the metric label of the target a call with fallback
// targets ran on, when it has any. c.mu must be held.
func (c *call) fallbackLabel(a []attribute.KeyValue) []attribute.KeyValue {
	if c.tgt.name != "" {
		a = append(a, keyFallbackTarget.String(c.tgt.name))
	}
	return a
}
