package fallback

import (
	"errors"
	"io"
	"net/http"
	"sync"

	"github.com/recourse-dev/recourse/codec"
	"github.com/recourse-dev/recourse/layer"
)

// continuing is the body of a drop-in stream of a target other than the
// last, handed to the caller when its 200 arrived (R20.14). It reads the
// engine's frames and hands over their bytes, as the engine's own body
// does. When the target's run ends before any semantic byte reached the
// caller with an outcome the rules let fall back, the walk goes on to the
// next target and its stream continues this same body: the caller reads
// one answer. Once a semantic byte was handed over, or when the call does
// not fall back, the engine's body is read as it is (its in-band error
// frame included). It is read by one goroutine, as a response body is.
type continuing struct {
	w     walk
	i     int           // the current target
	treq  *http.Request // the current target's request
	model string
	fr    layer.FrameReader // the current target's engine stream
	body  io.ReadCloser     // the current body: fr, or the next target's
	raw   []byte            // bytes of the current frame not yet read
	plain bool              // read body as it is from now on
	err   error             // the body's final error

	mu     sync.Mutex // guards body's change against a Close from another goroutine
	closed bool
}

func (c *continuing) Read(p []byte) (int, error) {
	for len(c.raw) == 0 {
		if c.err != nil {
			return 0, c.err
		}
		if c.plain {
			return c.body.Read(p)
		}
		c.step()
	}
	n := copy(p, c.raw)
	c.raw = c.raw[n:]
	return n, nil
}

// step reads the current target's next frame into raw, or decides what
// follows its end.
func (c *continuing) step() {
	lc := c.w.lc
	lc.LeaveOnStall = c.w.leaveFor(c.i)
	f, err := c.fr.NextFrame()
	lc.LeaveOnStall = c.w.leave0
	if err == nil {
		if f.Keepalive && c.w.t.l.codec.Facts().HideKeepalives {
			return
		}
		sem := f.Semantic()
		sem.CompletedToolCalls = 0
		c.fr.Deliver(sem)
		c.raw = f.Raw
		return
	}
	var e *layer.RecoveryError
	if err == io.EOF || !errors.As(err, &e) || c.w.req.Context().Err() != nil || !c.w.t.l.rulesFor(c.i).FallsBack(e) {
		// An end, or a failure that does not fall back: the engine's body
		// hands over what it would without the layer (its provider's or
		// its own in-band error frame, then the error).
		c.plain = true
		return
	}
	c.fallBack(e)
}

// fallBack walks on from the current target, which failed with e before
// any output, and continues the body with the next target's stream; when
// the walk ends without one, the body ends with the call's final error,
// after the codec's in-band error frame for it.
func (c *continuing) fallBack(e *layer.RecoveryError) {
	w, t := &c.w, c.w.t
	c.body.Close()
	resp, err, done := t.after(w, c.i, c.treq, c.model, nil, e)
	if !done {
		resp, err = t.from(w, c.i+1)
	}
	if err == nil && resp != nil && resp.StatusCode/100 == 2 {
		// The next target answered: its body (itself continuing when a
		// target follows it) is this body's from now on, unless the
		// caller closed it meanwhile.
		c.mu.Lock()
		closed := c.closed
		if !closed {
			c.body, c.plain = resp.Body, true
		}
		c.mu.Unlock()
		if closed {
			resp.Body.Close()
			c.err = errClosed
		}
		return
	}
	closeResp(resp)
	final := w.lc.Result.Err
	var re *layer.RecoveryError
	if errors.As(err, &re) {
		final = re
	}
	if err == nil && final != nil {
		err = final
	}
	if err == nil {
		err = io.ErrUnexpectedEOF
	}
	c.err = err
	if ef, ok := t.l.codec.(codec.ErrorFramer); ok && final != nil {
		c.raw = ef.ErrorFrame(final.Error())
	}
}

// Close closes the current body; a walk still under way closes the next
// target's body as soon as it has it. It may be called from another
// goroutine while a Read waits.
func (c *continuing) Close() error {
	c.mu.Lock()
	c.closed = true
	b := c.body
	c.mu.Unlock()
	return b.Close()
}

// errClosed is the read error of a body closed during a fallback.
var errClosed = errors.New("fallback: read on a closed response body")
