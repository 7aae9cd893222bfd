package client

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"slices"

	"github.com/recourse-dev/recourse/chat"
	"github.com/recourse-dev/recourse/codec"
	"github.com/recourse-dev/recourse/event"
	"github.com/recourse-dev/recourse/layer"
	"github.com/recourse-dev/recourse/layers/fallback"
	"github.com/recourse-dev/recourse/layers/retry"
)

// FallbackTarget is one target of a native client's fallback (R20.9):
// another Client — its own chain (codec, policy, quota), base URL and
// credential, of any codec — and the model to ask it for. The neutral
// chat.Request is encoded anew by the target's codec.
type FallbackTarget struct {
	// Client sends the target's requests; required. Its own fallback
	// targets, if any, are not followed.
	Client *Client
	// Model is the model asked of the target; "" keeps the request's.
	Model string
	// Name names the target in events, notices, spans and errors; empty
	// means Model, else the client's host. It must be safe to log.
	Name string
	// Policy, when set, is the target's recovery policy for the call,
	// above a per-call policy of the context (retry.WithPolicy, a broker's
	// WithPolicy) and the target chain's own; nil keeps those.
	Policy *retry.Policy
	// Stalls, when not nil, are the stall limits after which this target is
	// left at once for the next one, in place of the rules' Stalls
	// (fallback.Target.Stalls, R20.16); an empty, non-nil list never leaves
	// it on a stall. Nil keeps the rules'. The last target retries a stall
	// whatever its Stalls say.
	Stalls []event.StallLimit
}

// WithFallback makes the client fall back to targets, in order, when
// recovery on the current one ends in a way rules let fall back (R20.2):
// never after semantic output, cancellation or a deadline, and after an
// ambiguous failure of a local provider only with rules.Admit's Allow
// (R20.4). Every target but the last is skipped without a request while
// its shared cooldown lies beyond its delay ceiling (R20.5). Fallback
// covers Complete, CompleteStructured, Stream and StreamEvents until a
// stream delivered output: a stream that fails before its first semantic
// byte is continued by the next target's, and the consumer reads one
// answer (R20.14). The
// target_started and fallback events go to the policy's OnEvent (the
// per-call policy, else the chain's) and to the call's observers (the
// broker's notices, tracing); a final *layer.RecoveryError keeps every
// target's history (R20.7). A target with a nil Client is ignored. Rules
// that fallback.Rules.Validate refuses (a status outside 400–599) make
// New return its *fallback.ConfigError.
func WithFallback(rules fallback.Rules, targets ...FallbackTarget) Option {
	return func(c *Client) {
		if err := rules.Validate(); err != nil {
			c.err = err
			return
		}
		c.rules = rules
		c.rules.Statuses = slices.Clone(rules.Statuses)
		c.rules.Codes, c.rules.NeverCodes = slices.Clone(rules.Codes), slices.Clone(rules.NeverCodes)
		c.rules.Stalls = slices.Clone(rules.Stalls)
		for i, t := range targets {
			if err := (fallback.Rules{Stalls: t.Stalls}).Validate(); err != nil {
				c.err = &fallback.ConfigError{Index: i, Field: "Stalls", Problem: "holds a value that is not header_timeout, first_output_timeout or idle_timeout"}
				return
			}
			if t.Client != nil {
				if t.Stalls != nil {
					t.Stalls = slices.Clone(t.Stalls)
				}
				c.fallback = append(c.fallback, t)
			}
		}
	}
}

// WithCredential makes the client set its credential headers on every
// call from f (for example h.Set("Authorization", "Bearer "+key), a key
// fetched or rotated per call), after WithAPIKey's and WithHeader's. The
// credential is never logged or kept in an event or an error: an error or
// a panic of f ends the call, before anything is sent, with a
// *fallback.CredentialError that names the client's host only. A nil f
// sets nothing.
func WithCredential(f func(ctx context.Context, h http.Header) error) Option {
	return func(c *Client) { c.cred = f }
}

