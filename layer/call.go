package layer

import (
	"context"
	"github.com/recourse-dev/recourse/event"
	"net/http"

	"github.com/recourse-dev/recourse/chat"
	"github.com/recourse-dev/recourse/codec"
)

// Call is the typed per-call value of one logical completion. It travels in
// the request context (WithCall, CallFrom) from the chain's edge through
// the per-call layers to the engine, and it has three parts:
//
//   - Inputs, set by whoever starts the call before the request enters the
//     chain (the native client, the broker) and read-only afterwards: Facts
//     and TypedErrors.
//   - Observers, added by per-call layers (tracing) with Observe before the
//     request reaches the engine; the engine calls them with every
//     lifecycle event after the policy's OnEvent.
//   - Result, filled in by the engine and read by the caller once RoundTrip
//     returned (for a stream, as the stream goes and once it ended).
//
// A drop-in call (an SDK's request) has no Call unless its caller placed
// one: a per-call layer that observes adds one, and the engine keeps its
// own when nobody will read the result. A Call belongs to one
// logical completion and is used from the goroutine that runs it (or reads
// its stream); it is not safe for concurrent use.
type Call struct {
	// Facts are the request facts the caller already knows; the engine then
	// does not read them from the encoded body. Nil (drop-in calls) means
	// the engine asks the codec to describe the body.
	Facts *codec.RequestInfo
	// Gate is the call's resend gate (a retry quota and shared cooldown),
	// set by a per-call layer (package layers/quota) before the request
	// reaches the engine; nil means none. The engine binds it to the call's
	// upstream and its decision plane consults it on every resend.
	Gate ResendGate
	// TypedErrors asks the engine for the *RecoveryError in every case: a
	// final HTTP failure response (a 400, an exhausted 503) is then not
	// passed through as a response, and Result.Err holds the error too.
	// The native client sets it; drop-in callers leave it false so that an
	// SDK sees the final response it would see without recourse and builds
	// its own error, while Result.Err holds the typed one.
	TypedErrors bool
	// SkipOpenCircuit asks the engine not to send the call's first attempt
	// when its bound Gate's shared cooldown horizon lies beyond the delay
	// ceiling (that upstream's circuit is open): the call then ends at once
	// with outcome delay_ceiling, nothing sent (R20.5). A fallback sets it
	// for every target but the last; false (the default) sends the first
	// attempt at once, as R18.4 says.
	SkipOpenCircuit bool
	// OutcomeOnly tells the engine that whoever reads Result reads only the
	// call's outcome (LogicalID, WireAttempts, Err), never Response or
	// Completion: while the Call has no observers, an ordinary call's 2xx
	// body is then judged with the codec's Checker, as for a call without a
	// *Call, and Response and Completion stay empty. The per-call layer
	// that created the Call for itself sets it (the fallback layer of a
	// drop-in call, R20.11); false (the default) fills both. An observer
	// added with Observe turns it off, since events carry the evidence.
	OutcomeOnly bool
	// LeaveOnStall asks the engine to end the call at once, with outcome
	// interrupted and no resend, when an attempt fails on one of these
	// stall limits before any output (event.Failure.Stall), instead of spending
	// the remaining attempts on a route that stalls: the fallback layer
	// sets it for every target but the last, so that the next target takes
	// the call (R20.12). The zero value (the default) retries a stall like
	// any transport failure.
	LeaveOnStall StallSet
	// Finish, when set, is called by the engine with the call's typed
	// error once recovery ends without success, before the error is
	// reported in Result.Err or handed to the caller (a returned error, a
	// stream's read error or its in-band error frame), so that a per-call
	// layer can complete it with what only that layer knows: the fallback
	// layer adds the targets the call already left (R20.7) when the stream
	// of a later target opened and then failed. It runs on the goroutine
	// that ends the call (for a stream, the reader's) and must not block.
	// Nil means none.
	Finish func(*RecoveryError)

	// Result is what the engine reports about the call.
	Result CallResult

	observers []func(event.Event)
}

// CallResult is what the engine reports about one logical completion.
type CallResult struct {
	// LogicalID is the call's logical request ID (R10.1).
	LogicalID string
	// WireAttempts is the number of wire attempts sent so far.
	WireAttempts int
	// Err is the call's typed error, when recovery ended without success.
	Err *RecoveryError
	// Stream is the typed frame reader of a recovering streaming call.
	Stream FrameReader
	// Response is the evidence of the successful attempt (finish reason,
	// model, usage), when the engine decoded it; sensitive.
	Response event.ResponseEvidence
	// Completion is the decoded completion of the successful attempt of an
	// ordinary or structured call: what the codec's Decode returns for the
	// body of the returned response, so that the caller need not decode it
	// again. It is nil otherwise (no success, a stream, no codec, recovery
	// disabled).
	Completion *chat.Completion
}

// Observe adds f to the observers of the call's lifecycle events. Per-call
// layers call it before passing the request on; f is called synchronously,
// in order, after the policy's OnEvent, and must not block.
func (c *Call) Observe(f func(event.Event)) { c.observers = append(c.observers, f) }

// Observers returns the functions added with Observe, in order.
func (c *Call) Observers() []func(event.Event) { return c.observers }

// Emit delivers ev as the engine delivers its events (R11.4): first to
// onEvent (a policy's OnEvent; nil for none), then to the observers of c in
// order. An error of onEvent is returned as an *ObserverError for ev, and
// the observers are then not called. A nil c has no observers. Emit runs
// the functions synchronously on the caller's goroutine.
func (c *Call) Emit(onEvent func(event.Event) error, ev event.Event) error {
	if onEvent != nil {
		if err := onEvent(ev); err != nil {
			return &ObserverError{Event: ev.Type, Err: err}
		}
	}
	if c != nil {
		for _, o := range c.observers {
			o(ev)
		}
	}
	return nil
}

type callKey struct{}

// WithCall returns a context that carries c.
func WithCall(ctx context.Context, c *Call) context.Context {
	return context.WithValue(ctx, callKey{}, c)
}

// CallFrom returns the Call in ctx, or nil when there is none (a layer used
// outside a chain).
func CallFrom(ctx context.Context) *Call {
	c, _ := ctx.Value(callKey{}).(*Call)
	return c
}

// CallOf returns the *Call of req's logical completion and the request
// that carries it: req itself when its context has a Call, otherwise a
// shallow copy of req whose context carries a new one (req is never
// modified). Per-call layers that observe or read the result call it, so
// that the layers below them share the one value.
func CallOf(req *http.Request) (*http.Request, *Call) {
	if c := CallFrom(req.Context()); c != nil {
		return req, c
	}
	c := &Call{}
	return req.WithContext(WithCall(req.Context(), c)), c
}

// FrameReader is the typed view of a recovering stream that the retry layer
// hands to the native client through CallResult.Stream. NextFrame returns every
// frame in order (keepalives included), the accepted terminal frame, then
// io.EOF — or the call's final typed error. Deliver records what the
// consumer handed on (R13.2). Close releases the stream.
type FrameReader interface {
	NextFrame() (codec.Frame, error)
	Deliver(c codec.Counts)
	Close() error
}
