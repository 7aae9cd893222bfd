// Package chain assembles recourse layers into one http.RoundTripper. The
// native typed client that sends through a chain is package client.
//
// A chain is an onion with two open positions for a user's own layers,
// outermost first:
//
//	per-call layers     any number, in the order given (tracing, a request log)
//	retry               the engine: attempt loop and decision plane
//	capture             engine-owned: sensitive OnWire snapshots
//	progress            engine-owned: raw, observed and delivered counters
//	per-attempt layers  any number, in the order given (a request signer)
//	redirectguard       always: a 3xx is a failure that nothing follows
//	sender              always: exactly one POST per attempt
//
// New places each layer by its layer.Position, installs what the engine
// depends on and refuses, with a *CompositionError, a chain that would break
// a wire invariant; Default builds the documented recovery chain. A Chain is
// an http.RoundTripper, so it drops into any http.Client, including the
// ones openai-go, go-openai, the Ollama client and langchaingo accept.
package chain

import (
	"errors"
	"net/http"
	"strconv"
	"strings"

	"github.com/recourse-dev/recourse/codec"
	"github.com/recourse-dev/recourse/internal/stage/capture"
	"github.com/recourse-dev/recourse/internal/stage/progress"
	"github.com/recourse-dev/recourse/internal/stage/redirectguard"
	"github.com/recourse-dev/recourse/layer"
	"github.com/recourse-dev/recourse/layers/retry"
	"github.com/recourse-dev/recourse/layers/sender"
)

// CompositionError reports a chain that New refuses: a nil layer, a layer
// out of order, a stage given twice, a stage the engine needs given without
// an engine, or a layer of a foreign type claiming a position the chain
// owns. Its message names the layer, its index among New's arguments and
// what is wrong.
type CompositionError struct {
	// Index is the layer's index among the arguments of New.
	Index int
	// Name is the layer's name ("" for a nil layer).
	Name string
	// Position is the position the layer claims.
	Position layer.Position
	// Problem says what is wrong, in a sentence fragment.
	Problem string
}

// Error returns a message naming the layer and the rule it breaks.
func (e *CompositionError) Error() string {
	name := e.Name
	if name == "" {
		name = "(unnamed)"
	}
	return "chain: layer " + strconv.Itoa(e.Index) + " (" + name + ", " + e.Position.String() + ") " + e.Problem
}

// Chain is an assembled chain of layers. It is an http.RoundTripper, is
// immutable after New, and is safe for concurrent use.
type Chain struct {
	layers []layer.Layer
	rt     http.RoundTripper
	engine *retry.Layer
	// direct says that the engine is the chain's outermost layer and that
	// only its own stages and per-attempt layers that keep the request
	// run below it (retry.Layer.WrapDirect): nothing reads a recovered
	// call's request body but the engine, which keeps the bytes of a
	// *layer.RequestBody, so a native call's request needs no replay
	// function of its own (R2.8).
	direct bool
}

