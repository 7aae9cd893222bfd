package retry

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"

	"github.com/recourse-dev/recourse/chat"
	"github.com/recourse-dev/recourse/codec"
	"github.com/recourse-dev/recourse/event"
	"github.com/recourse-dev/recourse/internal/attempt"
	"github.com/recourse-dev/recourse/layer"
)

// MaxResponseBody bounds an ordinary response body; a larger body is a
// protocol failure with reason event.ReasonBodyTooLarge rather than
// unbounded memory, and refusing it allocates at most 1.5× the limit (R4.9).
const MaxResponseBody = 64 << 20

// MaxEvidenceBytes bounds the body bytes a failure keeps as private
// evidence (event.Evidence.Bytes): the first MaxEvidenceBytes of a failed
// ordinary response, and the last MaxEvidenceBytes of a stream whose
// capture failed (the failing chunk included). A stream that failed
// otherwise keeps the bytes of the frame that ended it.
const MaxEvidenceBytes = 1 << 20

// attemptResult is what one attempt ended with.
type attemptResult struct {
	resp     *http.Response // success, or a complete failure response that may pass through
	failure  *event.Failure
	evidence event.ResponseEvidence
	comp     *chat.Completion // the decoded success, when there is a codec
	err      error            // an observer error or a request-capture failure: stop now
}

// attempt runs one wire attempt and settles it into success or a failure.
func (c *call) attempt() attemptResult {
	a := c.cur
	var areq *http.Request
	if c.resume != nil {
		areq = c.resumeRequest(a)
	} else {
		areq = c.in.forAttempt(c.in.req.WithContext(attempt.With(c.ctx, a)), c.requestBody(), !c.t.direct || c.d.r.onWire != nil)
	}
	resp, err := c.t.next.RoundTrip(areq)
	if err != nil {
		return c.settleError(a, err)
	}
	return c.settleResponse(a, resp)
}

// requestBody returns a new reader over the call's request body: over the
// call's own bytes.Reader for its first attempt, a new one afterwards. It is
// an io.NopCloser over a *bytes.Reader, a body net/http knows is in memory
// (it then writes the headers and a small body in one write).
func (c *call) requestBody() io.ReadCloser {
	if len(c.in.body) == 0 {
		return http.NoBody // a read (R19.13)
	}
	if c.reqUsed {
		return io.NopCloser(bytes.NewReader(c.in.body))
	}
	c.reqUsed = true
	c.reqBody.Reset(c.in.body)
	return io.NopCloser(&c.reqBody)
}

// responseBody returns a replayable body over b, a response held in
// memory: the call's own the first time, a new one afterwards.
func (c *call) responseBody(b []byte) *bytesBody {
	if c.respUsed {
		return newBytesBody(b)
	}
	c.respUsed = true
	c.respBody.Reset(b)
	return &c.respBody
}

func (c *call) settleError(a *attempt.Attempt, err error) attemptResult {
	var oe *layer.ObserverError
	if errors.As(err, &oe) {
		return attemptResult{err: err}
	}
	var ce *layer.CaptureError
	if errors.As(err, &ce) && ce.Direction == layer.DirectionRequest {
		return attemptResult{err: err}
	}
	f := c.newFailure(a)
	ev := event.Evidence{Cause: err}
	transportErr := err
	if ce != nil {
		ev.Cause, ev.CaptureCause = captureCause(ce), ce.Cause
		transportErr = ce.Transport
	}
	var refused *layer.RedirectError
	switch {
	case c.ctx.Err() != nil:
		f.Category = event.CategoryCancellation
		ev.Cause = err
		if !a.Connected() {
			// Cancelled before a connection was obtained: nothing was sent.
			f.Acceptance = event.AcceptanceNo
		}
	case errors.As(transportErr, &refused):
		f.Category = event.CategoryHTTP
		f.HTTPStatus = refused.Response.StatusCode
		f.Phase = event.PhaseBody
		ev.Bytes = bytes.Clone(refused.Body)
		ev.Headers = refused.Response.Header.Clone()
		c.responseFacts(&f, &ev, refused.Response.Header, refused.Body)
	case headersTooLarge(transportErr):
		// The answer's headers are over the transport's limit: the same
		// request would meet the same answer, so it is malformed, not
		// transient.
		f.Category = event.CategoryProtocol
		f.Phase = event.PhaseAwaitingHeaders
	default:
		var ne net.Error
		if errors.As(transportErr, &ne) && ne.Timeout() {
			f.Category = event.CategoryClientTimeout
		}
		if !a.Connected() {
			f.Acceptance = event.AcceptanceNo
		}
	}
	noteStall(&f, transportErr)
	f.Attach(ev)
	f.Classification = c.d.Classify(&f, ce != nil, false)
	if f.Classification.Eligible && (errors.Is(transportErr, layer.ErrSecondSend) || errors.Is(transportErr, layer.ErrDetachedRequest)) {
		// A layer below the engine sent the attempt twice (the provider
		// has the first POST) or sent a request it detached from the
		// attempt (refused, nothing sent): a resend would meet the same
		// layer. It is not transient.
		f.Classification = event.Classification{Reason: event.ReasonPermanent}
	}
	return attemptResult{failure: &f}
}