// credential sets the client's credential headers on h (WithCredential).
func (c *Client) credential(ctx context.Context, h http.Header) (err error) {
	if c.cred == nil {
		return nil
	}
	defer func() {
		if recover() != nil {
			err = c.credentialError()
		}
	}()
	if c.cred(ctx, h) != nil {
		return c.credentialError()
	}
	return nil
}

func (c *Client) credentialError() error {
	host := "the client's upstream"
	if u, err := url.Parse(c.base); err == nil {
		host = u.Host
	}
	return &fallback.CredentialError{Target: host}
}

// name returns the target's name.
func (t *FallbackTarget) name() string {
	switch {
	case t.Name != "":
		return t.Name
	case t.Model != "":
		return t.Model
	}
	if u, err := url.Parse(t.Client.base); err == nil {
		return u.Host
	}
	return "fallback target"
}

// withFallback runs once on the client and then, while the call may fall
// back, on each target.
func withFallback[T any](c *Client, ctx context.Context, req *chat.Request, once func(*Client, context.Context, *chat.Request) (T, error)) (T, error) {
	if len(c.fallback) == 0 {
		return once(c, ctx, req)
	}
	w := c.newWalk(ctx, req)
	v, _, err := walkFrom(w, 0, once)
	return v, err
}

// walk is one native call's way through the client's targets.
type walk struct {
	c      *Client
	ctx    context.Context
	req    *chat.Request
	lc     *layer.Call
	run    *fallback.Run
	last   int
	leave  []layer.StallSet // each target's stalls (its own or the rules'), used for every target but the last
	op     codec.Operation
	skip0  bool
	leave0 layer.StallSet
	fin0   func(*layer.RecoveryError)
}

func (c *Client) newWalk(ctx context.Context, req *chat.Request) *walk {
	lc := layer.CallFrom(ctx)
	if lc == nil {
		lc = &layer.Call{}
		ctx = layer.WithCall(ctx, lc)
	}
	onEvent := c.onEvent(ctx)
	names := []string{req.Model}
	facts := []codec.Facts{c.codec.Facts()}
	for i := range c.fallback {
		names = append(names, c.fallback[i].name())
		facts = append(facts, c.fallback[i].Client.codec.Facts())
	}
	run := fallback.NewRun(c.rules, names, facts, func(ev event.Event) error { return lc.Emit(onEvent, ev) })
	leave := []layer.StallSet{layer.StallSetOf(c.rules.Stalls...)}
	for i := range c.fallback {
		run.SetStalls(i+1, c.fallback[i].Stalls)
		if s := c.fallback[i].Stalls; s != nil {
			leave = append(leave, layer.StallSetOf(s...))
		} else {
			leave = append(leave, leave[0])
		}
	}
	return &walk{c: c, ctx: ctx, req: req, lc: lc, last: len(names) - 1, op: factsOf(req).Operation,
		run: run, leave: leave, skip0: lc.SkipOpenCircuit, leave0: lc.LeaveOnStall, fin0: lc.Finish}
}

// target returns target i's client, request and context.
func (w *walk) target(i int) (*Client, *chat.Request, context.Context) {
	cl, r, tctx := w.c, w.req, w.ctx
	if i > 0 {
		t := &w.c.fallback[i-1]
		cl = t.Client
		if t.Model != "" {
			cp := *w.req
			cp.Model = t.Model
			r = &cp
		}
		if t.Policy != nil {
			tctx = retry.WithPolicy(tctx, t.Policy)
		}
	}
	return cl, r, tctx
}

// leaveFor returns the stall set of target i's run (R20.12).
func (w *walk) leaveFor(i int) layer.StallSet {
	if i < w.last {
		return w.leave0 | w.leave[i]
	}
	return w.leave0
}

// after decides once target i failed with re: next reports that the walk
// goes on with target i+1; otherwise err ends the call.
func (w *walk) after(i int, re *layer.RecoveryError) (next bool, err error) {
	cl, r, tctx := w.target(i)
	ev := event.Event{Provider: cl.codec.Provider(), Operation: w.op, Model: r.Model,
		Identity: event.Identity{LogicalID: w.lc.Result.LogicalID, WireAttempt: w.lc.Result.WireAttempts}}
	next, final, oerr := w.run.After(tctx, i, re, ev)
	if oerr != nil {
		return false, oerr
	}
	if !next {
		w.lc.Result.Err = final
		return false, final
	}
	return true, nil
}

