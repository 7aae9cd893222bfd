package retry

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/recourse-dev/recourse/chat"
	"github.com/recourse-dev/recourse/internal/httpdate"
	"github.com/recourse-dev/recourse/layer"
	"github.com/recourse-dev/recourse/layers/admission"
	"github.com/recourse-dev/recourse/layers/redirectguard"
)

// MaxResponseBody bounds an ordinary response body; a larger body is a
// protocol failure rather than unbounded memory.
const MaxResponseBody = 64 << 20

type transport struct {
	l    *Layer
	next http.RoundTripper
}

func (t *transport) RoundTrip(req *http.Request) (*http.Response, error) {
	pol := t.l.policy
	if p, ok := policyFrom(req.Context()); ok {
		pol = p
	}
	if pol == nil {
		return t.next.RoundTrip(req)
	}
	c := &call{t: t}
	r := &c.res
	if err := r.resolve(pol); err != nil {
		closeRequestBody(req)
		return nil, err
	}
	if t.l.hasGate {
		r.admit = t.l.gate
	}
	var body []byte
	if req.Body != nil && req.Body != http.NoBody {
		var err error
		body, err = readAll(req.Body, req.ContentLength)
		req.Body.Close()
		if err != nil {
			return nil, err
		}
	}
	info := layer.RequestInfo{Operation: layer.Ordinary}
	if t.l.codec != nil {
		if in, err := t.l.codec.Describe(body); err == nil {
			info = in
		}
	}
	// The logical ID and the first attempt's ID come from one allocation.
	ids := newUUIDs(2)
	c.r, c.ctx, c.req, c.body, c.header = r, req.Context(), req, body, req.Header.Clone()
	c.info, c.logical, c.spareID, c.report = info, ids[:uuidLen], ids[uuidLen:], layer.ReportFrom(req.Context())
	if t.l.codec != nil {
		c.provider = t.l.codec.Provider()
	}
	c.start = r.mono()
	// Until an attempt starts, events (a cancellation before the first send)
	// still carry a complete identity: wire attempt 0, nothing sent (R11.2).
	c.id = layer.Identity{LogicalID: c.logical}
	return c.run()
}

func closeRequestBody(req *http.Request) {
	if req.Body != nil {
		req.Body.Close()
	}
}

// call is the state of one logical completion.
type call struct {
	t        *transport
	r        *resolved // &res
	res      resolved
	ctx      context.Context
	req      *http.Request
	body     []byte
	header   http.Header
	info     layer.RequestInfo
	provider layer.Provider
	logical  string
	report   *layer.Report
	start    time.Duration

	history      []layer.Failure
	firstFailure time.Duration
	failed       bool
	wire         int
	cur          *layer.Attempt
	id           layer.Identity
	streaming    bool // a stream body is open: failures end as errors
	status       int  // the status of the current attempt's response

	spareID string       // an attempt ID not yet used, or ""
	started bool         // the current attempt passed Begin
	pending int          // the wire attempt number of the current attempt
	onBegin func() error // c.begin, made once per call
	getBody func() (io.ReadCloser, error)
}

// attemptID returns a new attempt ID.
func (c *call) attemptID() string {
	if id := c.spareID; id != "" {
		c.spareID = ""
		return id
	}
	return newUUIDs(1)
}

// begin runs when the current attempt's request is about to leave (see
// layer.Attempt.Begin).
func (c *call) begin() error {
	c.started = true
	c.wire = c.pending
	return c.emit(layer.EventAttemptStarted, nil, 0, 0)
}

// attemptResult is what one attempt ended with.
type attemptResult struct {
	resp     *http.Response // success, or a complete failure response that may pass through
	failure  *layer.Failure
	evidence layer.ResponseEvidence
	comp     *chat.Completion // the decoded success, when there is a codec
	err      error            // an observer error or a request-capture failure: stop now
}

