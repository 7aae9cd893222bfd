package broker

import (
	"encoding/json"
	"errors"
	"strconv"
	"time"

	"github.com/recourse-dev/recourse/event"
)

// RetryNotice announces that a completion failed and is about to be retried
// after a backoff. It is derived from the chain's delay_scheduled
// lifecycle event and delivered right before the sleep. Every field is safe
// to show and log: Error is a fixed description of the failure kind, never
// a key, a header, a body or tool output.
type RetryNotice struct {
	// Completion is the 1-based index of the completion within the run
	// (one Generate, GenerateStream or GenerateObject call, or one session
	// turn); all attempts of one completion share it.
	Completion int
	// FailedAttempt is the wire attempt that just failed (1-based).
	FailedAttempt int
	// MaxAttempts is the policy's attempt limit.
	MaxAttempts int
	// Wait is the backoff about to be slept before the next attempt.
	Wait time.Duration
	// Elapsed is the time since the completion started (monotonic clock).
	Elapsed time.Duration
	// HTTPStatus is the failed attempt's HTTP status, 0 when none arrived.
	HTTPStatus int
	// Error is a safe description of the failure, for example "HTTP 504"
	// or "transport error".
	Error string
	// Resume is set when the next attempt reads a background stream again
	// from its cursor instead of resending it; nil otherwise.
	Resume *event.Resume
}

// retryWire is the JSON form of a RetryNotice.
type retryWire struct {
	Completion    int           `json:"completion"`
	FailedAttempt int           `json:"failed_attempt"`
	MaxAttempts   int           `json:"max_attempts"`
	WaitMS        int64         `json:"wait_ms"`
	ElapsedMS     int64         `json:"elapsed_ms"`
	Status        int           `json:"status,omitempty"`
	Error         string        `json:"error"`
	Resume        *event.Resume `json:"resume,omitempty"`
}

// MarshalJSON encodes the notice with wait_ms and elapsed_ms in whole
// milliseconds and status left out when it is 0.
func (n RetryNotice) MarshalJSON() ([]byte, error) {
	return json.Marshal(retryWire{
		Completion: n.Completion, FailedAttempt: n.FailedAttempt, MaxAttempts: n.MaxAttempts,
		WaitMS: n.Wait.Milliseconds(), ElapsedMS: n.Elapsed.Milliseconds(),
		Status: n.HTTPStatus, Error: n.Error, Resume: n.Resume,
	})
}

// UnmarshalJSON decodes the form written by MarshalJSON.
func (n *RetryNotice) UnmarshalJSON(b []byte) error {
	var w retryWire
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	*n = RetryNotice{
		Completion: w.Completion, FailedAttempt: w.FailedAttempt, MaxAttempts: w.MaxAttempts,
		Wait: time.Duration(w.WaitMS) * time.Millisecond, Elapsed: time.Duration(w.ElapsedMS) * time.Millisecond,
		HTTPStatus: w.Status, Error: w.Error, Resume: w.Resume,
	}
	return nil
}

// ReasonRestart is the ContinuationNotice reason of a stream that broke
// before any block closed: nothing is committed and the next request is the
// same conversation again, so it is a restart rather than a continuation.
const ReasonRestart = "restart"

// ContinuationNotice announces that a stream broke after it started and
// that the broker sends the next request of the same turn loop. It
// is delivered before the continuation's backoff sleep. Every field is safe.
type ContinuationNotice struct {
	// Completion is the 1-based index within the run of the completion
	// whose stream broke.
	Completion int
	// Attempt is the continuation's number (1-based) within the budget.
	Attempt int
	// Max is the continuation budget.
	Max int
	// Reason is a safe description of the break ("transport error",
	// "client timeout"), or ReasonRestart when no block had closed.
	Reason string
	// Wait is the backoff slept before the continuation request.
	Wait time.Duration
	// Discarded counts the content bytes the consumer already received from
	// the broken stream that were not committed to the history (the
	// unfinished text block). A UI that printed them may take them back.
	Discarded int
}

