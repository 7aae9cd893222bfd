package layer

import (
	"context"
	"encoding/json"
	"errors"
	"github.com/recourse-dev/recourse/event"
	"net/http"
	"strconv"
	"strings"

	"github.com/recourse-dev/recourse/codec"
)

// PolicyErrorCode is the Code of every PolicyError.
const PolicyErrorCode = "RECOVERY_POLICY_ERROR"

// PolicyError reports an invalid recovery policy field (R3.1) or an invalid
// jitter sample (R3.2). It names the field and never the supplied value.
// Nothing is captured, sent or emitted when a PolicyError is returned.
type PolicyError struct {
	// Code is always PolicyErrorCode.
	Code string `json:"code"`
	// Field is the Go name of the offending policy field, for example "MaxAttempts".
	Field string `json:"field"`
}

// NewPolicyError returns a PolicyError for field.
func NewPolicyError(field string) *PolicyError {
	return &PolicyError{Code: PolicyErrorCode, Field: field}
}

// Error returns a safe message that names the field only.
func (e *PolicyError) Error() string {
	return "recourse: invalid recovery policy field " + e.Field + " (" + PolicyErrorCode + ")"
}

// RecoveryError is the typed error of a completion that recovery could not
// complete (R10.4). It carries the outcome, the final failure and the bounded
// history of every completed wire attempt (at most MaxAttempts entries). For
// exhausted and interrupted outcomes the final failure is the last history
// entry. Its Error text and JSON are safe (R10.5); use event.Inspect on Failure or a
// History entry for private evidence.
type RecoveryError struct {
	// Outcome says how recovery ended, for example event.OutcomeExhausted or
	// event.OutcomeInterrupted (R10.4).
	Outcome event.Outcome `json:"outcome"`
	// Failure is the safe record of the final failure, the one that ended
	// the call; its WireAttempt is 0 when nothing was sent.
	Failure event.Failure `json:"failure"`
	// History holds the safe record of every completed wire attempt, oldest
	// first, at most the policy's MaxAttempts entries; it is empty when no
	// attempt completed (a request capture that failed before the first
	// send).
	History []event.Failure `json:"history"`
	// Quota says which retry quota refused the resend, for outcome
	// quota_exhausted; nil otherwise.
	Quota *event.QuotaRefusal `json:"quota,omitempty"`
	// Targets, for a call with fallback targets that tried more than one
	// (R20.7), holds every target tried, in order, the last one included:
	// the error's own Outcome, Failure and History are the last target's.
	// Nil otherwise.
	Targets []TargetRecord `json:"targets,omitempty"`

	ctxErr error
}

// NewRecoveryError returns a RecoveryError. ctxErr, when the outcome is
// cancelled, is the context's error (context.Canceled or
// context.DeadlineExceeded) so that errors.Is works; it is otherwise nil.
func NewRecoveryError(o event.Outcome, final event.Failure, history []event.Failure, ctxErr error) *RecoveryError {
	h := make([]event.Failure, len(history))
	copy(h, history)
	return &RecoveryError{Outcome: o, Failure: final, History: h, ctxErr: ctxErr}
}

// Error returns a safe summary: outcome, category, reason, HTTP status and
// wire attempt, and for a stream that ended on a finish it does not accept
// (R13.3) that the completion is incomplete, with the finish when it is a
// documented one ("length"); for a permanent HTTP or provider failure, what the provider
// said in safe terms (the status and a known provider code); for a refused
// redirect, a delay ceiling or a deadline, why no retry was made; after a
// fallback (R20.7), the targets tried and the outcome on each. It never
// contains body text, headers or original messages.
func (e *RecoveryError) Error() string {
	return e.text() + targetsText(e.Targets)
}

func (e *RecoveryError) text() string {
	var b strings.Builder
	f := &e.Failure
	tail := func() string {
		t := ""
		if f.HTTPStatus != 0 {
			t = "HTTP " + strconv.Itoa(f.HTTPStatus) + ", "
		}
		return " (" + t + "wire attempt " + strconv.Itoa(f.WireAttempt) + ")"
	}
	switch {
	case e.Outcome == event.OutcomeInterrupted && f.Category == event.CategoryHTTP && IsRedirect(f.HTTPStatus):
		return "recourse: the provider answered HTTP " + strconv.Itoa(f.HTTPStatus) +
			", a redirect: refused, its Location never contacted (wire attempt " + strconv.Itoa(f.WireAttempt) + ")"
	case e.Outcome == event.OutcomeDelayCeiling && !f.RetryAfter.Valid():
		return "recourse: no retry: the upstream's shared cooldown lasts beyond the delay ceiling; outcome delay_ceiling" + tail()
	case e.Outcome == event.OutcomeDelayCeiling:
		return "recourse: no retry: the provider asked to wait " + f.RetryAfter.Delay.String() +
			" (" + f.RetryAfter.HeaderName() + "), above the delay ceiling; outcome delay_ceiling" + tail()
	case e.Outcome == event.OutcomeDeadline:
		return "recourse: no retry: the recovery budget or deadline ran out; outcome deadline" + tail()
	case e.Outcome == event.OutcomeQuotaExhausted:
		return "recourse: not retried: " + e.Quota.Text() + "; outcome quota_exhausted" + tail()
	}
	if e.Outcome == event.OutcomeInterrupted && f.Classification.Reason == event.ReasonPermanent &&
		(f.Category == event.CategoryHTTP || f.Category == event.CategoryProviderResponse) && incompleteText(f) == "" {
		// A permanent failure is what the provider said, not a recovery.
		b.WriteString("recourse: the provider ")
		if f.Category == event.CategoryProviderResponse {
			b.WriteString("returned an error")
			if f.HTTPStatus != 0 {
				b.WriteString(" in HTTP ")
				b.WriteString(strconv.Itoa(f.HTTPStatus))
			}
		} else {
			b.WriteString("answered HTTP ")
			b.WriteString(strconv.Itoa(f.HTTPStatus))
		}
		if f.ProviderCode != "" {
			b.WriteString(" (")
			b.WriteString(f.ProviderCode)
			b.WriteByte(')')
		}
		b.WriteString(", a permanent failure: not retried (wire attempt ")
		b.WriteString(strconv.Itoa(f.WireAttempt))
		b.WriteByte(')')
		return b.String()
	}
	b.WriteString("recourse: recovery ")
	b.WriteString(string(e.Outcome))
	b.WriteString(" (")
	b.WriteString(string(e.Failure.Category))
	b.WriteByte('/')
	b.WriteString(string(e.Failure.Classification.Reason))
	if e.Failure.HTTPStatus != 0 {
		b.WriteString(", HTTP ")
		b.WriteString(strconv.Itoa(e.Failure.HTTPStatus))
	}
	if e.Failure.Stall != "" {
		b.WriteString(", ")
		b.WriteString(string(e.Failure.Stall))
	}
	if e.Failure.Hint != event.HintNone {
		b.WriteString(", hint ")
		b.WriteString(string(e.Failure.Hint))
	}
	b.WriteString(", wire attempt ")
	b.WriteString(strconv.Itoa(e.Failure.WireAttempt))
	b.WriteByte(')')
	b.WriteString(incompleteText(f))
	return b.String()
}

// incompleteText returns ": incomplete completion (finish <reason>)" when
// f's private cause is a stream that ended on a finish that is not an
// accepted one (R13.3), naming the finish only when it is a documented
// value; ": the stream ended after its finish without its end marker" when
// the cause is codec.ErrNoEndMarker; and "" otherwise: what was incomplete, in
// safe terms.
func incompleteText(f *event.Failure) string {
	cause := f.PrivateCause()
	if cause == nil {
		return ""
	}
	if errors.Is(cause, codec.ErrNoEndMarker) {
		return ": the stream ended after its finish without its end marker"
	}
	var se *StreamError
	if !errors.As(cause, &se) || se.Reason != StreamIncompleteCompletion {
		return ""
	}
	if codec.DocumentedFinish(se.FinishReason) {
		return ": incomplete completion (finish " + se.FinishReason + ")"
	}
	return ": incomplete completion (an undocumented finish)"
}

// Unwrap returns context.Canceled or context.DeadlineExceeded for a cancelled
// outcome, so that errors.Is(err, context.Canceled) holds, and nil otherwise.
// It never exposes the private cause.
func (e *RecoveryError) Unwrap() error {
	if e.Outcome == event.OutcomeCancelled && (e.ctxErr == context.Canceled || e.ctxErr == context.DeadlineExceeded) {
		return e.ctxErr
	}
	return nil
}

// MarshalJSON encodes the safe fields with a "name" of "RecoveryError".
func (e *RecoveryError) MarshalJSON() ([]byte, error) {
	type plain RecoveryError
	return json.Marshal(struct {
		Name string `json:"name"`
		*plain
	}{"RecoveryError", (*plain)(e)})
}

// StreamErrorReason is the reason of a StreamError.
type StreamErrorReason string