func (c *call) emit(typ layer.EventType, f *layer.Failure, delay time.Duration, next int) error {
	ev := c.event(typ)
	if f != nil {
		fc := *f
		ev.Failure = &fc
		if typ == layer.EventAttemptFailed {
			ev.HTTPStatus = f.HTTPStatus
		}
	}
	if typ == layer.EventAttemptSucceeded {
		ev.HTTPStatus = c.status
	}
	ev.Delay, ev.NextAttempt = delay, next
	return c.send(ev)
}

// ObserverError is returned when the policy's OnEvent returned an error; it
// wraps that error unchanged. It is never a retry (R11.4).
type ObserverError struct {
	Event layer.EventType
	Err   error
}

// Error returns a message naming the event; the wrapped error is the
// observer's own.
func (e *ObserverError) Error() string {
	return "recourse: event observer failed on " + string(e.Event) + ": " + e.Err.Error()
}

// Unwrap returns the observer's error.
func (e *ObserverError) Unwrap() error { return e.Err }

// remaining returns the time left before the budget or deadline, and
// whether either is set (R7.1).
func (c *call) remaining() (time.Duration, bool) {
	var rem time.Duration
	set := false
	if !c.r.deadline.IsZero() {
		rem, set = c.r.deadline.Sub(c.r.wall()), true
	}
	if c.r.hasBudget && c.failed {
		b := c.r.budget - (c.r.mono() - c.firstFailure)
		if !set || b < rem {
			rem = b
		}
		set = true
	}
	return rem, set
}

func (c *call) expired() bool {
	rem, set := c.remaining()
	return set && rem <= 0
}

func (c *call) run() (*http.Response, error) { return c.loop(1, nil, nil) }

// loop runs attempts from n on. When f is not nil it is the failure of
// attempt n-1 (pass its complete response, if any), and the decision plane
// runs first. loop returns the successful response, or how the call ends.
func (c *call) loop(n int, f *layer.Failure, pass *http.Response) (*http.Response, error) {
	for ; ; n++ {
		if f != nil {
			if resp, err, stop := c.afterFailure(f, n-1, pass); stop {
				return resp, err
			}
		}
		if c.ctx.Err() != nil {
			return c.cancelled(f)
		}
		c.id = layer.Identity{LogicalID: c.logical, AttemptID: c.attemptID(), WireAttempt: n}
		c.started, c.pending = false, n
		if c.onBegin == nil {
			c.onBegin = c.begin
		}
		c.cur = layer.NewAttempt(c.id, c.info, c.t.l.codec, c.r.onWire, c.onBegin)
		res := c.attempt()
		started := c.started
		if res.err != nil {
			if !started {
				c.id.WireAttempt = n - 1
			}
			var ce *layer.CaptureError
			if errors.As(res.err, &ce) && ce.Direction == layer.Request {
				if c.ctx.Err() != nil {
					// Cancelled while the request was being captured:
					// nothing was sent (R9.1, R9.2).
					if !started {
						c.cur = nil
					}
					return c.cancelled(f)
				}
				return c.requestCaptureFailed(ce)
			}
			c.fillReport(nil)
			return nil, res.err
		}
		if res.failure == nil {
			if c.info.Operation == layer.Streaming && c.cur.Decodes() {
				if c.streaming {
					return res.resp, nil
				}
				return c.stream(n, res.resp), nil
			}
			return c.succeeded(res.resp, res.evidence, res.comp)
		}
		if !started {
			// Cancelled before the request left: nothing was sent (R9.2).
			c.id.WireAttempt = n - 1
			c.cur = nil
			closeResp(res.resp)
			return c.cancelled(nil)
		}
		f, pass = res.failure, res.resp
	}
}

// succeeded ends the call with a successful attempt.
func (c *call) succeeded(resp *http.Response, ev layer.ResponseEvidence, comp *chat.Completion) (*http.Response, error) {
	c.cur.SetDelivered(c.cur.Progress().Observed)
	if err := c.emit(layer.EventAttemptSucceeded, nil, 0, 0); err != nil {
		closeResp(resp)
		return nil, err
	}
	if c.report != nil {
		c.report.LogicalID, c.report.WireAttempts, c.report.Response = c.logical, c.wire, ev
		c.report.Completion = comp
	}
	return resp, nil
}

