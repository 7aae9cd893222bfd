package event

import (
	"encoding/json"
	"net/http"
	"time"

	"github.com/recourse-dev/recourse/chat"
	"github.com/recourse-dev/recourse/codec"
)

// Identity is the local identity of one wire attempt of one logical
// completion (R10.1). The logical request ID is a UUID v4 shared by every
// attempt of a completion; the attempt ID is a fresh UUID per wire attempt;
// WireAttempt is 1-based, and 0 means nothing was sent. None of these values
// is ever sent to the provider (R2.4).
type Identity struct {
	// LogicalID is the logical request ID, a UUID v4 shared by every attempt
	// of one completion.
	LogicalID string `json:"logical_request_id"`
	// AttemptID is the attempt ID, a fresh UUID v4 for every wire attempt.
	AttemptID string `json:"attempt_id,omitempty"`
	// WireAttempt is the 1-based number of the wire attempt; 0 means nothing
	// was sent.
	WireAttempt int `json:"wire_attempt"`
}

// Progress is what one attempt received (R13.2): whether response headers
// arrived, the raw body bytes, and the semantic evidence observed on the wire
// and delivered to the consumer.
type Progress struct {
	// HeadersReceived reports that the attempt's response headers arrived.
	HeadersReceived bool `json:"headers_received"`
	// RawBytes is the number of response body bytes received on the wire,
	// before decoding, keepalives included.
	RawBytes int64 `json:"raw_bytes"`
	// Observed is the semantic evidence decoded from the bytes received,
	// whether or not it reached the consumer.
	Observed codec.Counts `json:"observed"`
	// Delivered is the semantic evidence handed to the consumer.
	// client.Client.StreamEvents delivers no reasoning, so there its
	// ReasoningBytes stay 0.
	Delivered codec.Counts `json:"delivered"`
}

// RetryAfterKind is the form of a parsed Retry-After header (R5.5).
type RetryAfterKind string

// The Retry-After parse results of R5.5.
const (
	RetryAfterAbsent  RetryAfterKind = "absent"
	RetryAfterInvalid RetryAfterKind = "invalid"
	RetryAfterSeconds RetryAfterKind = "seconds"
	RetryAfterDate    RetryAfterKind = "date"
	// RetryAfterMilliseconds is a provider's millisecond hint
	// (retry-after-ms or x-ms-retry-after-ms), read only when
	// retry.Policy.ProviderHints is on; RetryAfter.Header names the header.
	RetryAfterMilliseconds RetryAfterKind = "milliseconds"
	// RetryAfterBody is a delay a provider wrote into its error body
	// instead of a header (codec.BodyHinter: Gemini's
	// RetryInfo.retryDelay), read under every policy (R23.2);
	// RetryAfter.Header names the body field.
	RetryAfterBody RetryAfterKind = "body"
)

// RetryAfter is an explicit Retry-After parse result (R5.5). Delay is the
// remaining minimum delay for the seconds, date and milliseconds forms; Time
// is the parsed instant of the date form. The zero value means absent. With
// retry.Policy.ProviderHints on, a valid retry-after-ms or
// x-ms-retry-after-ms header takes the place of Retry-After (see Header);
// it is the same kind of minimum, held to the delay ceiling and the budget
// exactly as Retry-After is.
type RetryAfter struct {
	// Kind is the form of the header; the empty Kind of the zero value
	// means absent, like RetryAfterAbsent.
	Kind RetryAfterKind
	// Delay is the remaining minimum delay of the seconds and date forms: 0
	// for a date in the past, saturated at the largest time.Duration for a
	// date too far ahead. It is zero for absent and invalid values.
	Delay time.Duration
	// Time is the parsed instant of the date form, in UTC; it is the zero
	// time for every other form.
	Time time.Time
	// Header names the header the value was read from when it is not
	// Retry-After: "retry-after-ms" or "x-ms-retry-after-ms" (a provider
	// hint, also when that hint was invalid), or, for RetryAfterBody, the
	// error body's field ("RetryInfo.retryDelay"); empty for Retry-After
	// itself.
	Header string
}

// Valid reports whether the value is a usable minimum delay.
func (r RetryAfter) Valid() bool {
	return r.Kind == RetryAfterSeconds || r.Kind == RetryAfterDate || r.Kind == RetryAfterMilliseconds || r.Kind == RetryAfterBody
}

// HeaderName returns the name of the header the value was read from:
// Header, or "Retry-After" when Header is empty.
func (r RetryAfter) HeaderName() string {
	if r.Header != "" {
		return r.Header
	}
	return "Retry-After"
}

