package retry

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/recourse-dev/recourse/codec"
	"github.com/recourse-dev/recourse/event"
	"github.com/recourse-dev/recourse/internal/attempt"
	"github.com/recourse-dev/recourse/layer"
)

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
	history  []event.Failure
	wire     int // wire attempts sent

	// The attempt in flight.
	cur     *attempt.Attempt
	id      event.Identity
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
	return c.emit(event.AttemptStarted, nil, 0, 0)
}

// loop runs attempts from n on. When f is not nil it is the failure of
// attempt n-1 (pass is its complete response, if any), and the decision
// plane runs first. loop returns the successful response, or how the call
// ends.
func (c *call) loop(n int, f *event.Failure, pass *http.Response) (*http.Response, error) {
	for ; ; n++ {
		if f != nil {
			if resp, err, stop := c.afterFailure(f, n-1, pass); stop {
				return resp, err
			}
		}
		if c.ctx.Err() != nil {
			return c.cancelled(f)
		}
		c.id = event.Identity{LogicalID: c.logical, AttemptID: c.attemptID(), WireAttempt: n}
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

func (c *call) newFailure(a *attempt.Attempt) event.Failure {
	f := event.Failure{
		Identity: c.id, Provider: c.provider, Operation: c.in.info.Operation,
		Category: event.CategoryTransport, Acceptance: event.AcceptanceUnknown,
		RetryAfter: event.RetryAfter{Kind: event.RetryAfterAbsent},
	}
	if a != nil {
		f.Progress = a.Progress()
		f.Phase = a.Phase()
	}
	return f
}