// afterFailure records failed attempt n and runs the decision plane: R4
// eligibility, attempts left, budget and deadline (R7), admission (R8), the
// delay (R5, R6) and the sleep. stop reports that the call ends with resp,
// err; otherwise attempt n+1 may start.
func (c *call) afterFailure(f *layer.Failure, n int, pass *http.Response) (resp *http.Response, err error, stop bool) {
	c.history = append(c.history, *f)
	if !c.failed {
		c.failed, c.firstFailure = true, c.r.mono()
	}
	if err := c.emit(layer.EventAttemptFailed, f, 0, 0); err != nil {
		closeResp(pass)
		return nil, err, true
	}
	if f.Category == layer.CategoryCancellation {
		closeResp(pass)
		resp, err = c.cancelled(f)
		return resp, err, true
	}
	if !f.Classification.Eligible {
		resp, err = c.finish(layer.OutcomeInterrupted, f, pass)
		return resp, err, true
	}
	closeResp(pass)
	if n >= c.r.maxAttempts {
		resp, err = c.finish(layer.OutcomeExhausted, f, nil)
		return resp, err, true
	}
	if c.expired() {
		resp, err = c.finish(layer.OutcomeDeadline, f, nil)
		return resp, err, true
	}
	if resp, err, stop := c.admit(f, n+1); stop {
		return resp, err, true
	}
	delay := Backoff(n, c.r.base, c.r.ceiling, c.r.sample(n))
	if f.RetryAfter.Valid() {
		if f.RetryAfter.Delay > c.r.ceiling {
			resp, err = c.finish(layer.OutcomeDelayCeiling, f, nil)
			return resp, err, true
		}
		delay = max(delay, f.RetryAfter.Delay)
	}
	if rem, set := c.remaining(); set && delay >= rem {
		resp, err = c.finish(layer.OutcomeDeadline, f, nil)
		return resp, err, true
	}
	if err := c.emit(layer.EventDelayScheduled, f, delay, n+1); err != nil {
		return nil, err, true
	}
	if err := c.sleepFor(delay); err != nil {
		if c.ctx.Err() != nil {
			resp, err = c.cancelled(f)
			return resp, err, true
		}
		f.SetDelayCause(err)
		resp, err = c.finish(layer.OutcomeInterrupted, f, nil)
		return resp, err, true
	}
	if c.ctx.Err() != nil {
		resp, err = c.cancelled(f)
		return resp, err, true
	}
	if c.expired() {
		resp, err = c.finish(layer.OutcomeDeadline, f, nil)
		return resp, err, true
	}
	if err := c.emit(layer.EventRetryStarted, f, 0, n+1); err != nil {
		return nil, err, true
	}
	return nil, nil, false
}

// admit runs the admission gate (R8). stop reports that the call ends here
// with resp, err.
func (c *call) admit(f *layer.Failure, next int) (resp *http.Response, err error, stop bool) {
	hook := c.r.admit
	if hook == nil {
		if admission.Required(*f) {
			if err := c.emit(layer.EventAdmissionRequired, f, 0, next); err != nil {
				return nil, err, true
			}
			resp, err := c.end(layer.OutcomeAdmissionRequired, f, nil)
			return resp, err, true
		}
		return nil, nil, false
	}
	if err := c.emit(layer.EventAdmissionPending, f, 0, next); err != nil {
		return nil, err, true
	}
	wctx, cancel := context.WithCancel(c.ctx)
	var expired bool
	var wg sync.WaitGroup
	if rem, set := c.remaining(); set {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if c.r.sleep(wctx, rem) == nil && wctx.Err() == nil {
				expired = true
				cancel()
			}
		}()
	}
	v, cause := admission.Wait(wctx, hook, admission.Request{Failure: *f, NextAttempt: next})
	cancel()
	wg.Wait()
	switch {
	case c.ctx.Err() != nil:
		resp, err := c.cancelled(f)
		return resp, err, true
	case v == admission.Pending && expired:
		resp, err := c.finish(layer.OutcomeDeadline, f, nil)
		return resp, err, true
	case v == admission.Rejected:
		if err := c.emit(layer.EventAdmissionRejected, f, 0, next); err != nil {
			return nil, err, true
		}
		resp, err := c.end(layer.OutcomeAdmissionRejected, f, nil)
		return resp, err, true
	case v == admission.Allowed:
		if err := c.emit(layer.EventAdmissionAllowed, f, 0, next); err != nil {
			return nil, err, true
		}
		return nil, nil, false
	default:
		f.SetAdmissionCause(cause)
		if err := c.emit(layer.EventAdmissionNoDecision, f, 0, next); err != nil {
			return nil, err, true
		}
		resp, err := c.end(layer.OutcomeAdmissionNoDecision, f, nil)
		return resp, err, true
	}
}