// continuationWire is the JSON form of a ContinuationNotice.
type continuationWire struct {
	Completion     int    `json:"completion"`
	Attempt        int    `json:"attempt"`
	Max            int    `json:"max"`
	Reason         string `json:"reason"`
	WaitMS         int64  `json:"wait_ms"`
	DiscardedBytes int    `json:"discarded_bytes,omitempty"`
}

// MarshalJSON encodes the notice with wait_ms in whole milliseconds.
func (n ContinuationNotice) MarshalJSON() ([]byte, error) {
	return json.Marshal(continuationWire{
		Completion: n.Completion, Attempt: n.Attempt, Max: n.Max, Reason: n.Reason,
		WaitMS: n.Wait.Milliseconds(), DiscardedBytes: n.Discarded,
	})
}

// UnmarshalJSON decodes the form written by MarshalJSON.
func (n *ContinuationNotice) UnmarshalJSON(b []byte) error {
	var w continuationWire
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	*n = ContinuationNotice{
		Completion: w.Completion, Attempt: w.Attempt, Max: w.Max, Reason: w.Reason,
		Wait: time.Duration(w.WaitMS) * time.Millisecond, Discarded: w.DiscardedBytes,
	}
	return nil
}

// QuotaNotice announces that a completion failed and will not be retried
// because a retry quota (package layers/quota) refused the resend: the
// call ends with outcome quota_exhausted. It is derived from the chain's
// quota_refused lifecycle event. Every field is safe to show and log.
type QuotaNotice struct {
	// Completion is the 1-based index of the completion within the run.
	Completion int
	// FailedAttempt is the wire attempt that failed (1-based).
	FailedAttempt int
	// HTTPStatus is its HTTP status, 0 when none arrived.
	HTTPStatus int
	// Error is a safe description of the failure ("HTTP 503").
	Error string
	// Quota says which quota refused.
	Quota event.QuotaRefusal
}

// quotaWire is the JSON form of a QuotaNotice.
type quotaWire struct {
	Completion    int                `json:"completion"`
	FailedAttempt int                `json:"failed_attempt"`
	Status        int                `json:"status,omitempty"`
	Error         string             `json:"error"`
	Quota         event.QuotaRefusal `json:"quota"`
}

type quotaRefusalWire struct {
	Upstream string `json:"upstream"`
	Resends  int    `json:"resends"`
	WindowMS int64  `json:"window_ms"`
	Fleet    bool   `json:"fleet,omitempty"`
}

// MarshalJSON encodes the notice with the quota's window in whole
// milliseconds (quota.window_ms).
func (n QuotaNotice) MarshalJSON() ([]byte, error) {
	return json.Marshal(quotaWire{Completion: n.Completion, FailedAttempt: n.FailedAttempt, Status: n.HTTPStatus, Error: n.Error, Quota: n.Quota})
}

// UnmarshalJSON decodes the form written by MarshalJSON.
func (n *QuotaNotice) UnmarshalJSON(b []byte) error {
	var w struct {
		Completion    int              `json:"completion"`
		FailedAttempt int              `json:"failed_attempt"`
		Status        int              `json:"status"`
		Error         string           `json:"error"`
		Quota         quotaRefusalWire `json:"quota"`
	}
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	*n = QuotaNotice{Completion: w.Completion, FailedAttempt: w.FailedAttempt, HTTPStatus: w.Status, Error: w.Error,
		Quota: event.QuotaRefusal{Upstream: w.Quota.Upstream, Resends: w.Quota.Resends,
			Window: time.Duration(w.Quota.WindowMS) * time.Millisecond, Fleet: w.Quota.Fleet}}
	return nil
}

// CooldownNotice announces that a completion's first request waits for its
// provider's shared cooldown (a Retry-After another call saw, package
// layers/quota). It is derived from the chain's cooldown_wait lifecycle
// event and delivered before the wait. Every field is safe.
type CooldownNotice struct {
	// Completion is the 1-based index of the completion within the run.
	Completion int
	// Wait is the time the request waits before it is sent.
	Wait time.Duration
}

