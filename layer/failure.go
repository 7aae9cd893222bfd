package layer

import (
	"encoding/json"
	"net/http"
	"time"

	"github.com/recourse-dev/recourse/chat"
)

// Identity is the local identity of one wire attempt of one logical
// completion (R10.1). The logical request ID is a UUID v4 shared by every
// attempt of a completion; the attempt ID is a fresh UUID per wire attempt;
// WireAttempt is 1-based, and 0 means nothing was sent. None of these values
// is ever sent to the provider (R2.4).
type Identity struct {
	LogicalID   string `json:"logical_request_id"`
	AttemptID   string `json:"attempt_id,omitempty"`
	WireAttempt int    `json:"wire_attempt"`
}

// Counts are semantic byte and fragment counters (R13.2). Byte counts are
// UTF-8 bytes of decoded strings: "é🙂" counts 6.
type Counts struct {
	ReasoningBytes     int64 `json:"reasoning_bytes"`
	ContentBytes       int64 `json:"content_bytes"`
	ToolFragments      int64 `json:"tool_fragments"`
	CompletedToolCalls int64 `json:"completed_tool_calls"`
}

// Any reports whether any semantic evidence was counted.
func (c Counts) Any() bool {
	return c.ReasoningBytes > 0 || c.ContentBytes > 0 || c.ToolFragments > 0 || c.CompletedToolCalls > 0
}

// Add returns the sum of c and d.
func (c Counts) Add(d Counts) Counts {
	return Counts{c.ReasoningBytes + d.ReasoningBytes, c.ContentBytes + d.ContentBytes, c.ToolFragments + d.ToolFragments, c.CompletedToolCalls + d.CompletedToolCalls}
}

// Progress is what one attempt received (R13.2): whether response headers
// arrived, the raw body bytes, and the semantic evidence observed on the wire
// and delivered to the consumer.
type Progress struct {
	HeadersReceived bool   `json:"headers_received"`
	RawBytes        int64  `json:"raw_bytes"`
	Observed        Counts `json:"observed"`
	Delivered       Counts `json:"delivered"`
}

// RetryAfterKind is the form of a parsed Retry-After header (R5.5).
type RetryAfterKind string

// The Retry-After parse results of R5.5.
const (
	RetryAfterAbsent  RetryAfterKind = "absent"
	RetryAfterInvalid RetryAfterKind = "invalid"
	RetryAfterSeconds RetryAfterKind = "seconds"
	RetryAfterDate    RetryAfterKind = "date"
)

// RetryAfter is an explicit Retry-After parse result (R5.5). Delay is the
// remaining minimum delay for the seconds and date forms; Time is the parsed
// instant of the date form. The zero value means absent.
type RetryAfter struct {
	Kind  RetryAfterKind
	Delay time.Duration
	Time  time.Time
}

// Valid reports whether the value is a usable minimum delay.
func (r RetryAfter) Valid() bool { return r.Kind == RetryAfterSeconds || r.Kind == RetryAfterDate }

// MarshalJSON encodes the value as {"kind":…,"delay_ms":…,"unix_ms":…}.
func (r RetryAfter) MarshalJSON() ([]byte, error) {
	v := struct {
		Kind    RetryAfterKind `json:"kind"`
		DelayMS *int64         `json:"delay_ms,omitempty"`
		UnixMS  *int64         `json:"unix_ms,omitempty"`
	}{Kind: r.Kind}
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

// Classification is the eligibility verdict of R4.
type Classification struct {
	Eligible bool   `json:"eligible"`
	Reason   Reason `json:"reason"`
}

// Failure is the safe record of one failed attempt (R10.2). Every field is
// safe to log: it never holds body text, header values, credentials, tool
// arguments or an original error message. The private evidence behind it is
// reached only through Inspect.
type Failure struct {
	Identity
	Provider   Provider   `json:"provider"`
	Operation  Operation  `json:"operation"`
	Category   Category   `json:"category"`
	HTTPStatus int        `json:"http_status,omitempty"`
	Phase      Phase      `json:"phase,omitempty"`
	Acceptance Acceptance `json:"acceptance"`
	Progress   Progress   `json:"progress"`
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

	ev *evidence
}

// ResponseEvidence is what a response said about itself: finish reason,
// model, usage, and the provider's error code and request ID as sent. It is
// sensitive and reached only through Inspect.
type ResponseEvidence struct {
	FinishReason string
	Model        string
	Usage        *chat.Usage
	Code         string
	RequestID    string
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
	// Bytes is a copy of the response body bytes received, bounded: the
	// engine keeps at most the first 1 MiB of a failed ordinary body
	// (retry.MaxEvidenceBytes) and the frame that ended a failed stream.
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