// finish emits the terminal event of o and ends the call (R11.2).
func (c *call) finish(o layer.Outcome, f *layer.Failure, resp *http.Response) (*http.Response, error) {
	if err := c.emit(o.TerminalEvent(), f, 0, 0); err != nil {
		closeResp(resp)
		return nil, err
	}
	return c.end(o, f, resp)
}

// end builds the RecoveryError and decides between passing the final
// response through and returning the error.
func (c *call) end(o layer.Outcome, f *layer.Failure, resp *http.Response) (*http.Response, error) {
	var ctxErr error
	if o == layer.OutcomeCancelled {
		ctxErr = c.ctx.Err()
	}
	rerr := layer.NewRecoveryError(o, *f, c.history, ctxErr)
	c.fillReport(rerr)
	if resp != nil && o == layer.OutcomeInterrupted && (c.report == nil || !c.report.TypedErrors) && !c.streaming {
		return resp, nil
	}
	closeResp(resp)
	return nil, rerr
}

func (c *call) fillReport(err *layer.RecoveryError) {
	if c.report != nil {
		c.report.LogicalID, c.report.WireAttempts, c.report.Err = c.logical, c.wire, err
	}
}

// cancelled ends the call with outcome cancelled (R9). f is the failure of
// the last actual attempt, or nil when nothing was sent in this call.
func (c *call) cancelled(f *layer.Failure) (*http.Response, error) {
	if c.id.AttemptID == "" {
		c.id.AttemptID = c.attemptID()
	}
	if f == nil || f.Category != layer.CategoryCancellation {
		nf := c.newFailure(nil)
		nf.Category = layer.CategoryCancellation
		nf.Classification = layer.Classification{Reason: layer.ReasonCancelled}
		if f == nil && c.cur == nil {
			nf.Acceptance = layer.AcceptanceNo
		}
		nf.Attach(layer.Evidence{Cause: c.ctx.Err()})
		f = &nf
	}
	return c.finish(layer.OutcomeCancelled, f, nil)
}

func (c *call) requestCaptureFailed(ce *layer.CaptureError) (*http.Response, error) {
	f := c.newFailure(nil)
	f.Category = layer.CategoryProtocol
	f.Acceptance = layer.AcceptanceNo
	f.Phase = layer.PhaseCapture
	f.Classification = layer.Classification{Reason: layer.ReasonCaptureFailed}
	var cause error
	if e, ok := ce.Cause.(error); ok {
		cause = e
	}
	f.Attach(layer.Evidence{Cause: cause, CaptureCause: ce.Cause})
	return c.finish(layer.OutcomeInterrupted, &f, nil)
}

func (c *call) newFailure(a *layer.Attempt) layer.Failure {
	f := layer.Failure{
		Identity: c.id, Provider: c.provider, Operation: c.info.Operation,
		Category: layer.CategoryTransport, Acceptance: layer.AcceptanceUnknown,
		RetryAfter: layer.RetryAfter{Kind: layer.RetryAfterAbsent},
	}
	if a != nil {
		f.Progress = a.Progress()
		f.Phase = a.Phase()
	}
	return f
}

func closeResp(r *http.Response) {
	if r != nil && r.Body != nil {
		r.Body.Close()
	}
}