// responseFacts fills the Retry-After, provider code and request ID of a
// failure, keeping only safe values in the record (R5, R10.3).
func (c *call) responseFacts(f *event.Failure, ev *event.Evidence, h http.Header, body []byte) {
	ra := parseRetryAfter(h.Values("Retry-After"), c.d.r.wall())
	switch ra.Kind {
	case afterSeconds:
		f.RetryAfter = event.RetryAfter{Kind: event.RetryAfterSeconds, Delay: ra.Delay}
	case afterDate:
		f.RetryAfter = event.RetryAfter{Kind: event.RetryAfterDate, Delay: ra.Delay, Time: ra.Time}
	case afterInvalid:
		f.RetryAfter = event.RetryAfter{Kind: event.RetryAfterInvalid}
	}
	if c.t.l.codec == nil {
		c.providerHints(f, h, "")
		return
	}
	code := c.t.l.codec.ErrorCode(body)
	id := c.t.l.codec.RequestID(h)
	ev.Response.RequestID = id
	c.noteCode(f, ev, code)
	if codec.IsValidRequestID(id) && !echoes(id, c.in.body, c.in.header) {
		f.ProviderRequestID = id
	}
	c.providerHints(f, h, code)
	if f.HTTPStatus/100 != 2 {
		c.bodyHints(f, body)
	}
}

// noteCode records a provider's error code: as sent in the private
// evidence ev, and as f's ProviderCode only when it is a known code that
// the request's body and headers do not echo (R10.5).
func (c *call) noteCode(f *event.Failure, ev *event.Evidence, code string) {
	ev.Response.Code = code
	if codec.IsKnownProviderCode(code) && !echoes(code, c.in.body, c.in.header) {
		f.ProviderCode = code
	}
}

// settleResponse judges an attempt's response that is not a 2xx stream:
// it reads the whole body (into the snapshot too, with capture on), hands
// a 2xx body that decodes over as the success, and otherwise builds the
// attempt's failure record and classifies it. It is one function of more
// than 100 lines because its verdicts follow one precedence over one read
// of the body (cancelled, HTTP status, cut, capture failure, size, decode)
// and the success returns before any of the record is built; in pieces,
// the body, its read error and the flags would travel between them.
func (c *call) settleResponse(a *attempt.Attempt, resp *http.Response) attemptResult {
	c.status = resp.StatusCode
	if c.in.info.Operation == codec.Streaming && resp.StatusCode/100 == 2 {
		// A 2xx stream is read frame by frame by the stream body (or, for a
		// codec that decodes no frames, handed over as it is).
		return attemptResult{resp: resp}
	}
	// With capture on, the engine's copy of the body is the one the
	// snapshot is taken from, so that a refused oversize body is held once
	// (R4.9, R12.2).
	bc, _ := resp.Body.(attempt.BodyCapture)
	if bc != nil {
		bc.KeepBytes()
	}
	b, over, rerr := readUpTo(resp.Body, MaxResponseBody, min(resp.ContentLength, MaxResponseBody))
	if bc != nil {
		kept := b
		if over {
			// The snapshot of a body refused for its size holds what its
			// evidence holds: its first MaxEvidenceBytes.
			kept = b[:min(len(b), MaxEvidenceBytes)]
		}
		if err := bc.CaptureBody(kept, over); err != nil {
			rerr = err
		}
	}
	resp.Body.Close()
	cancelled := c.ctx.Err() != nil
	ok2xx := resp.StatusCode/100 == 2
	// A whole 2xx body that decodes is a success: nothing of the failure
	// record below (evidence copies, Retry-After, provider code) is needed.
	complete := !cancelled && ok2xx && rerr == nil && !over
	var (
		comp    event.ResponseEvidence
		decoded *chat.Completion
		derr    error
	)
	if complete {
		if comp, decoded, derr = c.decode(b); derr == nil {
			// A RoundTripper's response belongs to its caller: this
			// layer changes it rather than copying it.
			resp.Body = c.responseBody(b)
			resp.ContentLength = int64(len(b))
			return attemptResult{resp: resp, evidence: comp, comp: decoded}
		}
	}
	f := c.newFailure(a)
	f.HTTPStatus = resp.StatusCode
	ev := event.Evidence{Bytes: bytes.Clone(b[:min(len(b), MaxEvidenceBytes)]), Headers: resp.Header.Clone()}
	c.responseFacts(&f, &ev, resp.Header, b)
	var ce *layer.CaptureError
	captureFailed := errors.As(rerr, &ce)
	if captureFailed {
		ev.CaptureCause, rerr = ce.Cause, ce.Transport
	}
	partial, oversize := false, false
	switch {
	case cancelled:
		f.Category = event.CategoryCancellation
		ev.Cause = c.ctx.Err()
	case !ok2xx:
		f.Category = event.CategoryHTTP
		ev.Cause = rerr
	case rerr != nil:
		f.Category = event.CategoryTransport
		f.Acceptance = event.AcceptanceYes
		ev.Cause = rerr
		partial = !c.read // a read duplicates nothing (R19.13)
	case captureFailed:
		f.Acceptance = event.AcceptanceYes
		ev.Cause = captureCause(ce)
	case over:
		f.Category = event.CategoryProtocol
		f.Acceptance = event.AcceptanceYes
		f.Phase = event.PhaseDecoding
		ev.Cause = &codec.ProtocolError{What: "response body exceeds the size limit"}
		oversize = true
	default:
		// complete holds here and the body did not decode (derr != nil).
		f.Acceptance = event.AcceptanceYes
		f.Phase = event.PhaseDecoding
		ev.Cause = derr
		ev.Response.FinishReason, ev.Response.Model, ev.Response.Usage = comp.FinishReason, comp.Model, comp.Usage
		var pe *codec.ProviderError
		if errors.As(derr, &pe) {
			f.Category = event.CategoryProviderResponse
			c.noteCode(&f, &ev, pe.Code)
		} else {
			f.Category = event.CategoryProtocol
		}
	}
	if captureFailed && ev.Cause == nil {
		// No transport error: the capture's failure is the cause, for a
		// non-2xx answer as much as for a 2xx one (R10.5, R12.3).
		ev.Cause = captureCause(ce)
	}
	f.Progress = a.Progress()
	noteStall(&f, rerr)
	attachEvidence(&f, ev)
	f.Classification = c.d.Classify(&f, captureFailed, partial)
	if oversize {
		// The body was refused for its size whatever it held: the
		// semantic output R4.4 would name is cut, so the reason names the
		// size (R4.9). Neither is ever eligible.
		f.Classification = event.Classification{Reason: event.ReasonBodyTooLarge}
	}
	var pass *http.Response
	if rerr == nil && !captureFailed && !over && !cancelled {
		resp.Body = c.responseBody(b)
		resp.ContentLength = int64(len(b))
		pass = resp
	}
	return attemptResult{resp: pass, failure: &f}
}

