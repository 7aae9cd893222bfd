package retry

// roundtrip.go holds the engine's http.RoundTripper: the per-call setup from a request to its first attempt.

import (
	"context"
	"io"
	"net/http"

	"github.com/recourse-dev/recourse/codec"
	"github.com/recourse-dev/recourse/event"
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

// RoundTrip runs one logical completion of req. With recovery off (no
// policy), or for a resumable response's cancel or delete, it sends req once
// as it is. Otherwise it resolves the policy, reads the request once, sets
// up the call's identity, context and upstream gate (whose cooldown may hold
// the first attempt, or whose open circuit may end the call), and runs the
// attempts. It is one function of more than 80 lines because these steps run
// once, in this order, each able to end the call before its first attempt,
// and all fill in the one call; split, each piece would hand back the call
// and whether to stop.
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
	c.id = event.Identity{LogicalID: c.logical}
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
