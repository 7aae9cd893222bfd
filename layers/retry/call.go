package retry

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"time"

	"github.com/recourse-dev/recourse/chat"
	"github.com/recourse-dev/recourse/codec"
	"github.com/recourse-dev/recourse/internal/attempt"
	"github.com/recourse-dev/recourse/layer"
)

type transport struct {
	l    *Layer
	next http.RoundTripper
	// direct: next is the engine's own stages alone (WrapDirect), so only
	// capture replays an attempt's body, and only for an OnWire hook.
	direct bool
}

func (t *transport) RoundTrip(req *http.Request) (*http.Response, error) {
	pol := t.l.policy
	if p, ok := policyFrom(req.Context()); ok {
		pol = p
	}
	if pol == nil {
		// Recovery is off: the request goes through as it is, marked so
		// that the sender does not take its missing attempt for a layer
		// that detached it (layer.ErrDetachedRequest).
		return t.next.RoundTrip(req.WithContext(attempt.WithPassThrough(req.Context())))
	}
	var read *readOf
	if r, ok := t.l.codec.(codec.Resumer); ok && !r.Creates(req) {
		var isRead bool
		if read, isRead = readOfRequest(r, req); !isRead {
			// A cancel or a delete: once, unjudged (R19.13), marked as a
			// request the engine passed through (layer.ErrDetachedRequest).
			return t.next.RoundTrip(req.WithContext(attempt.WithPassThrough(req.Context())))
		}
	}
	c := &call{t: t}
	c.d.facts = t.l.facts
	if err := c.d.r.resolve(pol, max(pol.MaxAttempts, 1)-1); err != nil {
		closeRequestBody(req)
		return nil, err
	}
	c.ctx = req.Context()
	c.lc = layer.CallFrom(c.ctx)
	if c.lc == nil {
		c.lc = &c.ownCall // nobody reads the result: keep it with the call
	}
	facts := c.lc.Facts
	if read != nil {
		facts = read.info()
	}
	if err := c.in.read(req, t.l.codec, facts); err != nil {
		return nil, err
	}
	if c.in.info.Operation == codec.Streaming {
		// The stream's consumer may close it from another goroutine while
		// it waits: its Close cancels this context (R13.5). A call that
		// opens no stream releases it as it returns.
		c.ctx, c.stop = context.WithCancelCause(c.ctx)
		defer func() {
			if !c.stream && c.stop != nil {
				c.stop(nil)
			}
		}()
	}
	// Only a typed caller (the native client) reads a stream's accumulated
	// text, so a drop-in stream keeps O(1) memory however long it runs; and
	// only a drop-in caller reads the frames' bytes, so a native stream's
	// decoder copies them for error frames alone.
	c.in.info.DropText, c.in.info.TypedFrames = !c.lc.TypedErrors, c.lc.TypedErrors
	// A drop-in client receives a provider's documented finish as the
	// provider sent it; the typed API keeps it an incomplete completion
	// (R13.3).
	c.in.info.ProviderFinish = !c.lc.TypedErrors
	if t.l.codec != nil {
		c.provider = t.l.codec.Provider()
		switch r, ok := t.l.codec.(codec.Resumer); {
		case read != nil:
			read.start(c)
		case ok && r.Background(c.in.body):
			c.resumer, c.d.background = r, true
			c.in.info.Background = true
		case ok && c.in.info.Operation == codec.Streaming:
			// A foreground stream the codec may continue from a
			// checkpoint the provider gave (R23.9): no cancel, no
			// ambiguity before an ID, only ResumePoint decides.
			c.resumer = r
		}
	}
	// One allocation holds the logical ID and the first attempt's ID, apart
	// from the call: an ID an application keeps (in an event, an error, a
	// map) must not keep the call's request and response alive with it.
	ids := newUUIDs(2)
	c.logical, c.spareID = ids[:uuidLen], ids[uuidLen:]
	c.start = c.d.r.mono()
	// Until an attempt starts, events (a cancellation before the first send)
	// still carry a complete identity: wire attempt 0, nothing sent (R11.2).
	c.id = layer.Identity{LogicalID: c.logical}
	if g := c.lc.Gate; g != nil {
		// A retry quota: the call deposits, and its first attempt waits for
		// the upstream's shared cooldown.
		ug := g.Bind(req.URL, c.in.info.Model, req.Header)
		ug.Deposit()
		c.d.Bind(ug)
		if err := c.breaker(); err != nil {
			c.report(nil)
			return nil, err
		}
		if c.lc.SkipOpenCircuit && c.d.OpenCircuit() {
			return c.openCircuit()
		}
		if cancelled, err := c.d.HoldFirst(c.ctx, c.emit); err != nil {
			c.report(nil)
			return nil, err
		} else if cancelled {
			return c.cancelled(nil)
		}
	}
	return c.loop(1, nil, nil)
}

// stopOnClose is the body of a stream handed over undecoded: closing it
// releases the call's context.
type stopOnClose struct {
	io.ReadCloser
	stop context.CancelCauseFunc
}