// attempt runs one wire attempt and settles it into success or a failure.
func (c *call) attempt() attemptResult {
	a := c.cur
	// A shallow copy with the call's own header and body. The wire layers
	// never change a request they are given (layer.Layer): the capture layer
	// snapshots copies and the sender sends a deep clone, so the call's
	// header stays byte-identical for every attempt (R2.3).
	areq := c.req.WithContext(layer.WithAttempt(c.ctx, a))
	areq.Header = c.header
	if c.getBody == nil {
		body := c.body
		c.getBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	}
	// The attempt's own body, which the sender sends as it is: an in-memory
	// reader that http.Transport writes together with the headers.
	areq.Body, _ = c.getBody()
	areq.GetBody = c.getBody
	areq.ContentLength = int64(len(c.body))
	resp, err := c.t.next.RoundTrip(areq)
	if err != nil {
		return c.settleError(a, err)
	}
	return c.settleResponse(a, resp)
}

func (c *call) settleError(a *layer.Attempt, err error) attemptResult {
	var oe *ObserverError
	if errors.As(err, &oe) {
		return attemptResult{err: err}
	}
	var ce *layer.CaptureError
	if errors.As(err, &ce) && ce.Direction == layer.Request {
		return attemptResult{err: err}
	}
	f := c.newFailure(a)
	ev := layer.Evidence{Cause: err}
	transportErr := err
	if ce != nil {
		ev.Cause, ev.CaptureCause = ce.Transport, ce.Cause
		transportErr = ce.Transport
	}
	var refused *redirectguard.RefusedError
	switch {
	case c.ctx.Err() != nil:
		f.Category = layer.CategoryCancellation
		ev.Cause = err
	case errors.As(transportErr, &refused):
		f.Category = layer.CategoryHTTP
		f.HTTPStatus = refused.Response.StatusCode
		f.Phase = layer.PhaseBody
		ev.Bytes = bytes.Clone(refused.Body)
		ev.Headers = refused.Response.Header.Clone()
		c.responseFacts(&f, &ev, refused.Response.Header, refused.Body)
	default:
		var ne net.Error
		if errors.As(transportErr, &ne) && ne.Timeout() {
			f.Category = layer.CategoryClientTimeout
		}
		if !a.Connected() {
			f.Acceptance = layer.AcceptanceNo
		}
	}
	f.Attach(ev)
	f.Classification = c.classify(&f, ce != nil, false)
	return attemptResult{failure: &f}
}

// responseFacts fills the Retry-After, provider code and request ID of a
// failure, keeping only safe values in the record (R5, R10.3).
func (c *call) responseFacts(f *layer.Failure, ev *layer.Evidence, h http.Header, body []byte) {
	ra := httpdate.Parse(h.Values("Retry-After"), c.r.wall())
	switch ra.Kind {
	case httpdate.Seconds:
		f.RetryAfter = layer.RetryAfter{Kind: layer.RetryAfterSeconds, Delay: ra.Delay}
	case httpdate.Date:
		f.RetryAfter = layer.RetryAfter{Kind: layer.RetryAfterDate, Delay: ra.Delay, Time: ra.Time}
	case httpdate.Invalid:
		f.RetryAfter = layer.RetryAfter{Kind: layer.RetryAfterInvalid}
	}
	if c.t.l.codec == nil {
		return
	}
	code := c.t.l.codec.ErrorCode(body)
	id := c.t.l.codec.RequestID(h)
	ev.Response.Code, ev.Response.RequestID = code, id
	if layer.IsKnownProviderCode(code) && !layer.Echoes(code, c.body, c.header) {
		f.ProviderCode = code
	}
	if layer.IsValidRequestID(id) && !layer.Echoes(id, c.body, c.header) {
		f.ProviderRequestID = id
	}
}

