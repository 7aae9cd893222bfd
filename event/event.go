package event

import (
	"encoding/json"
	"time"

	"github.com/recourse-dev/recourse/codec"
)

// Event is a safe lifecycle event (R11). Every event carries the complete
// identity and the progress of the current attempt; failure-bearing events
// carry the safe Failure. Events are delivered synchronously, in order, to the
// policy's OnEvent observer; an observer that panics or returns an error
// propagates that to the caller and never causes a retry (R11.4).
type Event struct {
	// Type is the lifecycle event type (R11.1), for example
	// AttemptStarted; it says which of the optional fields are set.
	Type Type `json:"type"`
	// Identity is the identity of the logical completion and of its
	// current (or last) wire attempt.
	Identity
	// Provider is the provider of the call's codec.
	Provider codec.Provider `json:"provider"`
	// Operation is the kind of call: Ordinary, Structured or Streaming.
	Operation codec.Operation `json:"operation"`
	// Model is the requested model (it names tracing spans).
	Model string `json:"model,omitempty"`
	// Progress is what the current (or last) attempt has received so far
	// (R13.2); it is zero before the first attempt.
	Progress Progress `json:"progress"`
	// HTTPStatus is the response status of an attempt_succeeded or
	// attempt_failed event, when a response arrived.
	HTTPStatus int `json:"http_status,omitempty"`
	// Failure is set on attempt_failed, admission, delay, retry and terminal events.
	Failure *Failure `json:"failure,omitempty"`
	// Quota is set on a quota_refused event: which quota refused, in safe
	// terms.
	Quota *QuotaRefusal `json:"quota,omitempty"`
	// Delay is the scheduled backoff of a delay_scheduled event, or the
	// wait of a cooldown_wait event.
	Delay time.Duration `json:"-"`
	// NextAttempt is the wire attempt an admission or delay event is about.
	NextAttempt int `json:"next_attempt,omitempty"`
	// MaxAttempts is the policy's attempt limit.
	MaxAttempts int `json:"max_attempts"`
	// Elapsed is the time since the logical completion started (monotonic).
	Elapsed time.Duration `json:"-"`
	// Frame is the frame index of an Ollama telemetry event: it counts the
	// attempt's valid frames from 1, restarting with every attempt (R13.6).
	Frame int `json:"frame,omitempty"`
	// Metrics is set on an Ollama metrics event.
	Metrics *codec.Metrics `json:"metrics,omitempty"`
	// Fallback is set on target_started and fallback events (R20).
	Fallback *FallbackStep `json:"fallback,omitempty"`
	// Breaker is set on a breaker event: the upstream's breaker state
	// after the change.
	Breaker *BreakerState `json:"breaker,omitempty"`
	// Resume is set on the events of a background stream's resume read
	// (R19.10): the delay_scheduled and retry_started before it, and its
	// attempt_started, attempt_failed or attempt_succeeded.
	Resume *Resume `json:"resume,omitempty"`
}

// MarshalJSON encodes durations as integer milliseconds (delay_ms, elapsed_ms).
func (e Event) MarshalJSON() ([]byte, error) {
	type plain Event
	v := struct {
		plain
		DelayMS   *int64 `json:"delay_ms,omitempty"`
		ElapsedMS int64  `json:"elapsed_ms"`
	}{plain: plain(e), ElapsedMS: e.Elapsed.Milliseconds()}
	if e.Type == DelayScheduled || e.Type == CooldownWait {
		ms := e.Delay.Milliseconds()
		v.DelayMS = &ms
	}
	return json.Marshal(v)
}

// Resume is what an event of a resume read carries (R19.10): the cursor the
// read starts after. It holds no provider identifier.
type Resume struct {
	// Cursor is the sequence number of the last event the consumer had, or
	// -1 when none carried one.
	Cursor int64 `json:"cursor"`
}
