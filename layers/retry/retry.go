// Package retry is the recovery engine of a recourse chain: the attempt
// loop and the decision plane — classification (R4), Retry-After (R5),
// backoff (R6), budget and deadline (R7), admission (R8) — with outcomes
// (R10) and lifecycle events (R11).
//
// The engine takes the Engine position of a chain (layer.Engine). For each
// logical completion it reads and keeps the request body and headers once
// (R2.3), validates the policy and pre-samples a custom jitter (R3), then
// runs attempts through the stages below it — capture, progress, the
// chain's per-attempt layers, the redirect guard and the sender — each
// with a fresh attempt ID under one logical request ID. Between attempts
// its Decider asks the admission hook, computes the delay, announces it and
// sleeps, all under the caller's context (R9). The chain installs the
// stages the engine depends on; package chain refuses a chain that lacks
// or misplaces one.
//
// As an http.RoundTripper the engine returns:
//   - the response, with its body fully read and replayable, on success;
//   - the final response, for SDK error handling, when the call ended on a
//     complete non-2xx HTTP failure that is not a redirect, whatever the
//     outcome (interrupted — a 400, a 404 —, exhausted, deadline, delay
//     ceiling, admission outcomes) except cancelled: status, headers and
//     body as the provider sent them, plus X-Should-Retry: false (OpenAI's
//     SDKs then never retry on top of recourse) and X-Recourse-Outcome:
//     <outcome>. The SDK builds its own error (status, provider code and
//     message); the typed *layer.RecoveryError, outcome and history, is in
//     the Result of a *layer.Call the caller placed in the request context;
//   - otherwise (a 2xx the engine judged a failure — a provider error
//     object, a malformed body, structured content that is not JSON —,
//     cancellation, a failure with no complete response, capture failures,
//     refused redirects) a *layer.RecoveryError, which http.Client wraps in
//     a *url.Error and errors.As finds. A 2xx failure never reaches a
//     drop-in caller as a response: an SDK would read it as a success.
//
// A recovering stream body returns whole frames; when it ends with a
// *layer.RecoveryError it first hands over an in-band error frame — the
// provider's own, or the codec's (codec.ErrorFramer) carrying only the
// error's safe text — so a client that reads only frames still fails.
//
// A codec that is a codec.Resumer (the Responses API codec) adds
// background responses (R19.9–R19.13): once a background stream's ID is
// known, a cut, a stall or a transport failure is answered with a resume
// read after the last delivered event — a GET the codec builds, counted as
// a wire attempt under the same backoff, budget and deadline, asking no
// admission — instead of a resend; events from then on carry the cursor
// (event.Event.Resume). A failure before the ID that shows no status
// answer is ambiguous and needs admission. When the caller cancels, the
// engine sends the codec's cancel request on its own goroutine, bounded
// by CancelTimeout. A drop-in client's own reads of a stored response are
// recovered as reads; its other requests to the provider (a cancel, a
// delete) pass through once. The Gemini codec, a codec.Resumer too,
// continues a foreground stream cut right after a checkpoint it handed
// over with the same request and the checkpoint's token, the same way
// (R23.9).
//
// A caller that wants the typed error in every case (the native client)
// sets TypedErrors in the call's *layer.Call; the engine reports the call's
// identity, error, stream and decoded completion in its Result.
package retry

import (
	"context"
	"net/http"

	"github.com/recourse-dev/recourse/codec"
	"github.com/recourse-dev/recourse/layer"
)

// Layer is the recovery engine. It is immutable after New and safe for
// concurrent use.
type Layer struct {
	codec  codec.Codec
	facts  codec.Facts
	policy *Policy
}

// New returns the engine for calls encoded by codec. A nil policy
// disables recovery: the layer then passes every request through unchanged
// (a shallow copy whose context carries attempt.WithPassThrough's mark, so
// that the sender sends it without an attempt), with no events and no
// captures (R1.1). New returns a *layer.PolicyError if
// the policy is invalid.
func New(cdc codec.Codec, policy *Policy) (*Layer, error) {
	l := &Layer{codec: cdc}
	if cdc != nil {
		l.facts = cdc.Facts()
	}
	if policy != nil {
		// A deep copy, validated: the caller's slices and durations stay
		// the caller's, and the engine's policy never changes (R3.4).
		p := policy.Clone()
		if err := p.Validate(); err != nil {
			return nil, err
		}
		l.policy = p
	}
	return l, nil
}

// Name returns "retry".
func (*Layer) Name() string { return "retry" }

// Position returns layer.Engine.
func (*Layer) Position() layer.Position { return layer.Engine }

// Codec returns the codec the layer was built with.
func (l *Layer) Codec() codec.Codec { return l.codec }

// Wrap returns the recovering RoundTripper around next: the stages below the
// engine, which run once per attempt.
func (l *Layer) Wrap(next http.RoundTripper) http.RoundTripper {
	return &transport{l: l, next: next}
}

// WrapDirect is Wrap for a stack below the engine made of this module's
// own stages (capture, progress, the redirect guard and the sender) and
// per-attempt layers that keep the request (layer.RequestKeeper) or none:
// package chain uses it for such a chain, which only it can see. Nothing
// in that stack reads an attempt's body a second time but capture for an
// OnWire hook, so an attempt's request
// carries a replay function (GetBody) only for a call whose policy has
// one, and the sender, with nothing to drop, sends the request itself
// (R2.8). Under any other next, use Wrap: a per-attempt layer may read
// GetBody. The RoundTripper is safe for concurrent use.
func (l *Layer) WrapDirect(next http.RoundTripper) http.RoundTripper {
	return &transport{l: l, next: next, direct: true}
}

type policyKey struct{}

// WithPolicy returns a context whose calls use p instead of the engine's
// policy; a nil p disables recovery for those calls. It is the engine's own
// per-call override (the Policy type lives here, so the value does too);
// the broker and session use it to apply one policy per call. The context
// keeps a deep copy of p (Clone), made once here: changing p afterwards
// changes none of its calls (R3.4).
func WithPolicy(ctx context.Context, p *Policy) context.Context {
	p = p.Clone()
	return context.WithValue(ctx, policyKey{}, &p)
}

// PolicyFrom returns the per-call policy placed in ctx by WithPolicy, and
// whether there was one (a nil policy with ok=true means recovery is off).
// The policy is the context's own copy, shared by every call made with ctx:
// it must not be modified (Clone it to derive another).
func PolicyFrom(ctx context.Context) (*Policy, bool) { return policyFrom(ctx) }

// Policy returns a deep copy of the engine's policy (Clone), or nil when
// recovery is disabled: changing the copy never changes the engine
// (R3.4). The broker uses it to give a continuation the same admission and
// backoff as a retry.
func (l *Layer) Policy() *Policy { return l.policy.Clone() }

// Enabled reports whether the engine recovers by default (it has a policy).
func (l *Layer) Enabled() bool { return l.policy != nil }

func policyFrom(ctx context.Context) (*Policy, bool) {
	p, ok := ctx.Value(policyKey{}).(**Policy)
	if !ok {
		return nil, false
	}
	return *p, true
}