func (b *stopOnClose) Close() error {
	err := b.ReadCloser.Close()
	b.stop(nil)
	return err
}

func closeRequestBody(req *http.Request) {
	if req.Body != nil {
		req.Body.Close()
	}
}

// call is the state of one logical completion: the request taken once, the
// decision plane, and the attempt in flight. Its booleans sit together: the
// call stays within 888 bytes, which with the allocator's header is the
// 896-byte size class rather than 1024.
type call struct {
	t       *transport
	d       Decider
	in      request
	ctx     context.Context
	lc      *layer.Call // the call's per-call value (ownCall when it has none)
	ownCall layer.Call
	// Readers kept in the call, so that a call with one attempt allocates
	// none: the first attempt's request body, and the body of the first
	// response the engine holds in memory. Each is used once (a later
	// attempt's transport may still read an earlier body) and never reset.
	reqBody  bytes.Reader
	respBody bytesBody

	// first is the call's first attempt, kept in the call like the
	// readers above so that a call with one attempt allocates no attempt
	// of its own; later attempts are new ones. firstUsed (below, with the
	// other booleans) says it was handed out.
	first attempt.Attempt
	// stop cancels ctx, for a stream call: its consumer's Close from
	// another goroutine ends a read, a backoff or an admission wait the
	// stream is in (R13.5). Nil for other calls.
	stop context.CancelCauseFunc

	provider codec.Provider
	logical  string
	start    time.Duration
	history  []layer.Failure
	wire     int // wire attempts sent

	// The attempt in flight.
	cur     *attempt.Attempt
	id      layer.Identity
	pending int    // its wire attempt number
	status  int    // its response status
	spareID string // an attempt ID not yet used, or ""

	// A background stream (R19.9): the codec that resumes it, and once a
	// failure left it resumable, where the next read starts.
	resumer    codec.Resumer
	resume     *resumeState
	cancelSent bool // the cancel request of R19.12 went out (or must not)
	read       bool // the call reads a stored response (R19.13)

	stream            bool // a stream body is open: failures end as errors
	started           bool // the attempt in flight passed Begin
	reqUsed, respUsed bool // reqBody, respBody were handed out
	firstUsed         bool // first was handed out
}

// attemptID returns a new attempt ID.
func (c *call) attemptID() string {
	if id := c.spareID; id != "" {
		c.spareID = ""
		return id
	}
	return newUUIDs(1)
}

// BeginAttempt runs when the current attempt's request is about to leave
// (see attempt.Attempt.Begin): the call is its attempts' attempt.Beginner.
func (c *call) BeginAttempt() error {
	c.started = true
	c.wire = c.pending
	return c.emit(layer.EventAttemptStarted, nil, 0, 0)
}