// New assembles layers into a Chain, each at its layer.Position: per-call
// layers (in the order given), at most one engine (a *retry.Layer),
// per-attempt layers (in the order given), and the chain's own stages. The
// arguments must be in position order. With an engine, New installs the
// capture and progress stages it depends on; it always installs a redirect
// guard, and a sender (over a private HTTP/1.1 transport) unless one is
// given (sender.New), so a Chain never follows a redirect and never sends
// an attempt twice. The capture, progress and redirect-guard stages are the
// module's own: no layer built outside it can take their positions. With an engine the sender also refuses a request
// that a per-attempt layer detached from its attempt (a new context) with
// layer.ErrDetachedRequest, sending nothing (sender.Layer.WrapInEngine). It
// refuses, with a *CompositionError:
//   - a nil layer, a layer out of position order, a stage or an engine
//     given twice;
//   - a layer of another type that claims the engine's position or a
//     stage's (only this module's engine and stages may take them);
//   - a per-attempt layer that reads semantic progress
//     (layer.ProgressReader, such as a stall layer with a first-output
//     limit) without an engine with a codec above it, which alone decodes
//     the body (R7.4).
//
// A chain with such a layer counts each attempt's progress for it also
// when recovery is off for a call (WithoutRecovery's engine, or
// retry.WithPolicy(ctx, nil)), so that its limit works the same way: the
// call then gets an attempt of its own for the layers below the engine,
// with no identity, events or captures.
//
// With an engine whose codec's capabilities are incomplete (R15.1), New
// returns the capabilities' error.
//
// It is one function of more than 80 lines because its checks and the stages
// it installs depend on one another in order (an engine decides the capture
// and progress stages, a progress reader needs an engine with a codec), each
// refusal naming its argument's index; split, the stages and the engine
// would travel between the pieces.
func New(layers ...layer.Layer) (*Chain, error) {
	var (
		calls, attempts []layer.Layer
		stages          [layer.StageSender + 1]layer.Layer
		engine          *retry.Layer
		last            layer.Position
	)
	for i, l := range layers {
		if l == nil {
			return nil, &CompositionError{Index: i, Problem: "is nil"}
		}
		p := l.Position()
		bad := func(problem string) error {
			return &CompositionError{Index: i, Name: l.Name(), Position: p, Problem: problem}
		}
		if p < layer.PerCall || p > layer.StageSender {
			return nil, bad("has an unknown position")
		}
		if p < last {
			return nil, bad("must come before the " + last.String() + " layers (order: " + orderText() + ")")
		}
		last = p
		switch p {
		case layer.PerCall:
			calls = append(calls, l)
			continue
		case layer.PerAttempt:
			attempts = append(attempts, l)
			continue
		}
		if !ownStage(p, l) {
			return nil, bad("claims a position only the chain's own " + p.String() + " may take")
		}
		if stages[p] != nil {
			return nil, bad("is given twice")
		}
		stages[p] = l
		if p == layer.Engine {
			engine = l.(*retry.Layer)
		}
	}
	if engine == nil {
		for _, p := range []layer.Position{layer.StageCapture, layer.StageProgress} {
			if l := stages[p]; l != nil {
				return nil, &CompositionError{Index: indexOf(layers, l), Name: l.Name(), Position: p,
					Problem: "needs the retry engine above it (without one it has nothing to do)"}
			}
		}
	} else {
		if c := engine.Codec(); c != nil {
			if err := c.Capabilities().Validate(); err != nil {
				return nil, errors.Join(errors.New("chain: the codec's capabilities are incomplete"), err)
			}
		}
		if stages[layer.StageCapture] == nil {
			stages[layer.StageCapture] = capture.New()
		}
		if stages[layer.StageProgress] == nil {
			stages[layer.StageProgress] = progress.New()
		}
	}
	reader, reads := progressReader(attempts)
	if reader != nil && (engine == nil || engine.Codec() == nil) {
		return nil, &CompositionError{Index: indexOf(layers, reader), Name: reader.Name(), Position: layer.PerAttempt,
			Problem: "has a " + reads + " limit, which needs the retry engine with a codec above it to see semantic output (R7.4)"}
	}
	if stages[layer.StageRedirectGuard] == nil {
		stages[layer.StageRedirectGuard] = redirectguard.New()
	}
	if stages[layer.StageSender] == nil {
		stages[layer.StageSender] = sender.New(nil)
	}
	out := append([]layer.Layer{}, calls...)
	for _, p := range []layer.Position{layer.Engine, layer.StageCapture, layer.StageProgress} {
		if stages[p] != nil {
			out = append(out, stages[p])
		}
	}
	firstAttempt := len(out) // the index of the first per-attempt layer, if any
	keep := keepRequest(attempts)
	out = append(out, attempts...)
	out = append(out, stages[layer.StageRedirectGuard], stages[layer.StageSender])
	rt := wrapAll(out, engine, reader != nil, keep, firstAttempt)
	return &Chain{layers: out, rt: rt, engine: engine, direct: engine != nil && keep && len(calls) == 0}, nil
}

// wrapAll wraps the layers of out around each other, the last innermost:
// the sender inside an engine refuses a detached request, an engine whose
// per-attempt layers read progress counts it also with recovery off
// (passive), an engine above layers that keep the request sends it
// without a replay function (direct), and otherwise the first per-attempt
// layer (at index firstAttempt) is given a copy of the request it may own.
func wrapAll(out []layer.Layer, engine *retry.Layer, passive, keep bool, firstAttempt int) http.RoundTripper {
	var rt http.RoundTripper
	for i := len(out) - 1; i >= 0; i-- {
		if s, ok := out[i].(*sender.Layer); ok && engine != nil {
			// Inside an engine every request reaching the sender carries
			// its attempt: one a per-attempt layer detached is refused.
			rt = s.WrapInEngine(rt)
			continue
		}
		if passive && out[i] == layer.Layer(engine) {
			// Recovery may be off for a call (R1.1): its progress is
			// counted all the same, for the layer that reads it (R7.4).
			rt = &passiveAttempt{next: rt, codec: engine.Codec()}
		}
		if out[i] == layer.Layer(engine) && keep {
			// Only the engine's own stages below it, and per-attempt layers
			// that keep the request: nothing but capture replays an
			// attempt's body, so the engine sends it without a replay
			// function unless a hook needs one (R2.8).
			rt = engine.WrapDirect(rt)
			continue
		}
		rt = out[i].Wrap(rt)
		if engine != nil && !keep && i == firstAttempt {
			rt = ownCopy{rt}
		}
	}
	return rt
}