// walkFrom runs once on target i and, while the call may fall back, on
// each target after it; it returns the value of the target that answered
// and its index.
func walkFrom[T any](w *walk, i int, once func(*Client, context.Context, *chat.Request) (T, error)) (T, int, error) {
	var zero T
	lc := w.lc
	defer func() { lc.SkipOpenCircuit, lc.LeaveOnStall = w.skip0, w.leave0 }()
	for ; ; i++ {
		cl, r, tctx := w.target(i)
		if err := w.run.Start(i, event.Event{Provider: cl.codec.Provider(), Operation: w.op, Model: r.Model}); err != nil {
			return zero, i, err
		}
		lc.Result = layer.CallResult{}
		lc.SkipOpenCircuit = i < w.last
		lc.LeaveOnStall = w.leaveFor(i)
		lc.Finish = w.fin0
		v, err := once(cl, tctx, r)
		var re *layer.RecoveryError
		if err == nil || !errors.As(err, &re) {
			if err == nil {
				// A stream that opened is the caller's (R20.3) once it
				// delivered output; should it fail, its error still
				// reports every target left behind (R20.7).
				lc.Finish = w.run.Opened(i, lc.Result.LogicalID, w.fin0)
			}
			return v, i, err
		}
		if next, err := w.after(i, re); !next {
			return zero, i, err
		}
	}
}

// openWithFallback opens a stream on the client or, while the call may
// fall back, on each target; a stream of a target but the last goes on to
// the next target when it fails before any output (R20.14).
func (c *Client) openWithFallback(ctx context.Context, req *chat.Request) (layer.FrameReader, error) {
	if len(c.fallback) == 0 {
		return c.openOnce(ctx, req)
	}
	w := c.newWalk(ctx, req)
	fr, i, err := walkFrom(w, 0, (*Client).openOnce)
	if err != nil || i >= w.last {
		return fr, err
	}
	return &fallbackFrames{w: w, i: i, fr: fr}, nil
}

// fallbackFrames is the frame reader of a native stream of a target other
// than the last (R20.14): when the target's run ends before any semantic
// output reached the consumer with an outcome the rules let fall back, the
// next target's stream continues it, and the consumer reads one answer.
type fallbackFrames struct {
	w   *walk
	i   int
	fr  layer.FrameReader
	err error // the stream's final error, once the walk ended without one
}

func (f *fallbackFrames) NextFrame() (codec.Frame, error) {
	for {
		if f.err != nil {
			return codec.Frame{}, f.err
		}
		w := f.w
		w.lc.LeaveOnStall = w.leaveFor(f.i)
		fr, err := f.fr.NextFrame()
		w.lc.LeaveOnStall = w.leave0
		var re *layer.RecoveryError
		if err == nil || f.i >= w.last || !errors.As(err, &re) || w.ctx.Err() != nil || !w.run.FallsBack(f.i, re) {
			return fr, err
		}
		f.fr.Close()
		if next, err := w.after(f.i, re); !next {
			f.err = err
			continue
		}
		v, i, err := walkFrom(w, f.i+1, (*Client).openOnce)
		if err != nil {
			f.err = err
			continue
		}
		f.fr, f.i = v, i
	}
}

// Deliver records evidence handed to the consumer on the current target's
// stream.
func (f *fallbackFrames) Deliver(cnt codec.Counts) { f.fr.Deliver(cnt) }

// Close closes the current target's stream.
func (f *fallbackFrames) Close() error { return f.fr.Close() }

// onEvent returns the OnEvent of the policy calls with ctx run under.
func (c *Client) onEvent(ctx context.Context) func(event.Event) error {
	if p, ok := retry.PolicyFrom(ctx); ok {
		if p == nil {
			return nil
		}
		return p.OnEvent
	}
	if p := c.chain.Policy(); p != nil {
		return p.OnEvent
	}
	return nil
}
