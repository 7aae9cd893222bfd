package retry

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"time"

	"github.com/recourse-dev/recourse/codec"
	"github.com/recourse-dev/recourse/event"
	"github.com/recourse-dev/recourse/internal/attempt"
	"github.com/recourse-dev/recourse/layer"
)

// resumeState is a background stream's resume (R19.9): where the next
// read starts, and the decoder it continues.
type resumeState struct {
	point codec.ResumePoint
	prev  codec.Observer
}

// readOf is a call that reads a stored response (R19.13).
type readOf struct {
	r      codec.Resumer
	point  codec.ResumePoint
	stream bool
}

// maxReadBody bounds the body of a GET the engine inspects for a read: a
// read's body is a few bytes ({"stream":true}); a larger one passes
// through unjudged.
const maxReadBody = 64 << 10

// readOfRequest returns the read that req is, and ok=false for a request
// that is no read (it then passes through). It reads a GET's body (at most
// maxReadBody bytes) and gives req a body over the same bytes again.
func readOfRequest(r codec.Resumer, req *http.Request) (*readOf, bool) {
	if req.Method != http.MethodGet {
		return nil, false
	}
	var body []byte
	if req.Body != nil && req.Body != http.NoBody {
		b, over, err := readUpTo(req.Body, maxReadBody, req.ContentLength)
		rest := req.Body
		req.Body = struct {
			io.Reader
			io.Closer
		}{io.MultiReader(bytes.NewReader(b), rest), rest}
		if err != nil || over {
			return nil, false
		}
		body = b
	}
	p, stream, ok := r.ReadOf(req, body)
	if !ok {
		return nil, false
	}
	return &readOf{r: r, point: p, stream: stream}, true
}

// info returns the request facts of the read.
func (r *readOf) info() *codec.RequestInfo {
	if r.stream {
		return &codec.RequestInfo{Operation: codec.Streaming, Background: true}
	}
	return &codec.RequestInfo{Operation: codec.Ordinary}
}

// start makes c a read: no admission, no decoding of a retrieved body, no
// cancel of a response the call did not start, and for a stream read a
// resume from the read's own cursor.
func (r *readOf) start(c *call) {
	c.read, c.d.reading, c.cancelSent = true, true, true
	if r.stream {
		c.resumer = r.r
		c.resume = &resumeState{point: r.point}
	}
}

// CancelTimeout bounds the cancel request the engine sends when the caller
// cancels a background response it started (R19.12).
const CancelTimeout = 10 * time.Second

// maxCancelBody bounds the bytes of a cancel answer the engine reads (and
// discards) so that its connection can be reused.
const maxCancelBody = 64 << 10

// resumable reports whether a stream failure of category cat may be
// answered with a resume read: a cut, a stall or another transport failure
// or client timeout (R19.9). A provider's error, a malformed stream, a
// capture failure and a cancellation are not.
func resumable(cat event.Category, ce *layer.CaptureError, fr *codec.Frame) bool {
	return ce == nil && fr == nil && (cat == event.CategoryTransport || cat == event.CategoryClientTimeout)
}

// noteResume is told of a failure f of the current stream attempt a: when
// the codec can resume a's stream, the call reads it again from there on
// instead of sending it again, and f, when it is resumable, is judged as if
// it carried no output, under the policy's categories (R19.9).
func (c *call) noteResume(a *attempt.Attempt, f *event.Failure, resumableCause bool) {
	if c.resumer == nil || a == nil {
		return
	}
	obs := a.Observer()
	p, ok := c.resumer.ResumePoint(obs)
	if !ok {
		return
	}
	c.resume = &resumeState{point: p, prev: obs}
	c.d.reading = true
	if !resumableCause {
		return
	}
	g := *f
	g.Progress = event.Progress{}
	if cl := c.d.Classify(&g, false, false); cl.Eligible {
		f.Classification = cl
	}
}

// resumeRequest returns the resume read of attempt a.
func (c *call) resumeRequest(a *attempt.Attempt) *http.Request {
	base := c.in.forAttempt(c.in.req.WithContext(attempt.With(c.ctx, a)), http.NoBody, true)
	return c.resumer.ResumeRequest(base, c.resume.point)
}

// responseOver reports whether the failure f that ends a call shows that
// its background response is over at the provider, so that cancelling it
// would change nothing (R19.15): the provider's own failure (an error
// event, response.failed, an error document) or a read answered 404 or
// 410 (the response is gone).
func responseOver(f *event.Failure) bool {
	return f != nil && (f.Category == event.CategoryProviderResponse ||
		f.HTTPStatus == http.StatusNotFound || f.HTTPStatus == http.StatusGone)
}

// cancelRemote sends the cancel request of the background response the
// call started, when the caller cancelled it (R19.12) or the call gave up
// on it while it may still be running (R19.15): on its own
// goroutine, so the caller is never held up, through the stages below the
// engine, bounded by CancelTimeout and detached from the call's context.
// Its answer is read (at most maxCancelBody bytes) and discarded; a failure
// changes nothing. It runs once per call, and not at all when the codec
// returns no cancel request (the response is kept running).
func (c *call) cancelRemote() {
	if c.resumer == nil || c.cancelSent {
		return
	}
	var id string
	switch {
	case c.resume != nil:
		id = c.resume.point.ResponseID
	case c.cur != nil:
		if p, ok := c.resumer.ResumePoint(c.cur.Observer()); ok {
			id = p.ResponseID
		}
	}
	if id == "" {
		return
	}
	c.cancelSent = true
	base := c.in.forAttempt(c.in.req.WithContext(context.Background()), http.NoBody, true)
	req := c.resumer.CancelRequest(base, id)
	if req == nil {
		return
	}
	ident := event.Identity{LogicalID: c.logical, AttemptID: newUUIDs(1)}
	a := attempt.New(ident, codec.RequestInfo{Operation: codec.Ordinary, Model: c.in.info.Model}, nil, nil, nil)
	next := c.t.next
	ctx, cancel := context.WithTimeout(context.WithoutCancel(c.ctx), CancelTimeout)
	req = req.WithContext(attempt.With(ctx, a))
	go func() {
		defer cancel()
		resp, err := next.RoundTrip(req)
		if err != nil {
			return
		}
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxCancelBody))
		resp.Body.Close()
	}()
}