func (c *call) settleResponse(a *layer.Attempt, resp *http.Response) attemptResult {
	c.status = resp.StatusCode
	if c.info.Operation == layer.Streaming && resp.StatusCode/100 == 2 {
		// A 2xx stream is read frame by frame by the stream body (or, for a
		// codec that decodes no frames, handed over as it is).
		return attemptResult{resp: resp}
	}
	b, rerr := readUpTo(resp.Body, MaxResponseBody+1, min(resp.ContentLength, MaxResponseBody))
	resp.Body.Close()
	cancelled := c.ctx.Err() != nil
	ok2xx := resp.StatusCode/100 == 2
	// A whole 2xx body that decodes is a success: nothing of the failure
	// record below (evidence copies, Retry-After, provider code) is needed.
	complete := !cancelled && ok2xx && rerr == nil && len(b) <= MaxResponseBody
	var (
		comp    layer.ResponseEvidence
		decoded *chat.Completion
		derr    error
	)
	if complete {
		if comp, decoded, derr = c.decode(b); derr == nil {
			// A RoundTripper's response belongs to its caller: this
			// layer changes it rather than copying it.
			resp.Body = newBytesBody(b)
			resp.ContentLength = int64(len(b))
			return attemptResult{resp: resp, evidence: comp, comp: decoded}
		}
	}
	f := c.newFailure(a)
	f.HTTPStatus = resp.StatusCode
	ev := layer.Evidence{Bytes: bytes.Clone(b), Headers: resp.Header.Clone()}
	c.responseFacts(&f, &ev, resp.Header, b)
	var ce *layer.CaptureError
	captureFailed := errors.As(rerr, &ce)
	if captureFailed {
		ev.CaptureCause, rerr = ce.Cause, ce.Transport
	}
	partial := false
	switch {
	case cancelled:
		f.Category = layer.CategoryCancellation
		ev.Cause = c.ctx.Err()
	case !ok2xx:
		f.Category = layer.CategoryHTTP
		ev.Cause = rerr
	case rerr != nil:
		f.Category = layer.CategoryTransport
		f.Acceptance = layer.AcceptanceYes
		ev.Cause = rerr
		partial = true
	case captureFailed:
		f.Acceptance = layer.AcceptanceYes
	case len(b) > MaxResponseBody:
		f.Category = layer.CategoryProtocol
		f.Acceptance = layer.AcceptanceYes
		f.Phase = layer.PhaseDecoding
		ev.Cause = &layer.ProtocolError{What: "response body exceeds the size limit"}
	default:
		// complete holds here and the body did not decode (derr != nil).
		f.Acceptance = layer.AcceptanceYes
		f.Phase = layer.PhaseDecoding
		ev.Cause = derr
		ev.Response.FinishReason, ev.Response.Model, ev.Response.Usage = comp.FinishReason, comp.Model, comp.Usage
		var pe *layer.ProviderError
		if errors.As(derr, &pe) {
			f.Category = layer.CategoryProviderResponse
			ev.Response.Code = pe.Code
			if layer.IsKnownProviderCode(pe.Code) && !layer.Echoes(pe.Code, c.body, c.header) {
				f.ProviderCode = pe.Code
			}
		} else {
			f.Category = layer.CategoryProtocol
		}
	}
	f.Progress = a.Progress()
	f.Attach(ev)
	f.Classification = c.classify(&f, captureFailed, partial)
	var pass *http.Response
	if rerr == nil && !captureFailed && len(b) <= MaxResponseBody && !cancelled {
		resp.Body = newBytesBody(b)
		resp.ContentLength = int64(len(b))
		pass = resp
	}
	return attemptResult{resp: pass, failure: &f}
}

// decode decodes a complete 2xx body; a structured call's content must
// itself be JSON (R4.5, R16.3: parsing only, no schema validation).
func (c *call) decode(b []byte) (layer.ResponseEvidence, *chat.Completion, error) {
	if c.t.l.codec == nil {
		return layer.ResponseEvidence{}, nil, nil
	}
	comp, err := c.t.l.codec.Decode(b)
	if err != nil {
		return layer.ResponseEvidence{}, nil, err
	}
	ev := layer.ResponseEvidence{FinishReason: comp.FinishReason, Model: comp.Model, Usage: comp.Usage}
	if c.info.Operation == layer.Structured && len(comp.Message.ToolCalls) == 0 && !json.Valid([]byte(comp.Message.Content)) {
		// The refused answer keeps its evidence for Inspect (R10.5).
		return ev, nil, &layer.ProtocolError{What: "structured content is not JSON"}
	}
	return ev, comp, nil
}