// ownCopy hands the first per-attempt layer of a chain with an engine a
// shallow copy of each attempt's request with its own header and URL. The
// engine sends every attempt with the call's one header and URL (R2.3); a
// user's layer that changes them in place (req.Header.Add), against the
// layer.Layer contract, then changes only its own attempt's request, never
// a later attempt's or what capture snapshots. The engine's own stages
// never change a request, so a chain without per-attempt layers, or whose
// per-attempt layers all keep the request (layer.RequestKeeper), skips the
// copy.
type ownCopy struct{ next http.RoundTripper }

func (o ownCopy) RoundTrip(req *http.Request) (*http.Response, error) {
	r := req.WithContext(req.Context())
	r.Header = req.Header.Clone()
	if req.URL != nil {
		u := *req.URL // a Userinfo is immutable: sharing it is safe
		r.URL = &u
	}
	return o.next.RoundTrip(r)
}

// keepRequest reports whether every layer of ls (none included) keeps the
// request it is given (layer.RequestKeeper).
func keepRequest(ls []layer.Layer) bool {
	for _, l := range ls {
		if k, ok := l.(layer.RequestKeeper); !ok || !k.KeepsRequest() {
			return false
		}
	}
	return true
}

// ownStage reports whether l is this module's layer for the chain-owned
// position p.
func ownStage(p layer.Position, l layer.Layer) bool {
	switch p {
	case layer.Engine:
		_, ok := l.(*retry.Layer)
		return ok
	case layer.StageCapture:
		_, ok := l.(*capture.Layer)
		return ok
	case layer.StageProgress:
		_, ok := l.(*progress.Layer)
		return ok
	case layer.StageRedirectGuard:
		_, ok := l.(*redirectguard.Layer)
		return ok
	case layer.StageSender:
		_, ok := l.(*sender.Layer)
		return ok
	}
	return false
}

func indexOf(ls []layer.Layer, l layer.Layer) int {
	for i, x := range ls {
		if x == l {
			return i
		}
	}
	return -1
}

func orderText() string {
	var names []string
	for p := layer.PerCall; p <= layer.StageSender; p++ {
		names = append(names, p.String())
	}
	return strings.Join(names, ", ")
}

// RoundTrip sends req through the chain. The layers share the *layer.Call
// in req's context; a request without one gets one from the first layer
// that needs it (a per-call layer that observes, or the engine). A redirect
// that a layer produced is refused here too, so an http.Client above the
// chain never follows one (R2.2). See package retry for what a recovering
// chain returns on failure.
func (c *Chain) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := c.rt.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	return redirectguard.Refuse(resp)
}

// Layers returns the chain's layers, outermost first, including the stages
// New installed.
func (c *Chain) Layers() []layer.Layer { return append([]layer.Layer(nil), c.layers...) }

// Order returns the names of the chain's layers, outermost first, for
// display: "tracing > retry > capture > progress > redirectguard > sender".
func (c *Chain) Order() string {
	var names []string
	for _, l := range c.layers {
		names = append(names, l.Name())
	}
	return strings.Join(names, " > ")
}

// Policy returns a deep copy of the recovery policy of the chain's engine
// (retry.Policy.Clone), or nil when the chain does not recover: changing
// the copy — its slices or durations included — never changes the chain
// (R3.4).
func (c *Chain) Policy() *retry.Policy {
	if c.engine == nil {
		return nil
	}
	return c.engine.Policy()
}

// Recovers reports whether the chain recovers the calls whose context
// sets no policy of their own (retry.WithPolicy): it has an engine, and the
// engine has a policy (not WithoutRecovery).
func (c *Chain) Recovers() bool { return c.engine != nil && c.engine.Enabled() }

// Direct reports whether nothing but the engine reads the body of a request
// the chain recovers: the engine is the outermost layer and every layer
// below it keeps the request (layer.RequestKeeper). A caller that sends
// such a chain a *layer.RequestBody for a recovered call may leave its
// GetBody nil: the engine replays the bytes it keeps (R2.8). The native
// client does.
func (c *Chain) Direct() bool { return c.direct }

// Codec returns the codec of the chain's engine, or nil.
func (c *Chain) Codec() codec.Codec {
	if c.engine == nil {
		return nil
	}
	return c.engine.Codec()
}

// Gate returns the resend gate of the chain's per-call layers (a retry
// quota, package layers/quota) — the one closest to the engine, which is
// the one a call ends up with — or nil when none is one.
func (c *Chain) Gate() layer.ResendGate {
	var g layer.ResendGate
	for _, l := range c.layers {
		if l.Position() != layer.PerCall {
			break
		}
		if rg, ok := l.(layer.ResendGate); ok {
			g = rg
		}
	}
	return g
}

// Option configures Default.
type Option func(*config)

type config struct {
	policy   *retry.Policy
	noRetry  bool
	base     http.RoundTripper
	calls    []layer.Layer
	attempts []layer.Layer
}

