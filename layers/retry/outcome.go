package retry

// outcome.go holds how a call ends: a success, the decision after a failed attempt, and the terminal outcome with its RecoveryError.

import (
	"net/http"

	"github.com/recourse-dev/recourse/chat"
	"github.com/recourse-dev/recourse/event"
	"github.com/recourse-dev/recourse/layer"
)

// succeeded ends the call with a successful attempt.
func (c *call) succeeded(resp *http.Response, ev event.ResponseEvidence, comp *chat.Completion) (*http.Response, error) {
	before := c.cur.Progress().Delivered
	c.cur.SetDelivered(c.cur.Progress().Observed)
	if err := c.emit(event.AttemptSucceeded, nil, 0, 0); err != nil {
		closeResp(resp)
		return nil, err
	}
	if c.ctx.Err() != nil {
		// An observer of attempt_succeeded cancelled the call: abort wins
		// over completion (R9.1, R13.5). Nothing is handed over, and the
		// attempt is recorded as cancelled before the one cancelled event
		// (R9.2).
		closeResp(resp)
		c.cur.SetDelivered(before)
		f := c.newFailure(c.cur)
		f.Category, f.HTTPStatus, f.Acceptance = event.CategoryCancellation, c.status, event.AcceptanceYes
		attachEvidence(&f, event.Evidence{Cause: c.ctx.Err(), Headers: resp.Header.Clone(), Response: ev})
		f.Classification = c.d.Classify(&f, false, false)
		resp, err, _ := c.afterFailure(&f, c.wire, nil)
		return resp, err
	}
	c.d.Succeeded()
	r := &c.lc.Result
	r.LogicalID, r.WireAttempts, r.Response, r.Completion = c.logical, c.wire, ev, comp
	return resp, nil
}

// afterFailure records failed attempt n and runs the decision plane. stop
// reports that the call ends with resp, err; otherwise attempt n+1 may
// start.
func (c *call) afterFailure(f *event.Failure, n int, pass *http.Response) (resp *http.Response, err error, stop bool) {
	c.history = append(c.history, *f)
	c.d.Failed()
	if err := c.emit(event.AttemptFailed, f, 0, 0); err != nil {
		c.d.settle(false)
		closeResp(pass)
		return nil, err, true
	}
	if err := c.d.Observe(c.ctx, f, c.emit); err != nil {
		closeResp(pass)
		return nil, err, true
	}
	if err := c.breaker(); err != nil {
		closeResp(pass)
		c.report(nil)
		return nil, err, true
	}
	if f.Category == event.CategoryCancellation {
		closeResp(pass)
		resp, err = c.cancelled(f)
		return resp, err, true
	}
	if !f.Classification.Eligible || c.lc.LeaveOnStall.Has(f.Stall) {
		// Not resent; a stall the caller leaves on goes, unresent, to
		// the next fallback target (R20.12).
		resp, err = c.finish(event.OutcomeInterrupted, f, pass)
		return resp, err, true
	}
	// pass (an in-memory body) is kept until the decision: when recovery
	// gives up on it, it is the final response a drop-in caller gets.
	if n >= c.d.r.maxAttempts {
		resp, err = c.finish(event.OutcomeExhausted, f, pass)
		return resp, err, true
	}
	o, err := c.d.Resend(c.ctx, f, n, n+1, c.emit)
	if err == nil {
		err = c.breaker()
	}
	switch {
	case err != nil:
		closeResp(pass)
		c.report(nil)
		return nil, err, true
	case o == event.OutcomeCancelled:
		closeResp(pass)
		resp, err = c.cancelled(f)
		return resp, err, true
	case o != "":
		next := 0
		if o.TerminalEvent() != event.Exhausted && o != event.OutcomeInterrupted {
			next = n + 1 // an admission event names the attempt it was about
		}
		resp, err = c.finishWith(o, f, pass, next)
		return resp, err, true
	}
	closeResp(pass)
	return nil, nil, false
}

// finish emits the terminal event of o and ends the call (R11.2).
func (c *call) finish(o event.Outcome, f *event.Failure, resp *http.Response) (*http.Response, error) {
	return c.finishWith(o, f, resp, 0)
}

// finishWith is finish with the attempt next that the terminal event is
// about (an admission outcome names it; 0 for none).
func (c *call) finishWith(o event.Outcome, f *event.Failure, resp *http.Response, next int) (*http.Response, error) {
	if err := c.emit(o.TerminalEvent(), f, 0, next); err != nil {
		closeResp(resp)
		return nil, err
	}
	return c.end(o, f, resp)
}