// loop runs attempts from n on. When f is not nil it is the failure of
// attempt n-1 (pass is its complete response, if any), and the decision
// plane runs first. loop returns the successful response, or how the call
// ends.
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
		if !c.firstUsed {
			c.firstUsed = true
			c.cur = attempt.InitFor(&c.first, c.id, c.in.info, c.t.l.codec, c.d.r.onWire, c)
		} else {
			c.cur = attempt.NewFor(c.id, c.in.info, c.t.l.codec, c.d.r.onWire, c)
		}
		if c.resume != nil {
			// A resume read continues the stream's decoder (R19.9).
			c.cur.UseObserver(c.resumer.ResumeObserver(c.resume.prev, c.resume.point))
		}
		res := c.attempt()
		started := c.started
		if res.err != nil {
			if !started {
				c.id.WireAttempt = n - 1
			}
			var ce *layer.CaptureError
			if errors.As(res.err, &ce) && ce.Direction == layer.DirectionRequest {
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
			c.report(nil)
			return nil, res.err
		}
		if res.failure == nil {
			if c.in.info.Operation == codec.Streaming && c.cur.Decodes() {
				if c.stream {
					return res.resp, nil
				}
				return c.openStream(n, res.resp), nil
			}
			if c.stop != nil && res.resp.StatusCode/100 == 2 {
				// A stream the codec does not decode is handed over as it
				// is: its context lives until its body is closed.
				res.resp.Body = &stopOnClose{ReadCloser: res.resp.Body, stop: c.stop}
				c.stop = nil
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
	before := c.cur.Progress().Delivered
	c.cur.SetDelivered(c.cur.Progress().Observed)
	if err := c.emit(layer.EventAttemptSucceeded, nil, 0, 0); err != nil {
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
		f.Category, f.HTTPStatus, f.Acceptance = layer.CategoryCancellation, c.status, layer.AcceptanceYes
		f.Attach(layer.Evidence{Cause: c.ctx.Err(), Headers: resp.Header.Clone(), Response: ev})
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
func (c *call) afterFailure(f *layer.Failure, n int, pass *http.Response) (resp *http.Response, err error, stop bool) {
	c.history = append(c.history, *f)
	c.d.Failed()
	if err := c.emit(layer.EventAttemptFailed, f, 0, 0); err != nil {
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
	if f.Category == layer.CategoryCancellation {
		closeResp(pass)
		resp, err = c.cancelled(f)
		return resp, err, true
	}
	if !f.Classification.Eligible || c.lc.LeaveOnStall.Has(f.Stall) {
		// Not resent; a stall the caller leaves on goes, unresent, to
		// the next fallback target (R20.12).
		resp, err = c.finish(layer.OutcomeInterrupted, f, pass)
		return resp, err, true
	}
	// pass (an in-memory body) is kept until the decision: when recovery
	// gives up on it, it is the final response a drop-in caller gets.
	if n >= c.d.r.maxAttempts {
		resp, err = c.finish(layer.OutcomeExhausted, f, pass)
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
	case o == layer.OutcomeCancelled:
		closeResp(pass)
		resp, err = c.cancelled(f)
		return resp, err, true
	case o != "":
		next := 0
		if o.TerminalEvent() != layer.EventExhausted && o != layer.OutcomeInterrupted {
			next = n + 1 // an admission event names the attempt it was about
		}
		resp, err = c.finishWith(o, f, pass, next)
		return resp, err, true
	}
	closeResp(pass)
	return nil, nil, false
}

// finish emits the terminal event of o and ends the call (R11.2).
func (c *call) finish(o layer.Outcome, f *layer.Failure, resp *http.Response) (*http.Response, error) {
	return c.finishWith(o, f, resp, 0)
}

// finishWith is finish with the attempt next that the terminal event is
// about (an admission outcome names it; 0 for none).
func (c *call) finishWith(o layer.Outcome, f *layer.Failure, resp *http.Response, next int) (*http.Response, error) {
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
func (c *call) end(o layer.Outcome, f *layer.Failure, resp *http.Response) (*http.Response, error) {
	if !responseOver(f) {
		// The call gives up on a background response it started that may
		// still be running: cancel it, as for a caller's cancel (R19.15).
		c.cancelRemote()
	}
	var ctxErr error
	if o == layer.OutcomeCancelled {
		ctxErr = c.ctx.Err()
	}
	rerr := layer.NewRecoveryError(o, *f, c.history, ctxErr)
	if o == layer.OutcomeQuotaExhausted {
		rerr.Quota = c.d.refusal
	}
	c.report(rerr)
	if resp != nil && o != layer.OutcomeCancelled && !c.lc.TypedErrors && !c.stream && passable(resp.StatusCode) {
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
	// HeaderOutcome is the call's layer.Outcome, for example "exhausted".
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
			skipped := err.Outcome == layer.OutcomeDelayCeiling && c.wire == 0 && c.lc.SkipOpenCircuit
			bg.Ended(skipped, !skipped && err.Outcome != layer.OutcomeCancelled)
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
	ev := c.event(layer.EventBreaker)
	ev.Breaker = &b
	return c.send(ev)
}

// cancelled ends the call with outcome cancelled (R9). f is the failure of
// the last actual attempt, or nil when nothing was sent in this call.
func (c *call) cancelled(f *layer.Failure) (*http.Response, error) {
	c.cancelRemote()
	if c.id.AttemptID == "" {
		c.id.AttemptID = c.attemptID()
	}
	if f == nil || f.Category != layer.CategoryCancellation {
		nf := c.newFailure(nil)
		nf.Category = layer.CategoryCancellation
		nf.Classification = layer.Classification{Reason: layer.ReasonCancelled}
		if c.cur == nil {
			// The attempt being cancelled never left (before the first
			// send, or a resend cancelled in its request capture): nothing
			// of it was sent (R10.2).
			nf.Acceptance = layer.AcceptanceNo
		}
		nf.Attach(layer.Evidence{Cause: c.ctx.Err()})
		f = &nf
	}
	return c.finish(layer.OutcomeCancelled, f, nil)
}

// openCircuit ends a call whose upstream's circuit is open before its
// first attempt (R20.5): outcome delay_ceiling, nothing sent.
func (c *call) openCircuit() (*http.Response, error) {
	c.id.AttemptID = c.attemptID()
	f := c.newFailure(nil)
	f.Acceptance = layer.AcceptanceNo
	f.Phase = layer.PhaseConnecting
	f.Classification = layer.Classification{Eligible: true, Reason: layer.ReasonTransient}
	return c.finish(layer.OutcomeDelayCeiling, &f, nil)
}

func (c *call) requestCaptureFailed(ce *layer.CaptureError) (*http.Response, error) {
	f := c.newFailure(nil)
	f.Category = layer.CategoryProtocol
	f.Acceptance = layer.AcceptanceNo
	f.Phase = layer.PhaseCapture
	f.Classification = layer.Classification{Reason: layer.ReasonCaptureFailed}
	f.Attach(layer.Evidence{Cause: captureCause(ce), CaptureCause: ce.Cause})
	return c.finish(layer.OutcomeInterrupted, &f, nil)
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

func (c *call) newFailure(a *attempt.Attempt) layer.Failure {
	f := layer.Failure{
		Identity: c.id, Provider: c.provider, Operation: c.in.info.Operation,
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
