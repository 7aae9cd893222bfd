package event

import "slices"

// Category is the failure category of R10.2.
type Category string

// The failure categories of R10.2.
const (
	CategoryTransport        Category = "transport"
	CategoryHTTP             Category = "http"
	CategoryProviderResponse Category = "provider_response"
	CategoryProtocol         Category = "protocol"
	CategoryCancellation     Category = "cancellation"
	CategoryClientTimeout    Category = "client_timeout"
)

// Categories returns every failure category, in the order of R10.2. Each
// call returns a new slice; changing it changes nothing else.
func Categories() []Category { return slices.Clone(categories) }

var categories = []Category{CategoryTransport, CategoryHTTP, CategoryProviderResponse, CategoryProtocol, CategoryCancellation, CategoryClientTimeout}

// Valid reports whether c is one of the categories of R10.2.
func (c Category) Valid() bool {
	for _, k := range categories {
		if c == k {
			return true
		}
	}
	return false
}

// Phase is where in an attempt a failure happened, when known.
type Phase string

// The phases of an attempt.
const (
	PhaseUnknown         Phase = ""
	PhaseConnecting      Phase = "connecting"
	PhaseAwaitingHeaders Phase = "awaiting_headers"
	PhaseBody            Phase = "body"
	PhaseDecoding        Phase = "decoding"
	PhaseCapture         Phase = "capture"
)

// Acceptance says whether the server accepted the request (R10.2): "yes" for
// a 2xx response, "no" only when provably nothing was sent, otherwise
// "unknown".
type Acceptance string

// The acceptance values of R10.2.
const (
	AcceptanceYes     Acceptance = "yes"
	AcceptanceUnknown Acceptance = "unknown"
	AcceptanceNo      Acceptance = "no"
)

// Reason is the classification reason of R4.
type Reason string

// The classification reasons of R4, in classification order.
const (
	ReasonCancelled       Reason = "cancelled"
	ReasonPermanent       Reason = "permanent"
	ReasonCaptureFailed   Reason = "capture_failed"
	ReasonSemanticOutput  Reason = "semantic_output"
	ReasonMalformed       Reason = "malformed"
	ReasonPartialResponse Reason = "partial_response"
	ReasonTransient       Reason = "transient"
)

// ReasonBodyTooLarge is the reason of a 2xx ordinary or structured body
// larger than retry.MaxResponseBody (R4.9): the body is refused for its
// size, whatever semantic output its first bytes held, and never resent.
const ReasonBodyTooLarge Reason = "body_too_large"

// The reasons of provider hints (retry.Policy.ProviderHints). They are
// checked after the rules of R4 and before the policy's categories and
// statuses: they only ever turn a failure that would be eligible into one
// that is not.
const (
	// ReasonProviderNoRetry is the reason of a failure whose response said
	// "x-should-retry: false": the provider asked not to resend.
	ReasonProviderNoRetry Reason = "provider_no_retry"
	// ReasonInsufficientQuota is the reason of an HTTP 429, or of a
	// provider error object with a 2xx status (a stream's in-band error
	// frame included), whose error code says the account's quota or spend
	// limit is exhausted (OpenAI insufficient_quota and its spend-limit
	// codes): not a rate limit, so a resend cannot succeed.
	ReasonInsufficientQuota Reason = "insufficient_quota"
)

// Outcome is how a recovery ended without success (R10.4).
type Outcome string

// The eight outcomes of R10.4, and OutcomeQuotaExhausted of an opt-in retry
// quota. Callers that switch over outcomes must handle
// OutcomeAdmissionNoDecision apart from OutcomeAdmissionRejected (R10.6).
const (
	OutcomeExhausted           Outcome = "exhausted"
	OutcomeInterrupted         Outcome = "interrupted"
	OutcomeCancelled           Outcome = "cancelled"
	OutcomeAdmissionRequired   Outcome = "admission_required"
	OutcomeAdmissionRejected   Outcome = "admission_rejected"
	OutcomeAdmissionNoDecision Outcome = "admission_no_decision"
	OutcomeDeadline            Outcome = "deadline"
	OutcomeDelayCeiling        Outcome = "delay_ceiling"
	// OutcomeQuotaExhausted: a retry quota (a layer.ResendGate, package
	// layers/quota) refused the resend; layer.RecoveryError.Quota says which.
	OutcomeQuotaExhausted Outcome = "quota_exhausted"
)