// cooldownWire is the JSON form of a CooldownNotice.
type cooldownWire struct {
	Completion int   `json:"completion"`
	WaitMS     int64 `json:"wait_ms"`
}

// MarshalJSON encodes the notice with wait_ms in whole milliseconds.
func (n CooldownNotice) MarshalJSON() ([]byte, error) {
	return json.Marshal(cooldownWire{Completion: n.Completion, WaitMS: n.Wait.Milliseconds()})
}

// UnmarshalJSON decodes the form written by MarshalJSON.
func (n *CooldownNotice) UnmarshalJSON(b []byte) error {
	var w cooldownWire
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	*n = CooldownNotice{Completion: w.Completion, Wait: time.Duration(w.WaitMS) * time.Millisecond}
	return nil
}

// ActivityKind is a kind of activity signal.
type ActivityKind string

// The activity signals that clear a transient status line.
const (
	// ActivityCompletionStarted: a completion (a new model request) starts.
	ActivityCompletionStarted ActivityKind = "completion_started"
	// ActivityContent: content arrived (the first delta of a completion, or
	// the content of a non-streamed answer).
	ActivityContent ActivityKind = "content_delta"
	// ActivityReasoning: reasoning arrived.
	ActivityReasoning ActivityKind = "reasoning_delta"
	// ActivityToolCall: a tool call arrived (a fragment, or a completed call
	// of a non-streamed answer).
	ActivityToolCall ActivityKind = "tool_delta"
	// ActivityToolResult: a tool finished and its result was appended.
	ActivityToolResult ActivityKind = "tool_result"
	// ActivityRunEnded: the run ended, successfully or not.
	ActivityRunEnded ActivityKind = "run_ended"
	// ActivityIdle: the application is idle or paused. The broker never
	// sends it; applications apply it to a Status themselves.
	ActivityIdle ActivityKind = "idle"
)

// Activity is a sign that the run moved on. The broker reports the first
// delta of each kind per completion (enough to clear a status line; the
// content itself flows through the stream), every completion start, every
// tool result and the end of the run.
type Activity struct {
	// Kind is the signal.
	Kind ActivityKind `json:"kind"`
	// Completion is the 1-based completion index within the run it refers
	// to (the last one for ActivityRunEnded), 0 when none.
	Completion int `json:"completion,omitempty"`
}

// NoticeEvent names the kind of a Notice on the wire.
type NoticeEvent string

// The events of a Notice.
const (
	// EventRetry is the event of a Notice carrying a RetryNotice.
	EventRetry NoticeEvent = "llm_retry"
	// EventContinuation is the event of a Notice carrying a ContinuationNotice.
	EventContinuation NoticeEvent = "llm_continuation"
	// EventActivity is the event of a Notice carrying an Activity signal.
	EventActivity NoticeEvent = "activity"
	// EventQuotaExhausted is the event of a Notice carrying a QuotaNotice.
	EventQuotaExhausted NoticeEvent = "llm_quota_exhausted"
	// EventCooldown is the event of a Notice carrying a CooldownNotice.
	EventCooldown NoticeEvent = "llm_cooldown"
)

// Notice is one operational event of a run for the user interface: exactly
// one of Retry, Continuation, Activity, Quota, Cooldown and Fallback is
// set, matching Event. Its JSON form is {"event":"llm_retry","data":{…}}
// (or llm_continuation, activity, llm_quota_exhausted, llm_cooldown,
// llm_fallback).
// Notices never enter the history, the model context or a session's
// messages.
type Notice struct {
	// Event says which of the other fields is set.
	Event NoticeEvent
	// Retry is set for EventRetry.
	Retry *RetryNotice
	// Continuation is set for EventContinuation.
	Continuation *ContinuationNotice
	// Activity is set for EventActivity.
	Activity *Activity
	// Quota is set for EventQuotaExhausted.
	Quota *QuotaNotice
	// Cooldown is set for EventCooldown.
	Cooldown *CooldownNotice
	// Fallback is set for EventFallback.
	Fallback *FallbackNotice
}

