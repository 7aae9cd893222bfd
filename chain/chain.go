// Package chain assembles recourse layers into one http.RoundTripper and
// provides the native typed client.
//
// A chain is an onion, outermost first:
//
//	tracing        (otelbridge) logical span, one child span per wire attempt
//	retry          the attempt loop, classification, budget, deadline, backoff
//	admission      decision plane: asks the application before a resend
//	capture        sensitive OnWire snapshots
//	progress       raw, observed and delivered counters
//	redirectguard  a 3xx is a failure that nothing follows
//	sender         exactly one POST per attempt
//
// New checks the order and fills in what every chain needs (a redirect
// guard on a sender); Default builds the documented recovery chain. A Chain
// is an http.RoundTripper, so it drops into any http.Client, including the
// ones openai-go, the Ollama client and langchaingo accept.
package chain

import (
	"errors"
	"net/http"
	"strings"

	"github.com/recourse-dev/recourse/layer"
	"github.com/recourse-dev/recourse/layers/admission"
	"github.com/recourse-dev/recourse/layers/capture"
	"github.com/recourse-dev/recourse/layers/progress"
	"github.com/recourse-dev/recourse/layers/redirectguard"
	"github.com/recourse-dev/recourse/layers/retry"
	"github.com/recourse-dev/recourse/layers/sender"
)

// OrderError reports a chain whose layers are out of order, repeated or
// missing a layer they need. Its message says which and why.
type OrderError struct {
	Layer  layer.Kind
	Reason string
}

// Error returns a message naming the layer and the rule it breaks.
func (e *OrderError) Error() string {
	return "chain: " + e.Layer.String() + " layer " + e.Reason
}

// Chain is an assembled chain of layers. It is an http.RoundTripper, is
// immutable after New, and is safe for concurrent use.
type Chain struct {
	layers []layer.Layer
	rt     http.RoundTripper
	retry  *retry.Layer
}

// New assembles layers, given outermost first, into a Chain. Layers must
// appear in the order of layer.Kind, each kind at most once. An admission
// layer needs a retry layer above it. When the chain has no sender, New adds
// one over a private HTTP/1.1 transport; when it has no redirect guard, New
// adds one on the sender, so a Chain never hands a redirect to an
// http.Client. When the chain has a retry layer, its codec's capabilities
// must be complete (R15.1).
func New(layers ...layer.Layer) (*Chain, error) {
	var out []layer.Layer
	var last layer.Kind
	var rl *retry.Layer
	var gate *admission.Layer
	for i, l := range layers {
		if l == nil {
			return nil, errors.New("chain: layer " + itoa(i) + " is nil")
		}
		k := l.Kind()
		if k < layer.KindTracing || k > layer.KindSender {
			return nil, errors.New("chain: layer " + itoa(i) + " has an unknown kind")
		}
		if k == last {
			return nil, &OrderError{Layer: k, Reason: "appears twice"}
		}
		if k < last {
			return nil, &OrderError{Layer: k, Reason: "must come before the " + last.String() + " layer (order: " + orderText() + ")"}
		}
		last = k
		switch v := l.(type) {
		case *retry.Layer:
			rl = v
		case *admission.Layer:
			gate = v
		}
		out = append(out, l)
	}
	if gate != nil {
		if rl == nil {
			return nil, &OrderError{Layer: layer.KindAdmission, Reason: "needs a retry layer above it"}
		}
		if gate.Hook() != nil {
			rl = rl.WithGate(gate.Hook())
			for i, l := range out {
				if l.Kind() == layer.KindRetry {
					out[i] = rl
				}
			}
		}
	}
	if rl != nil && rl.Codec() != nil {
		if err := rl.Codec().Capabilities().Validate(); err != nil {
			return nil, errors.Join(errors.New("chain: the codec's capabilities are incomplete"), err)
		}
	}
	if last < layer.KindSender {
		if last < layer.KindRedirectGuard {
			out = append(out, redirectguard.New())
		}
		out = append(out, sender.New(nil))
	} else if len(out) < 2 || out[len(out)-2].Kind() != layer.KindRedirectGuard {
		s := out[len(out)-1]
		out = append(out[:len(out)-1], redirectguard.New(), s)
	}
	var rt http.RoundTripper
	for i := len(out) - 1; i >= 0; i-- {
		rt = out[i].Wrap(rt)
	}
	return &Chain{layers: out, rt: rt, retry: rl}, nil
}

func orderText() string {
	var names []string
	for k := layer.KindTracing; k <= layer.KindSender; k++ {
		names = append(names, k.String())
	}
	return strings.Join(names, ", ")
}

func itoa(i int) string {
	if i < 10 {
		return string(rune('0' + i))
	}
	return itoa(i/10) + string(rune('0'+i%10))
}

// RoundTrip sends req through the chain. See package retry for what a
// recovering chain returns on failure.
func (c *Chain) RoundTrip(req *http.Request) (*http.Response, error) { return c.rt.RoundTrip(req) }

// Layers returns the chain's layers, outermost first.
func (c *Chain) Layers() []layer.Layer { return append([]layer.Layer(nil), c.layers...) }

// Order returns the kinds of the chain's layers, outermost first, for
// display: "retry > admission > capture > …".
func (c *Chain) Order() string {
	var names []string
	for _, l := range c.layers {
		names = append(names, l.Kind().String())
	}
	return strings.Join(names, " > ")
}

// Policy returns a copy of the recovery policy of the chain's retry layer
// (with an admission layer's hook applied), or nil when the chain does not
// recover.
func (c *Chain) Policy() *retry.Policy {
	if c.retry == nil {
		return nil
	}
	return c.retry.Policy()
}

// Codec returns the codec of the chain's retry layer, or nil.
func (c *Chain) Codec() layer.Codec {
	if c.retry == nil {
		return nil
	}
	return c.retry.Codec()
}

// Option configures Default.
type Option func(*config)

type config struct {
	policy  *retry.Policy
	noRetry bool
	base    http.RoundTripper
	outer   []layer.Layer
}

// WithPolicy sets the recovery policy of the default chain; without it the
// chain recovers with the zero Policy (every default, one wire attempt).
func WithPolicy(p retry.Policy) Option { return func(c *config) { c.policy = &p } }

// WithoutRecovery makes the default chain a plain POST (R1.1): no retries,
// no events, no captures, redirects still refused.
func WithoutRecovery() Option { return func(c *config) { c.noRetry = true } }

// WithTransport sets the base transport the sender sends through; nil means
// a private HTTP/1.1 clone of http.DefaultTransport. The base must not retry
// or follow redirects itself.
func WithTransport(rt http.RoundTripper) Option { return func(c *config) { c.base = rt } }

// WithTracing puts a tracing layer (see package otelbridge) outermost.
func WithTracing(l layer.Layer) Option { return func(c *config) { c.outer = append(c.outer, l) } }

// Default returns the documented recovery chain for codec: retry,
// admission, capture, progress, redirect guard and sender, with the policy
// given by WithPolicy (the zero Policy otherwise). It returns a
// *layer.PolicyError for an invalid policy.
func Default(codec layer.Codec, opts ...Option) (*Chain, error) {
	if codec == nil {
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
	rl, err := retry.New(codec, pol)
	if err != nil {
		return nil, err
	}
	layers := append([]layer.Layer{}, cfg.outer...)
	layers = append(layers, rl, admission.New(nil), capture.New(), progress.New(), redirectguard.New(), sender.New(cfg.base))
	return New(layers...)
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