// The stream error reasons of the event API (R13.1, R13.3).
const (
	StreamCancelled            StreamErrorReason = "cancelled"
	StreamInterrupted          StreamErrorReason = "interrupted_stream"
	StreamRequestFailed        StreamErrorReason = "request_failed"
	StreamIncompleteCompletion StreamErrorReason = "incomplete_completion"
)

// StreamError is the error item of a stream. Recovery, when set, is the typed
// RecoveryError behind it (reachable with errors.As). FinishReason keeps the
// provider's finish reason for incomplete completions ("length").
type StreamError struct {
	// Reason says why the stream ended without a completion:
	// StreamCancelled, StreamInterrupted, StreamRequestFailed or
	// StreamIncompleteCompletion.
	Reason StreamErrorReason `json:"reason"`
	// FinishReason is the provider's finish reason of an incomplete
	// completion, for example "length"; empty otherwise.
	FinishReason string `json:"finish_reason,omitempty"`
	// Recovery is the RecoveryError behind the error when recovery ran, and
	// nil otherwise (then Detail may say what ended the stream).
	Recovery *RecoveryError `json:"recovery,omitempty"`
	// Detail is a safe error that ended the stream without a recovery: a
	// *PolicyError, an *UnsupportedError, or a refusal of tools.
	Detail error `json:"-"`
}

// Error returns a safe message.
func (e *StreamError) Error() string {
	s := "recourse: stream " + string(e.Reason)
	if e.FinishReason != "" {
		s += " (finish " + e.FinishReason + ")"
	}
	if e.Recovery != nil {
		s += ": " + e.Recovery.Error()
	} else if e.Detail != nil {
		s += ": " + e.Detail.Error()
	}
	return s
}

// Unwrap returns the RecoveryError, or the Detail, when there is one.
func (e *StreamError) Unwrap() error {
	if e.Recovery != nil {
		return e.Recovery
	}
	return e.Detail
}

// RedirectError reports a refused redirect (R2.2): a 301, 302, 303, 307 or
// 308 answer that nothing may follow. The redirect guard returns it instead
// of the response, so neither the engine nor an http.Client above the chain
// can follow the Location. Its Error text is safe: it names the status only.
type RedirectError struct {
	// Response is the redirect response with its body already read
	// (sensitive: its headers include the Location).
	Response *http.Response
	// Body holds the first bytes of the redirect body (sensitive).
	Body []byte
}

// Error returns a safe message.
func (e *RedirectError) Error() string {
	return "recourse: redirect refused (HTTP " + strconv.Itoa(e.Response.StatusCode) + ")"
}

// StatusCode returns the redirect status.
func (e *RedirectError) StatusCode() int { return e.Response.StatusCode }

// IsRedirect reports whether status is one that an http.Client would
// follow: 301, 302, 303, 307 or 308.
func IsRedirect(status int) bool {
	switch status {
	case http.StatusMovedPermanently, http.StatusFound, http.StatusSeeOther,
		http.StatusTemporaryRedirect, http.StatusPermanentRedirect:
		return true
	}
	return false
}

// ObserverError is returned when the policy's OnEvent returned an error; it
// wraps that error unchanged. It is never a retry (R11.4).
type ObserverError struct {
	// Event is the type of the event the observer returned the error for.
	Event event.Type
	// Err is the observer's error, unchanged; Unwrap returns it.
	Err error
}

// Error returns a message naming the event; the wrapped error is the
// observer's own.
func (e *ObserverError) Error() string {
	return "recourse: event observer failed on " + string(e.Event) + ": " + e.Err.Error()
}

// Unwrap returns the observer's error.
func (e *ObserverError) Unwrap() error { return e.Err }

// ErrSecondSend is returned by the sender when a layer inside the engine
// tried to send one attempt's request twice: an attempt is at most one POST
// (R2.1), and only the engine may authorize another. The attempt then fails
// as not eligible, reason permanent, and the call ends interrupted (R2.6).
var ErrSecondSend = errors.New("recourse: an attempt's request was sent twice; only the engine may resend")

// ErrDetachedRequest is returned by the sender of a chain with a recovery
// engine when a request reached it without the attempt the engine placed in
// its context: a per-attempt layer rebuilt the request with a new context
// (http.NewRequest, req.Clone(context.Background())) instead of passing the
// one it was given on (R2.1). Nothing is sent. It is a programming error in
// that layer, so the engine never resends it: the attempt fails with
// category transport, acceptance no and reason permanent.
var ErrDetachedRequest = errors.New("recourse: a request reached the sender without its attempt; a per-attempt layer must pass its request's context on")