// noticeWire is the JSON form of a Notice.
type noticeWire struct {
	Event NoticeEvent     `json:"event"`
	Data  json.RawMessage `json:"data"`
}

// MarshalJSON encodes the notice as {"event":…,"data":…}. It fails when the
// field that Event names is nil.
func (n Notice) MarshalJSON() ([]byte, error) {
	var data any
	switch n.Event {
	case EventRetry:
		if n.Retry != nil {
			data = n.Retry
		}
	case EventContinuation:
		if n.Continuation != nil {
			data = n.Continuation
		}
	case EventActivity:
		if n.Activity != nil {
			data = n.Activity
		}
	case EventQuotaExhausted:
		if n.Quota != nil {
			data = n.Quota
		}
	case EventCooldown:
		if n.Cooldown != nil {
			data = n.Cooldown
		}
	case EventFallback:
		if n.Fallback != nil {
			data = n.Fallback
		}
	}
	if data == nil {
		return nil, errors.New("broker: notice " + strconv.Quote(string(n.Event)) + " has no data")
	}
	b, err := json.Marshal(data)
	if err != nil {
		return nil, err
	}
	return json.Marshal(noticeWire{Event: n.Event, Data: b})
}

// UnmarshalJSON decodes the form written by MarshalJSON; an unknown event
// is an error.
func (n *Notice) UnmarshalJSON(b []byte) error {
	var w noticeWire
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	out := Notice{Event: w.Event}
	var err error
	switch w.Event {
	case EventRetry:
		out.Retry = &RetryNotice{}
		err = json.Unmarshal(w.Data, out.Retry)
	case EventContinuation:
		out.Continuation = &ContinuationNotice{}
		err = json.Unmarshal(w.Data, out.Continuation)
	case EventActivity:
		out.Activity = &Activity{}
		err = json.Unmarshal(w.Data, out.Activity)
	case EventQuotaExhausted:
		out.Quota = &QuotaNotice{}
		err = json.Unmarshal(w.Data, out.Quota)
	case EventCooldown:
		out.Cooldown = &CooldownNotice{}
		err = json.Unmarshal(w.Data, out.Cooldown)
	case EventFallback:
		out.Fallback = &FallbackNotice{}
		err = json.Unmarshal(w.Data, out.Fallback)
	default:
		return errors.New("broker: unknown notice event " + strconv.Quote(string(w.Event)))
	}
	if err != nil {
		return err
	}
	*n = out
	return nil
}

// FailureText returns the safe short text of a failure that notices and
// status lines use: the stall limit that ended the attempt ("header
// timeout", "first-output timeout", "idle timeout"; see package
// layers/stall), otherwise "HTTP 504", "transport error", "client timeout",
// "provider error", "protocol error", "cancelled", or "error" (also for
// nil); it is event.Failure.Text, the wording the proxy's in-band notices
// use too. It never holds a body, header, key or tool output.
func FailureText(f *event.Failure) string { return f.Text() }

// retryNotice builds the notice of a delay_scheduled event of completion idx.
func retryNotice(idx int, ev event.Event) RetryNotice {
	n := RetryNotice{
		Completion: idx, FailedAttempt: ev.NextAttempt - 1, MaxAttempts: ev.MaxAttempts,
		Wait: ev.Delay, Elapsed: ev.Elapsed, Error: ev.Failure.Text(),
	}
	if f := ev.Failure; f != nil {
		n.FailedAttempt = f.WireAttempt
		n.HTTPStatus = f.HTTPStatus
	}
	if ev.Resume != nil {
		r := *ev.Resume
		n.Resume = &r
	}
	return n
}

// quotaNotice builds the notice of a quota_refused event of completion idx.
func quotaNotice(idx int, ev event.Event) QuotaNotice {
	n := QuotaNotice{Completion: idx, FailedAttempt: ev.NextAttempt - 1, Error: ev.Failure.Text()}
	if f := ev.Failure; f != nil {
		n.FailedAttempt, n.HTTPStatus = f.WireAttempt, f.HTTPStatus
	}
	if ev.Quota != nil {
		n.Quota = *ev.Quota
	}
	return n
}