// Outcomes returns every outcome of R10.4. Each call returns a new slice;
// changing it changes nothing else.
func Outcomes() []Outcome { return slices.Clone(outcomes) }

var outcomes = []Outcome{OutcomeExhausted, OutcomeInterrupted, OutcomeCancelled, OutcomeAdmissionRequired, OutcomeAdmissionRejected, OutcomeAdmissionNoDecision, OutcomeDeadline, OutcomeDelayCeiling, OutcomeQuotaExhausted}

// TerminalEvent returns the lifecycle event type that announces o (R11.2):
// exhausted, deadline, delay_ceiling and quota_exhausted map to Exhausted, interrupted to
// Interrupted, cancelled to Cancelled, and each admission outcome
// to its own admission event.
func (o Outcome) TerminalEvent() Type {
	switch o {
	case OutcomeInterrupted:
		return Interrupted
	case OutcomeCancelled:
		return Cancelled
	case OutcomeAdmissionRequired:
		return AdmissionRequired
	case OutcomeAdmissionRejected:
		return AdmissionRejected
	case OutcomeAdmissionNoDecision:
		return AdmissionNoDecision
	default:
		return Exhausted
	}
}

// Type is the type of a lifecycle event (R11.1).
type Type string

// The lifecycle event types of R11.1.
const (
	AttemptStarted      Type = "attempt_started"
	AttemptSucceeded    Type = "attempt_succeeded"
	AttemptFailed       Type = "attempt_failed"
	AdmissionPending    Type = "admission_pending"
	AdmissionAllowed    Type = "admission_allowed"
	AdmissionRejected   Type = "admission_rejected"
	AdmissionNoDecision Type = "admission_no_decision"
	AdmissionRequired   Type = "admission_required"
	DelayScheduled      Type = "delay_scheduled"
	RetryStarted        Type = "retry_started"
	Exhausted           Type = "exhausted"
	Interrupted         Type = "interrupted"
	Cancelled           Type = "cancelled"
	// Telemetry reports one valid Ollama stream frame (its Frame
	// index) and Metrics the numbers of its done frame; both are
	// emitted for Ollama streams only (R13.6). "Telemetry" names the
	// provider's per-frame report; the attempt's counted bytes and evidence
	// are its Progress, carried by every event.
	Telemetry Type = "telemetry"
	Metrics   Type = "metrics"
	// QuotaRefused precedes the terminal exhausted event of outcome
	// quota_exhausted; its Quota says which quota refused.
	QuotaRefused Type = "quota_refused"
	// QuotaUnavailable reports that a retry quota's shared store did
	// not answer in time or failed: the decision failed open.
	QuotaUnavailable Type = "quota_unavailable"
	// CooldownWait announces that a first attempt waits, for Delay,
	// until its upstream's shared cooldown horizon (a Retry-After another
	// call saw).
	CooldownWait Type = "cooldown_wait"
	// Breaker reports a change of an upstream's breaker (its Breaker, a
	// BreakerState): its resends began or ceased to be refused, or its
	// shared cooldown was raised or ran out. It is emitted once per
	// change, on the call that saw it, not on every call (R20.13).
	Breaker Type = "breaker"
)

// Types returns every lifecycle event type of R11.1. Each call returns
// a new slice; changing it changes nothing else.
func Types() []Type { return slices.Clone(eventTypes) }

var eventTypes = []Type{AttemptStarted, AttemptSucceeded, AttemptFailed, AdmissionPending, AdmissionAllowed, AdmissionRejected, AdmissionNoDecision, AdmissionRequired, DelayScheduled, RetryStarted, Exhausted, Interrupted, Cancelled, Telemetry, Metrics, QuotaRefused, QuotaUnavailable, CooldownWait, TargetStarted, Fallback, Breaker}