// decode decodes a complete 2xx body; a structured call's content must
// itself be JSON (R4.5, R16.3: parsing only, no schema validation).
func (c *call) decode(b []byte) (event.ResponseEvidence, *chat.Completion, error) {
	if c.t.l.codec == nil || c.read {
		// A read's body is the stored response as it is now, in any
		// status: it is handed over, not judged (R19.13).
		return event.ResponseEvidence{}, nil, nil
	}
	if ch, ok := c.t.l.codec.(codec.Checker); ok && c.outcomeOnly() && c.in.info.Operation == codec.Ordinary {
		// Nobody can read this call's result (a drop-in call without a
		// *layer.Call), or its reader reads only the outcome (R20.11):
		// judge the body as Decode would, without building the completion.
		return event.ResponseEvidence{}, nil, ch.Check(b)
	}
	comp, err := c.t.l.codec.Decode(b)
	if err != nil {
		return event.ResponseEvidence{}, nil, err
	}
	ev := event.ResponseEvidence{FinishReason: comp.FinishReason, Model: comp.Model, Usage: comp.Usage}
	if c.in.info.Operation == codec.Structured && len(comp.Message.ToolCalls) == 0 && !json.Valid([]byte(comp.Message.Content)) {
		// The refused answer keeps its evidence for Inspect (R10.5).
		return ev, nil, &codec.ProtocolError{What: "structured content is not JSON"}
	}
	return ev, comp, nil
}

// outcomeOnly reports whether nobody reads the call's Response or
// Completion: the call has no *layer.Call of its caller's, or one marked
// OutcomeOnly that no observer watches.
func (c *call) outcomeOnly() bool {
	return c.lc == &c.ownCall || (c.lc.OutcomeOnly && len(c.lc.Observers()) == 0)
}

// headersTooLarge reports whether err is net/http's refusal of response
// headers over Transport.MaxResponseHeaderBytes. The standard library gives
// that error no type, so its fixed text is matched.
func headersTooLarge(err error) bool {
	return err != nil && strings.Contains(err.Error(), "net/http: server response headers exceeded ")
}

// echoes reports whether v occurs in the encoded request body or in any
// request header value (a credential). Safe records omit such values (R10.3).
// A "req_"-prefixed value also echoes when its unprefixed part does.
func echoes(v string, body []byte, h http.Header) bool {
	if v == "" {
		return false
	}
	if bare, ok := strings.CutPrefix(v, "req_"); ok && bare != "" && echoes(bare, body, h) {
		return true
	}
	if strings.Contains(string(body), v) {
		return true
	}
	for _, vs := range h {
		for _, hv := range vs {
			if strings.Contains(hv, v) {
				return true
			}
		}
	}
	return false
}
