package chain

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"slices"

	"github.com/recourse-dev/recourse/chat"
	"github.com/recourse-dev/recourse/codec"
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
	// above a per-call policy of the context (WithCallPolicy, a broker's
	// WithPolicy) and the target chain's own; nil keeps those.
	Policy *retry.Policy
}

// WithFallback makes the client fall back to targets, in order, when
// recovery on the current one ends in a way rules let fall back (R20.2):
// never after semantic output, cancellation or a deadline, and after an
// ambiguous failure of a local provider only with rules.Admit's Allow
// (R20.4). Every target but the last is skipped without a request while
// its shared cooldown lies beyond its delay ceiling (R20.5). Fallback
// covers Complete, CompleteStructured, Stream and StreamEvents up to the
// opening of a stream: a stream that opened is the caller's. The
// target_started and fallback events go to the policy's OnEvent (the
// per-call policy, else the chain's) and to the call's observers (the
// broker's notices, tracing); a final *layer.RecoveryError keeps every
// target's history (R20.7). A target with a nil Client is ignored. Rules
// that fallback.Rules.Validate refuses (a status outside 400–599) make
// NewClient return its *fallback.ConfigError.
func WithFallback(rules fallback.Rules, targets ...FallbackTarget) ClientOption {
	return func(c *Client) {
		if err := rules.Validate(); err != nil {
			c.err = err
			return
		}
		c.rules = rules
		c.rules.Statuses = slices.Clone(rules.Statuses)
		c.rules.Codes, c.rules.NeverCodes = slices.Clone(rules.Codes), slices.Clone(rules.NeverCodes)
		c.rules.Stalls = slices.Clone(rules.Stalls)
		for _, t := range targets {
			if t.Client != nil {
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
func WithCredential(f func(ctx context.Context, h http.Header) error) ClientOption {
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
	var zero T
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
	run := fallback.NewRun(c.rules, names, facts, func(ev layer.Event) error { return lc.Emit(onEvent, ev) })
	skip0, leave0 := lc.SkipOpenCircuit, lc.LeaveOnStall
	defer func() { lc.SkipOpenCircuit, lc.LeaveOnStall = skip0, leave0 }()
	leave := layer.StallSetOf(c.rules.Stalls...)
	op := factsOf(req).Operation
	for i := 0; ; i++ {
		cl, r, tctx := c, req, ctx
		if i > 0 {
			t := &c.fallback[i-1]
			cl = t.Client
			if t.Model != "" {
				cp := *req
				cp.Model = t.Model
				r = &cp
			}
			if t.Policy != nil {
				tctx = WithCallPolicy(tctx, t.Policy)
			}
		}
		ev := layer.Event{Provider: cl.codec.Provider(), Operation: op, Model: r.Model}
		if err := run.Start(i, ev); err != nil {
			return zero, err
		}
		lc.Result = layer.CallResult{}
		lc.SkipOpenCircuit = i < len(names)-1
		lc.LeaveOnStall = leave0
		if i < len(names)-1 {
			lc.LeaveOnStall |= leave
		}
		v, err := once(cl, tctx, r)
		var re *layer.RecoveryError
		if err == nil || !errors.As(err, &re) {
			if err == nil {
				// A stream that opened is the caller's (R20.3); should it
				// fail, its error still reports every target left
				// behind (R20.7).
				lc.Finish = run.Opened(i, lc.Result.LogicalID, lc.Finish)
			}
			return v, err
		}
		ev.Identity = layer.Identity{LogicalID: lc.Result.LogicalID, WireAttempt: lc.Result.WireAttempts}
		next, final, oerr := run.After(tctx, i, re, ev)
		if oerr != nil {
			return zero, oerr
		}
		if !next {
			lc.Result.Err = final
			return zero, final
		}
	}
}

// onEvent returns the OnEvent of the policy calls with ctx run under.
func (c *Client) onEvent(ctx context.Context) func(layer.Event) error {
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
