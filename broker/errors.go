package broker

import (
	"errors"
	"strconv"

	"github.com/recourse-dev/recourse/event"
	"github.com/recourse-dev/recourse/layer"
)

// ErrNilHistory is returned when a run is given a nil history pointer.
var ErrNilHistory = errors.New("broker: history is nil")

// ErrBusy is returned by a Session that is asked for a turn while another
// turn is still running.
var ErrBusy = errors.New("broker: the session is busy with another turn")

// ToolDepthError reports that the model asked for tools again after the
// run already executed the maximum number of tool rounds. The response that
// asked is neither executed nor added to the history; everything before it
// is.
type ToolDepthError struct {
	// Max is the tool depth limit (WithMaxToolDepth).
	Max int
	// Completion is the index within the run of the response that asked.
	Completion int
}

// Error returns a safe message with the limit.
func (e *ToolDepthError) Error() string {
	return "broker: tool depth limit " + strconv.Itoa(e.Max) + " reached at completion " + strconv.Itoa(e.Completion)
}

// IncompleteError reports a non-streamed response that asked for tool calls
// but ended without an accepted finish (finish reason "length"): its calls
// are never executed and it is not added to the history. (A streamed
// length finish is already a *layer.RecoveryError from the chain.)
type IncompleteError struct {
	// Completion is the index within the run of the response.
	Completion int
	// FinishReason is the provider's finish reason, "length".
	FinishReason string
}

// Error returns a safe message with the finish reason.
func (e *IncompleteError) Error() string {
	return "broker: completion " + strconv.Itoa(e.Completion) + " ended with finish reason " +
		strconv.Quote(e.FinishReason) + "; its tool calls were not executed"
}

// ContinuationError reports a stream that broke after it started and was
// not continued. Outcome says why:
//
//   - event.OutcomeExhausted: the continuation budget was used up;
//   - event.OutcomeAdmissionRequired, OutcomeAdmissionRejected,
//     OutcomeAdmissionNoDecision: the admission rule or hook did not allow
//     it (as for a retry);
//   - event.OutcomeDeadline: the policy's deadline leaves no room for the
//     backoff;
//   - event.OutcomeCancelled: the context was cancelled (cancellation wins
//     over continuation; errors.Is(err, context.Canceled) holds);
//   - event.OutcomeInterrupted: the policy's Sleep hook failed;
//   - event.OutcomeQuotaExhausted: the chain's retry quota (package
//     layers/quota) refused it; Quota says which.
//
// Nothing of the broken stream is committed to the history when a
// ContinuationError is returned. Err, the chain's *layer.RecoveryError of
// the break, is reachable with errors.As. The Error text is safe.
type ContinuationError struct {
	// Outcome says why the stream was not continued (see above).
	Outcome event.Outcome
	// Completion is the index within the run of the completion that broke.
	Completion int
	// Continuations is how many continuations of this answer were already
	// sent before the break.
	Continuations int
	// Max is the continuation budget.
	Max int
	// Err is the interrupted stream's typed error.
	Err *layer.RecoveryError
	// Quota is the refusing quota for outcome quota_exhausted, else nil.
	Quota *event.QuotaRefusal

	cause error // the context's error or the Sleep hook's error
}

// Error returns a safe message: the outcome, the budget and the safe text
// of the underlying RecoveryError.
func (e *ContinuationError) Error() string {
	s := "broker: stream continuation " + string(e.Outcome) + " after " + strconv.Itoa(e.Continuations) +
		"/" + strconv.Itoa(e.Max) + " continuations"
	if e.Quota != nil {
		s += " (" + e.Quota.Text() + ")"
	}
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

// Unwrap returns the RecoveryError and, for a cancelled outcome, the
// context's error (or, for a failed Sleep hook, the hook's error).
func (e *ContinuationError) Unwrap() []error {
	var out []error
	if e.Err != nil {
		out = append(out, e.Err)
	}
	if e.cause != nil {
		out = append(out, e.cause)
	}
	return out
}
