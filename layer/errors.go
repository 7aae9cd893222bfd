package layer

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
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
// entry. Its Error text and JSON are safe (R10.5); use Inspect on Failure or a
// History entry for private evidence.
type RecoveryError struct {
	Outcome Outcome   `json:"outcome"`
	Failure Failure   `json:"failure"`
	History []Failure `json:"history"`

	ctxErr error
}

// NewRecoveryError returns a RecoveryError. ctxErr, when the outcome is
// cancelled, is the context's error (context.Canceled or
// context.DeadlineExceeded) so that errors.Is works; it is otherwise nil.
func NewRecoveryError(o Outcome, final Failure, history []Failure, ctxErr error) *RecoveryError {
	h := make([]Failure, len(history))
	copy(h, history)
	return &RecoveryError{Outcome: o, Failure: final, History: h, ctxErr: ctxErr}
}

// Error returns a safe summary: outcome, category, reason, HTTP status and
// wire attempt. It never contains body text, headers or original messages.
func (e *RecoveryError) Error() string {
	var b strings.Builder
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
	b.WriteString(", wire attempt ")
	b.WriteString(strconv.Itoa(e.Failure.WireAttempt))
	b.WriteByte(')')
	return b.String()
}

// Unwrap returns context.Canceled or context.DeadlineExceeded for a cancelled
// outcome, so that errors.Is(err, context.Canceled) holds, and nil otherwise.
// It never exposes the private cause.
func (e *RecoveryError) Unwrap() error {
	if e.Outcome == OutcomeCancelled && (e.ctxErr == context.Canceled || e.ctxErr == context.DeadlineExceeded) {
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
	Reason       StreamErrorReason `json:"reason"`
	FinishReason string            `json:"finish_reason,omitempty"`
	Recovery     *RecoveryError    `json:"recovery,omitempty"`
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