// end builds the RecoveryError and decides between passing the final
// response through and returning the error. A drop-in caller (no
// TypedErrors) whose call ended on a complete HTTP failure response — any
// outcome but cancelled, outside an open stream — gets that response, so
// its SDK builds its own error (status, provider code and message); it is
// marked X-Should-Retry: false (OpenAI's SDKs then never retry on top) and
// X-Recourse-Outcome, and the typed error is in the call's Result.Err. A
// redirect is never passed through, whichever layer produced it (R2.2),
// and neither is a 2xx: the engine judged it a failure (an error object, a
// malformed body, structured content that is not JSON), and an SDK would
// read it as a success, so a drop-in caller fails closed as the native
// client does.
func (c *call) end(o event.Outcome, f *event.Failure, resp *http.Response) (*http.Response, error) {
	if !responseOver(f) {
		// The call gives up on a background response it started that may
		// still be running: cancel it, as for a caller's cancel (R19.15).
		c.cancelRemote()
	}
	var ctxErr error
	if o == event.OutcomeCancelled {
		ctxErr = c.ctx.Err()
	}
	rerr := layer.NewRecoveryError(o, *f, c.history, ctxErr)
	if o == event.OutcomeQuotaExhausted {
		rerr.Quota = c.d.refusal
	}
	c.report(rerr)
	if resp != nil && o != event.OutcomeCancelled && !c.lc.TypedErrors && !c.stream && passable(resp.StatusCode) {
		if resp.Header == nil {
			resp.Header = http.Header{}
		}
		resp.Header.Set(HeaderShouldRetry, "false")
		resp.Header.Set(HeaderOutcome, string(o))
		return resp, nil
	}
	closeResp(resp)
	return nil, rerr
}

// The headers the engine adds to a final failure response it passes
// through to a drop-in caller (see the package documentation).
const (
	// HeaderShouldRetry is "false": recourse already decided about resends.
	// OpenAI's SDKs honour it and never retry on top.
	HeaderShouldRetry = "X-Should-Retry"
	// HeaderOutcome is the call's event.Outcome, for example "exhausted".
	HeaderOutcome = "X-Recourse-Outcome"
)

// passable reports whether a final failure response with status may be
// handed to a drop-in caller: an HTTP failure status, not a redirect and not
// a 2xx (see end).
func passable(status int) bool {
	return status/100 != 2 && !layer.IsRedirect(status)
}

func (c *call) report(err *layer.RecoveryError) {
	if err != nil {
		if bg, ok := c.d.gate.(layer.BreakerGate); ok {
			// The upstream's breaker counts the call: skipped, its circuit
			// open, or failed — a stream that failed after its 200 too.
			skipped := err.Outcome == event.OutcomeDelayCeiling && c.wire == 0 && c.lc.SkipOpenCircuit
			bg.Ended(skipped, !skipped && err.Outcome != event.OutcomeCancelled)
		}
		if c.lc.Finish != nil {
			c.lc.Finish(err)
		}
	}
	r := &c.lc.Result
	r.LogicalID, r.WireAttempts, r.Err = c.logical, c.wire, err
}

// breaker emits a breaker event when the bound gate keeps a breaker whose
// state changed (R20.13): once per change, on the call that saw it.
func (c *call) breaker() error {
	bg, ok := c.d.gate.(layer.BreakerGate)
	if !ok {
		return nil
	}
	b, changed := bg.Changed(c.d.r.wall())
	if !changed || (c.d.r.onEvent == nil && len(c.lc.Observers()) == 0) {
		return nil
	}
	ev := c.event(event.Breaker)
	ev.Breaker = &b
	return c.send(ev)
}

// cancelled ends the call with outcome cancelled (R9). f is the failure of
// the last actual attempt, or nil when nothing was sent in this call.
func (c *call) cancelled(f *event.Failure) (*http.Response, error) {
	c.cancelRemote()
	if c.id.AttemptID == "" {
		c.id.AttemptID = c.attemptID()
	}
	if f == nil || f.Category != event.CategoryCancellation {
		nf := c.newFailure(nil)
		nf.Category = event.CategoryCancellation
		nf.Classification = event.Classification{Reason: event.ReasonCancelled}
		if c.cur == nil {
			// The attempt being cancelled never left (before the first
			// send, or a resend cancelled in its request capture): nothing
			// of it was sent (R10.2).
			nf.Acceptance = event.AcceptanceNo
		}
		nf.Attach(event.Evidence{Cause: c.ctx.Err()})
		f = &nf
	}
	return c.finish(event.OutcomeCancelled, f, nil)
}

// openCircuit ends a call whose upstream's circuit is open before its
// first attempt (R20.5): outcome delay_ceiling, nothing sent.
func (c *call) openCircuit() (*http.Response, error) {
	c.id.AttemptID = c.attemptID()
	f := c.newFailure(nil)
	f.Acceptance = event.AcceptanceNo
	f.Phase = event.PhaseConnecting
	f.Classification = event.Classification{Eligible: true, Reason: event.ReasonTransient}
	return c.finish(event.OutcomeDelayCeiling, &f, nil)
}

func (c *call) requestCaptureFailed(ce *layer.CaptureError) (*http.Response, error) {
	f := c.newFailure(nil)
	f.Category = event.CategoryProtocol
	f.Acceptance = event.AcceptanceNo
	f.Phase = event.PhaseCapture
	f.Classification = event.Classification{Reason: event.ReasonCaptureFailed}
	f.Attach(event.Evidence{Cause: captureCause(ce), CaptureCause: ce.Cause})
	return c.finish(event.OutcomeInterrupted, &f, nil)
}

// captureCause is the error a capture failure records as its Cause: the
// hook's error (or the panic, as a *PanicError) when there is no
// separate transport error (R10.5, R12.3).
func captureCause(ce *layer.CaptureError) error {
	if ce.Transport != nil {
		return ce.Transport
	}
	if e, ok := ce.Cause.(error); ok {
		return e
	}
	return &PanicError{Value: ce.Cause}
}

func closeResp(r *http.Response) {
	if r != nil && r.Body != nil {
		r.Body.Close()
	}
}