// WithPolicy sets the recovery policy of the default chain; without it the
// chain recovers with the zero Policy (every default, one wire attempt).
// The chain keeps a deep copy of p: changing p's slices or durations after
// the chain is built changes nothing (R3.4).
func WithPolicy(p retry.Policy) Option { return func(c *config) { c.policy = &p } }

// WithoutRecovery makes the default chain a plain POST (R1.1): no retries,
// no events, no captures, redirects still refused.
func WithoutRecovery() Option { return func(c *config) { c.noRetry = true } }

// WithTransport sets the base transport the sender sends through; nil means
// the sender's private default: an HTTP/1.1 clone of http.DefaultTransport
// that keeps sender.DefaultMaxIdleConnsPerHost (64) idle connections per
// host (R2.7). Pass an *http.Transport of your own for other pool settings
// (MaxIdleConnsPerHost, MaxConnsPerHost, IdleConnTimeout, a proxy or TLS
// configuration). The base must not retry or follow redirects itself.
func WithTransport(rt http.RoundTripper) Option { return func(c *config) { c.base = rt } }

// WithPerCall adds per-call layers to the default chain, in order, outside
// the engine; the first is outermost. Each must have position
// layer.PerCall. A tracing layer (package otelbridge) is given here, first,
// so that its spans cover the whole call.
func WithPerCall(ls ...layer.Layer) Option {
	return func(c *config) { c.calls = append(c.calls, ls...) }
}

// WithPerAttempt adds per-attempt layers to the default chain, in order,
// inside the engine. Each must have position layer.PerAttempt. Each call of
// such a layer is one wire attempt, numbered and counted against
// MaxAttempts also when the layer answers it itself (R10.7); an error it
// returns is classified like a transport failure (R10.8), and a second
// call of its next for one attempt is refused with layer.ErrSecondSend
// (R2.6).
func WithPerAttempt(ls ...layer.Layer) Option {
	return func(c *config) { c.attempts = append(c.attempts, ls...) }
}

// Default returns the documented recovery chain for codec: the engine with
// the policy given by WithPolicy, then capture, progress, the redirect guard
// and the sender, with the layers of WithPerCall and WithPerAttempt in their
// positions.
//
// Without WithTransport the sender sends through its private HTTP/1.1
// transport, which keeps up to 64 idle connections per host
// (sender.DefaultMaxIdleConnsPerHost), so that up to 64 concurrent callers
// of one provider reuse their connections instead of dialing (R2.7); give
// WithTransport your own *http.Transport to change that.
//
// Without WithPolicy the chain recovers with the zero Policy, which makes
// exactly one wire attempt (R1.2): nothing is retried until MaxAttempts is
// set. Start from retry.Recommended() for a chain that retries. Default
// returns a *layer.PolicyError for an invalid policy and a
// *CompositionError for a layer in the wrong position.
func Default(cdc codec.Codec, opts ...Option) (*Chain, error) {
	if cdc == nil {
		return nil, errors.New("chain: Default needs a codec")
	}
	cfg := config{}
	for _, o := range opts {
		o(&cfg)
	}
	var pol *retry.Policy
	if !cfg.noRetry {
		pol = &retry.Policy{}
		if cfg.policy != nil {
			pol = cfg.policy
		}
	}
	engine, err := retry.New(cdc, pol)
	if err != nil {
		return nil, err
	}
	if err := onlyAt(layer.PerCall, "WithPerCall", cfg.calls); err != nil {
		return nil, err
	}
	if err := onlyAt(layer.PerAttempt, "WithPerAttempt", cfg.attempts); err != nil {
		return nil, err
	}
	layers := append([]layer.Layer{}, cfg.calls...)
	layers = append(layers, engine)
	layers = append(layers, cfg.attempts...)
	layers = append(layers, sender.New(cfg.base))
	return New(layers...)
}

// onlyAt refuses a layer given to option whose position is not p (Index is
// its index among that option's layers).
func onlyAt(p layer.Position, option string, ls []layer.Layer) error {
	for i, l := range ls {
		if l == nil {
			return &CompositionError{Index: i, Position: p, Problem: "given to " + option + " is nil"}
		}
		if l.Position() != p {
			return &CompositionError{Index: i, Name: l.Name(), Position: l.Position(), Problem: "was given to " + option + " but is not a " + p.String() + " layer"}
		}
	}
	return nil
}

// CloseIdleConnections closes the idle connections of every layer that
// holds some (the sender's transport), so that http.Client's method of the
// same name reaches them.
func (c *Chain) CloseIdleConnections() {
	for _, l := range c.layers {
		if ci, ok := l.(interface{ CloseIdleConnections() }); ok {
			ci.CloseIdleConnections()
		}
	}
}