// MarshalJSON encodes the value as
// {"kind":…,"delay_ms":…,"unix_ms":…,"header":…}; header is left out for
// Retry-After itself.
func (r RetryAfter) MarshalJSON() ([]byte, error) {
	v := struct {
		Kind    RetryAfterKind `json:"kind"`
		DelayMS *int64         `json:"delay_ms,omitempty"`
		UnixMS  *int64         `json:"unix_ms,omitempty"`
		Header  string         `json:"header,omitempty"`
	}{Kind: r.Kind, Header: r.Header}
	if v.Kind == "" {
		v.Kind = RetryAfterAbsent
	}
	if r.Valid() {
		ms := r.Delay.Milliseconds()
		v.DelayMS = &ms
	}
	if r.Kind == RetryAfterDate {
		ms := r.Time.UnixMilli()
		v.UnixMS = &ms
	}
	return json.Marshal(v)
}

// Hint is a provider's explicit resend hint that the engine honoured. Hints
// are read only when retry.Policy.ProviderHints is on; the default chain
// reads none.
type Hint string

// The provider hints a Failure can record.
const (
	// HintNone means no hint was honoured.
	HintNone Hint = ""
	// HintShouldNotRetry is a response header "x-should-retry: false"
	// (OpenAI): the failure is not eligible, reason
	// ReasonProviderNoRetry.
	HintShouldNotRetry Hint = "x_should_retry_false"
	// HintInsufficientQuota is an HTTP 429, or a provider error object
	// with a 2xx status (a stream's in-band error frame included), whose
	// provider error code says the account's quota or spend limit is
	// exhausted (see layer.IsQuotaExhaustedCode): not eligible, reason
	// ReasonInsufficientQuota.
	HintInsufficientQuota Hint = "insufficient_quota"
)

// Classification is the eligibility verdict of R4.
type Classification struct {
	// Eligible reports that a resend may be considered; attempts left,
	// budget, deadline and admission still decide (R4).
	Eligible bool `json:"eligible"`
	// Reason is why the failure is or is not eligible: ReasonTransient for
	// an eligible one, otherwise ReasonPermanent, ReasonSemanticOutput, ...
	Reason Reason `json:"reason"`
}

// Failure is the safe record of one failed attempt (R10.2). Every field is
// safe to log: it never holds body text, header values, credentials, tool
// arguments or an original error message. The private evidence behind it is
// reached only through Inspect.
type Failure struct {
	// Identity is the identity of the failed attempt (R10.1).
	Identity
	// Provider is the provider of the call's codec.
	Provider codec.Provider `json:"provider"`
	// Operation is the kind of call that failed: Ordinary, Structured or
	// Streaming.
	Operation codec.Operation `json:"operation"`
	// Category is the kind of failure, for example CategoryTransport or
	// CategoryHTTP.
	Category Category `json:"category"`
	// HTTPStatus is the response status code, or 0 when no response arrived.
	HTTPStatus int `json:"http_status,omitempty"`
	// Phase is where the attempt failed, for example PhaseAwaitingHeaders;
	// PhaseUnknown (empty) when it is not known.
	Phase Phase `json:"phase,omitempty"`
	// Acceptance says whether the provider may have accepted the request:
	// AcceptanceYes for a 2xx response, AcceptanceNo only when provably
	// nothing was sent, AcceptanceUnknown otherwise.
	Acceptance Acceptance `json:"acceptance"`
	// Progress is what the attempt received before it failed (R13.2).
	Progress Progress `json:"progress"`
	// RetryAfter is the parsed Retry-After header of the response, whatever
	// its status (R5.1); its Kind is RetryAfterAbsent when the response had
	// none or no response arrived.
	RetryAfter RetryAfter `json:"retry_after"`
	// Classification is the eligibility verdict, kept apart from admission.
	Classification Classification `json:"classification"`
	// ProviderCode is a provider error code from the known set of R10.3, or empty.
	ProviderCode string `json:"provider_code,omitempty"`
	// ProviderRequestID is the provider's request ID when it is a valid UUID
	// (optionally "req_"-prefixed) that echoes nothing of the request (R10.3).
	ProviderRequestID string `json:"provider_request_id,omitempty"`
	// RemoteTerminationConfirmed is always false: closing a local request
	// never proves that remote inference ended (R9.3).
	RemoteTerminationConfirmed bool `json:"remote_termination_confirmed"`
	// Stall names the per-attempt stall limit that ended the attempt (see
	// layer.StallError): StallHeader, StallFirstOutput or StallIdle. It is empty
	// when no stall limit fired, or when a layer.StallError named a limit
	// outside these three (the failure is still a stall). A stall is a
	// transport failure (CategoryTransport), or an HTTP failure when it cut
	// an error response's body.
	Stall StallLimit `json:"stall,omitempty"`
	// Hint is the provider's resend hint that the classification honoured
	// (retry.Policy.ProviderHints), or HintNone.
	Hint Hint `json:"hint,omitempty"`
	// Usage is the token accounting the attempt reported before it failed,
	// for example the input tokens of a Messages API stream's
	// message_start ahead of an in-band overload (R22.10); nil when the
	// attempt reported none. It holds only counts, so it is safe; each
	// failure the engine records has its own copy.
	Usage *chat.Usage `json:"usage,omitempty"`

	ev *evidence
}