// bytesBody is a complete response body held in memory: one allocation
// instead of io.NopCloser over a bytes.Reader. It keeps WriteTo.
type bytesBody struct{ bytes.Reader }

func newBytesBody(b []byte) *bytesBody {
	r := &bytesBody{}
	r.Reset(b)
	return r
}

// Close does nothing: the body is in memory.
func (*bytesBody) Close() error { return nil }

// readAll is io.ReadAll with the first buffer sized from a known length
// (a Content-Length; a hint of 0 or less, or above 1 MiB, is ignored), so a
// body of known size is read without regrowing the buffer.
func readAll(r io.Reader, hint int64) ([]byte, error) {
	if hint <= 0 || hint > 1<<20 {
		return io.ReadAll(r)
	}
	b := make([]byte, 0, hint+1) // +1: the read that sees EOF needs room
	for {
		n, err := r.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err != nil {
			if err == io.EOF {
				err = nil
			}
			return b, err
		}
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)] // let append grow the buffer
		}
	}
}

// readUpTo is readAll(io.LimitReader(r, limit), hint) without the
// LimitReader: it reads at most limit bytes.
func readUpTo(r io.Reader, limit, hint int64) ([]byte, error) {
	if hint <= 0 || hint > 1<<20 {
		hint = 511 // io.ReadAll's first buffer
	}
	b := make([]byte, 0, min(hint, limit)+1) // +1: the read that sees EOF needs room
	for int64(len(b)) < limit {
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)] // let append grow the buffer
		}
		room := b[len(b):cap(b)]
		if rest := limit - int64(len(b)); int64(len(room)) > rest {
			room = room[:rest]
		}
		n, err := r.Read(room)
		b = b[:len(b)+n]
		if err != nil {
			if err == io.EOF {
				err = nil
			}
			return b, err
		}
	}
	return b, nil
}

// classify applies R4 in order: first match wins.
func (c *call) classify(f *layer.Failure, captureFailed, partial bool) layer.Classification {
	no := func(r layer.Reason) layer.Classification { return layer.Classification{Reason: r} }
	switch {
	case f.Category == layer.CategoryCancellation:
		return no(layer.ReasonCancelled)
	case f.HTTPStatus == 400 || f.HTTPStatus == 401 || f.HTTPStatus == 403:
		return no(layer.ReasonPermanent)
	case captureFailed:
		return no(layer.ReasonCaptureFailed)
	case f.Progress.Observed.Any() || f.Progress.Delivered.Any():
		return no(layer.ReasonSemanticOutput)
	case f.Category == layer.CategoryProtocol:
		return no(layer.ReasonMalformed)
	case partial && f.HTTPStatus/100 == 2:
		// The provider accepted the request and its answer was cut, even
		// before the first body byte: resending could duplicate inference,
		// so an ordinary or structured call fails closed (R4.6).
		return no(layer.ReasonPartialResponse)
	case f.Category == layer.CategoryProviderResponse:
		return no(layer.ReasonPermanent)
	}
	selected := false
	for _, k := range c.r.categories {
		if k == f.Category {
			selected = true
		}
	}
	if selected && f.Category == layer.CategoryHTTP {
		selected = false
		for _, s := range c.r.statuses {
			if s == f.HTTPStatus {
				selected = true
			}
		}
	}
	if selected {
		return layer.Classification{Eligible: true, Reason: layer.ReasonTransient}
	}
	return no(layer.ReasonPermanent)
}

// sleepFor runs the policy's Sleep; a panic in it becomes a *PanicError
// (kept as the failure's DelayCause), never a panic of the call.
func (c *call) sleepFor(d time.Duration) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = &PanicError{Value: v}
		}
	}()
	return c.r.sleep(c.ctx, d)
}
