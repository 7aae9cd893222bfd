// Package retry is the recovery engine of a recourse chain: the attempt
// loop, classification (R4), Retry-After (R5), backoff (R6), budget and
// deadline (R7), outcomes (R10) and lifecycle events (R11).
//
// The retry layer is the outermost recovery layer. For each logical
// completion it reads and keeps the request body and headers once (R2.3),
// validates the policy and pre-samples a custom jitter (R3), then runs
// attempts through the wire-plane layers below it (capture, progress,
// redirect guard, sender), each with a fresh attempt ID under one logical
// request ID. Between attempts it asks the admission gate (R8), computes the
// delay, announces it and sleeps, all under the caller's context (R9).
//
// As an http.RoundTripper it returns:
//   - the response, with its body fully read and replayable, on success;
//   - the final response, unchanged for SDK error handling, when the final
//     failure is a complete response that was not eligible for a retry (for
//     example a 400, a 404, or a provider error object in a 200);
//   - otherwise (exhausted, deadline, delay ceiling, admission outcomes,
//     cancellation, partial bodies, capture failures, refused redirects) a
//     *layer.RecoveryError, which http.Client wraps in a *url.Error and
//     errors.As finds.
//
// A caller that wants the typed error in every case (the native client)
// places a *layer.Report with TypedErrors set in the request context.
package retry

import (
	"context"
	"net/http"

	"github.com/recourse-dev/recourse/layer"
	"github.com/recourse-dev/recourse/layers/admission"
)

// Layer is the retry layer. It is immutable after New and safe for
// concurrent use.
type Layer struct {
	codec   layer.Codec
	policy  *Policy
	gate    admission.Hook
	hasGate bool
}

// New returns a retry layer for calls encoded by codec. A nil policy
// disables recovery: the layer then passes every request through unchanged,
// with no events and no captures (R1.1). New returns a *layer.PolicyError if
// the policy is invalid.
func New(codec layer.Codec, policy *Policy) (*Layer, error) {
	l := &Layer{codec: codec}
	if policy != nil {
		if err := policy.Validate(); err != nil {
			return nil, err
		}
		p := *policy
		l.policy = &p
	}
	return l, nil
}

// Kind returns layer.KindRetry.
func (*Layer) Kind() layer.Kind { return layer.KindRetry }

// Codec returns the codec the layer was built with.
func (l *Layer) Codec() layer.Codec { return l.codec }

// WithGate returns a copy of l whose admission hook is hook, overriding the
// policy's Admit. The chain builder calls it for an admission layer.
func (l *Layer) WithGate(hook admission.Hook) *Layer {
	c := *l
	c.gate, c.hasGate = hook, true
	return &c
}

// Wrap returns the recovering RoundTripper around next (the wire plane).
func (l *Layer) Wrap(next http.RoundTripper) http.RoundTripper {
	return &transport{l: l, next: next}
}

type policyKey struct{}

// WithPolicy returns a context whose calls use p instead of the layer's
// policy; a nil p disables recovery for those calls. The broker and session
// use it to apply one policy per call.
func WithPolicy(ctx context.Context, p *Policy) context.Context {
	if p != nil {
		c := *p
		p = &c
	}
	return context.WithValue(ctx, policyKey{}, &p)
}

// PolicyFrom returns the per-call policy placed in ctx by WithPolicy, and
// whether there was one (a nil policy with ok=true means recovery is off).
func PolicyFrom(ctx context.Context) (*Policy, bool) { return policyFrom(ctx) }

// Policy returns a copy of the layer's policy with an admission layer's hook
// applied, or nil when recovery is disabled. The broker uses it to give a
// continuation the same admission and backoff as a retry.
func (l *Layer) Policy() *Policy {
	if l.policy == nil {
		return nil
	}
	p := *l.policy
	if l.hasGate {
		p.Admit = l.gate
	}
	return &p
}

// Enabled reports whether the layer recovers by default (it has a policy).
func (l *Layer) Enabled() bool { return l.policy != nil }

func policyFrom(ctx context.Context) (*Policy, bool) {
	p, ok := ctx.Value(policyKey{}).(**Policy)
	if !ok {
		return nil, false
	}
	return *p, true
}