// ResponseEvidence is what a response said about itself: finish reason,
// model, usage, and the provider's error code and request ID as sent. It is
// sensitive and reached only through Inspect.
type ResponseEvidence struct {
	// FinishReason is the provider's finish or done reason as sent, for
	// example "length"; empty when the response carried none.
	FinishReason string
	// Model is the model the provider reported, as sent; empty when none.
	Model string
	// Usage is the provider's token accounting, or nil when it reported
	// none.
	Usage *chat.Usage
	// Code is the provider's error code exactly as sent, also one outside
	// KnownProviderCodes(); empty when none.
	Code string
	// RequestID is the provider's request ID as the codec read it from the
	// response headers (Codec.RequestID), valid or not; empty when none.
	RequestID string
}

// Evidence is the private, sensitive evidence behind a Failure (R10.5). It
// may hold credentials echoed by a server, prompt text and tool arguments:
// never log it by default.
type Evidence struct {
	// Cause is the original error value of the failure (not a reconstructed
	// message): a transport error, a body read error, a decode error or a
	// request-capture error.
	Cause error
	// CaptureCause is the error returned (or the panic recovered) from the
	// OnWire capture hook, kept apart from a body transport Cause.
	CaptureCause any
	// AdmissionCause is the error returned or the value panicked by the
	// admission hook, or the unknown decision it returned.
	AdmissionCause any
	// DelayCause is the error returned by the Sleep hook.
	DelayCause error
	// Bytes is a copy of the response body bytes received, bounded
	// (retry.MaxEvidenceBytes, 1 MiB): the first bytes of a failed ordinary
	// body, the last bytes of a stream whose capture failed, or the frame
	// that ended a stream that failed otherwise.
	Bytes []byte
	// Headers is a copy of the response headers, or nil when none arrived.
	Headers http.Header
	// Response is what the response said about itself.
	Response ResponseEvidence
}

type evidence struct {
	cause          error
	captureCause   any
	admissionCause any
	delayCause     error
	bytes          []byte
	headers        http.Header
	response       ResponseEvidence
}

// Inspect returns defensive copies of the private evidence behind f, or nil
// when f carries none. It is the one explicit, sensitive way to reach original
// errors, bytes and headers (R10.5); mutating what it returns changes nothing
// in f.
func Inspect(f *Failure) *Evidence {
	if f == nil || f.ev == nil {
		return nil
	}
	e := f.ev
	out := &Evidence{
		Cause:          e.cause,
		CaptureCause:   e.captureCause,
		AdmissionCause: e.admissionCause,
		DelayCause:     e.delayCause,
		Bytes:          append([]byte{}, e.bytes...),
		Response:       e.response,
	}
	if e.headers != nil {
		out.Headers = e.headers.Clone()
	}
	if e.response.Usage != nil {
		u := *e.response.Usage
		out.Response.Usage = &u
	}
	return out
}

// PrivateCause returns the private cause f carries (what Inspect's
// Evidence.Cause holds) without copying the rest of its evidence, or nil
// for none or a nil f. Like Inspect, it is for code that must tell causes
// apart (an error's safe text asks it); the cause is not safe to log.
func (f *Failure) PrivateCause() error {
	if f == nil || f.ev == nil {
		return nil
	}
	return f.ev.cause
}

// Attach stores private evidence behind f. It is for layer and codec
// implementations; the values are retained as given (callers pass copies).
func (f *Failure) Attach(e Evidence) {
	f.ev = &evidence{
		cause:          e.Cause,
		captureCause:   e.CaptureCause,
		admissionCause: e.AdmissionCause,
		delayCause:     e.DelayCause,
		bytes:          e.Bytes,
		headers:        e.Headers,
		response:       e.Response,
	}
}

// SetAdmissionCause records the admission hook's error, panic value or
// unknown decision as private evidence of f.
func (f *Failure) SetAdmissionCause(v any) {
	if f.ev == nil {
		f.ev = &evidence{}
	}
	f.ev.admissionCause = v
}

// SetDelayCause records the Sleep hook's error as private evidence of f.
func (f *Failure) SetDelayCause(err error) {
	if f.ev == nil {
		f.ev = &evidence{}
	}
	f.ev.delayCause = err
}
