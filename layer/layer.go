package layer

import (
	"net/http"
	"strconv"
)

// Position says where in a chain a layer runs. A chain runs its layers in
// the order of their positions, outermost first; layers of the same open
// position (PerCall, PerAttempt) run in the order they were given.
//
//	caller
//	  PerCall layers      any number: each sees one logical completion
//	  Engine              the recovery engine (package layers/retry), at most one
//	  StageCapture        engine-owned: sensitive OnWire snapshots
//	  StageProgress       engine-owned: raw, observed and delivered counters
//	  PerAttempt layers   any number: each sees every wire attempt
//	  StageRedirectGuard  always present: a 3xx is a failure nothing follows
//	  StageSender         always present: exactly one POST per attempt
//	provider
//
// PerCall and PerAttempt are the open positions for a user's own layers.
// The Stage positions belong to the chain: it installs those stages itself
// and refuses a layer of another type that claims one of them.
type Position int

// The positions of a chain, outermost first.
const (
	// PerCall layers run outside the engine, once per logical completion:
	// tracing, a request log, a cache, a quota.
	PerCall Position = iota + 1
	// Engine is the recovery engine's position (package layers/retry).
	Engine
	// StageCapture is the capture stage, which package chain installs
	// under an engine; no other layer may take it.
	StageCapture
	// StageProgress is the progress stage, which package chain installs
	// under an engine; no other layer may take it.
	StageProgress
	// PerAttempt layers run inside the engine, once per wire attempt, below
	// capture and progress: a request signer, a stall limit, a fault
	// injector. What they return is counted and captured like a provider's
	// answer; the redirect guard and the sender are below them.
	PerAttempt
	// StageRedirectGuard is the redirect guard, which package chain
	// installs in every chain; no other layer may take it.
	StageRedirectGuard
	// StageSender is the sender (package layers/sender).
	StageSender
)

// String returns the position's name as used in chain errors: "per-call",
// "engine", "capture", "progress", "per-attempt", "redirect guard", "sender".
func (p Position) String() string {
	switch p {
	case PerCall:
		return "per-call"
	case Engine:
		return "engine"
	case StageCapture:
		return "capture"
	case StageProgress:
		return "progress"
	case PerAttempt:
		return "per-attempt"
	case StageRedirectGuard:
		return "redirect guard"
	case StageSender:
		return "sender"
	}
	return "position(" + strconv.Itoa(int(p)) + ")"
}

// Layer is one layer of a chain. Wrap returns a RoundTripper that keeps the
// standard library's contract: it does not modify the caller's request (it
// clones before changing one), returns either a response or an error, closes
// bodies it consumes, and is safe for concurrent use. A PerAttempt layer
// calls next at most once per RoundTrip: an attempt is at most one POST (a
// second call is refused by the sender). It passes its request's context on
// to next: a request it changes is a clone made with req.Clone(req.Context())
// or req.WithContext(req.Context()), never one built with http.NewRequest or
// req.Clone(context.Background()). The context carries the engine's attempt,
// and inside an engine the sender refuses a request without it
// (ErrDetachedRequest), sending nothing.
//
// A user's layer needs nothing but this package: NewPerCall and
// NewPerAttempt adapt a function.
type Layer interface {
	// Name names the layer in Chain.Order and in chain errors.
	Name() string
	// Position says where the layer runs.
	Position() Position
	// Wrap returns the layer's RoundTripper around next.
	Wrap(next http.RoundTripper) http.RoundTripper
}

// ProgressReader is implemented by a PerAttempt layer that reads its
// attempt's semantic progress (Attempt.Progress): the stall layer's
// first-output limit does. ReadsProgress names the setting that reads it
// ("FirstOutput"), or returns "" when the layer's configuration reads
// none. A chain counts that progress for such a layer also when recovery
// is off (R7.4), and refuses it, with a *chain.CompositionError naming
// the setting, when nothing above it could decode the body: no retry
// engine, or one without a codec.
type ProgressReader interface {
	ReadsProgress() string
}

// RequestKeeper is implemented by a PerAttempt layer that never changes the
// request it is given (its header, URL, body or GetBody) and never reads
// its body: it passes on that request, or a shallow copy of it with another
// context (Request.WithContext), or answers itself. KeepsRequest reports
// whether the layer, as configured, does so; the stall layer's does. In a
// chain whose per-attempt layers all keep the request, they get the
// engine's attempt request with the call's one header and URL, uncopied
// (R2.3), and the attempt carries no replay function (R2.8). A layer that
// claims it and changes the request anyway changes the call's later
// attempts too.
type RequestKeeper interface {
	KeepsRequest() bool
}

// Func wraps a RoundTripper: the shape of a layer written as a function.
type Func func(next http.RoundTripper) http.RoundTripper

// NewPerCall returns a layer named name that runs wrap once per logical
// completion, outside the recovery engine. A nil wrap passes every request
// through unchanged. The layer is safe for concurrent use when wrap's
// RoundTrippers are.
func NewPerCall(name string, wrap Func) Layer { return funcLayer{name, PerCall, wrap} }

// NewPerAttempt returns a layer named name that runs wrap once per wire
// attempt, inside the recovery engine (below capture and progress, above the
// redirect guard and the sender). A nil wrap passes every request through
// unchanged. wrap's RoundTrippers must pass the request's context on to
// next (clone with req.Clone(req.Context()), never http.NewRequest or
// req.Clone(context.Background())): it carries the attempt, and the sender
// of a chain with an engine refuses a request without one with
// ErrDetachedRequest. The layer is safe for concurrent use when wrap's
// RoundTrippers are.
func NewPerAttempt(name string, wrap Func) Layer { return funcLayer{name, PerAttempt, wrap} }

type funcLayer struct {
	name string
	pos  Position
	wrap Func
}

func (l funcLayer) Name() string       { return l.name }
func (l funcLayer) Position() Position { return l.pos }
func (l funcLayer) Wrap(next http.RoundTripper) http.RoundTripper {
	if l.wrap == nil {
		return next
	}
	return l.wrap(next)
}

// RoundTripperFunc is an http.RoundTripper written as a function, for the
// RoundTrippers a Func returns.
type RoundTripperFunc func(*http.Request) (*http.Response, error)

// RoundTrip calls f(req).
func (f RoundTripperFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }
