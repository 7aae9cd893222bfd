// Package fallback is an opt-in per-call layer that, when recovery on one
// target ends in a way that proves no output reached the caller and more
// tries there are pointless, runs the call again on the next of an ordered
// list of targets: another model of the same codec, another upstream of
// the same wire (Azure OpenAI, OpenRouter, vLLM, oMLX behind the OpenAI
// codec), each with its own policy, quota and credential (R20).
//
// The layer sits above the engine (layer.PerCall) and runs the chain below
// it once per target; every target's run is an ordinary logical
// completion under every rule of the contract. It falls back after the
// outcomes exhausted, quota_exhausted and delay_ceiling, and after an
// interruption on an HTTP status or a provider error code the caller names
// (Rules.Statuses, Rules.Codes), never on a code of Rules.NeverCodes, and
// at once on a stall limit of Rules.Stalls (R20.12); never after semantic
// output, never after cancelled or deadline (R20.2, R20.3).
// Before a fallback from an ambiguous failure of a local provider it asks
// the admission hook (R20.4). A target whose shared cooldown lies beyond
// the delay ceiling is skipped without a request (R20.5).
//
// A stream whose 200 was handed over and that fails before any output goes
// on to the next target in the same body (R20.14). A drop-in caller gets
// the response of the target that answered, in its own wire format; a target of another wire is refused by New with a
// *CrossWireError (the native client takes those: client.WithFallback).
// Each step is visible (R20.6): target_started and fallback lifecycle
// events, a span per target (package otelbridge), a broker notice, and a
// final *layer.RecoveryError that keeps every target's history (R20.7).
package fallback

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/recourse-dev/recourse/codec"
	"github.com/recourse-dev/recourse/event"
	"github.com/recourse-dev/recourse/layer"
)

// Target is one fallback target of a drop-in call: the request as the
// caller sent it, changed by the fields that are set. The zero Target
// resends the same request to the same upstream; give at least one of
// Model, Upstream, Credential, Gate or Context.
type Target struct {
	// Name names the target in events, notices, spans and errors; empty
	// means Model, else Upstream's host. It must be safe to log: never a
	// credential.
	Name string
	// Model replaces the request's model ("" keeps it), through the
	// codec's codec.ModelRewriter.
	Model string
	// Upstream is another root of the same wire, an absolute http or https
	// URL with an optional path prefix and no query, fragment or user
	// information ("https://openrouter.ai/api"): the request's path and
	// query are kept after it. Empty keeps the request's upstream. A
	// target with another upstream never receives the request's
	// credential headers (Authorization, Api-Key, X-Api-Key, Cookie), nor
	// a key in the query (key, api-key, api_key, access_token; every
	// other parameter is kept): only those its Credential sets.
	Upstream string
	// Credential, when set, sets the target's credential headers on h
	// (for example h.Set("Authorization", "Bearer "+key)) once per run of
	// the target. The credential is never logged or kept in an event, a
	// span or an error; an error it returns ends the call with a
	// *CredentialError, which keeps neither the credential nor the
	// error's text.
	Credential func(ctx context.Context, h http.Header) error
	// Gate is the target's own resend gate (a retry quota, package
	// layers/quota); nil keeps the call's. A quota layer below this layer
	// replaces it: put per-target quotas here and no quota layer below.
	Gate layer.ResendGate
	// Context, when set, derives the context of the target's run: a
	// per-target recovery policy is retry.WithPolicy(ctx, &policy).
	Context func(ctx context.Context) context.Context
	// Facts, when set, are the target's provider facts where they differ
	// from the codec's: an oMLX server behind the OpenAI codec runs local
	// inference (R20.4).
	Facts *codec.Facts
	// Codec, when set, is the target's codec: one of another wire (another
	// provider or path) is refused with a *CrossWireError.
	Codec codec.Codec
	// Stalls, when not nil, are the stall limits after which this target is
	// left at once for the next one, in place of Rules.Stalls (R20.16): a
	// slow reasoning model can be given time to think (an empty, non-nil
	// list: never left on a stall) while the targets before it are left on
	// a first-output stall. Nil keeps Rules.Stalls. The last target, with
	// nowhere to go, retries a stall whatever its Stalls say.
	Stalls []event.StallLimit
}

// Config configures a fallback layer.
type Config struct {
	// Codec is the codec of the chain below (its engine's); required. Its
	// codec.ModelRewriter swaps a target's model.
	Codec codec.Codec
	// Targets are tried in order after the request as given fails.
	Targets []Target
	// Primary names the first target (the request as given); empty means
	// the request's model.
	Primary string
	// Rules decide which outcomes fall back (the zero value: exhausted,
	// quota_exhausted, delay_ceiling) and hold the admission hook of R20.4.
	Rules Rules
	// OnEvent observes the layer's own lifecycle events (target_started,
	// fallback, admission events of R20.4) before the call's observers;
	// the engine's events go to the policy's OnEvent. An error it returns
	// ends the call with a *layer.ObserverError. Nil means none.
	OnEvent func(event.Event) error
}

// ConfigError reports an invalid Config: it names the field and the
// target's index (-1 for a field of Config), never the value given.
type ConfigError struct {
	// Index is the target's index in Config.Targets, or -1.
	Index int
	// Field names the field, for example "Upstream".
	Field string
	// Problem says what is wrong.
	Problem string
}

// Error returns a safe message.
func (e *ConfigError) Error() string {
	where := "config"
	if e.Index >= 0 {
		where = "target " + strconv.Itoa(e.Index)
	}
	return "fallback: " + where + " " + e.Field + " " + e.Problem
}

// CrossWireError reports a target of another wire given to the drop-in
// layer (R20.8): an SDK reads only its own wire format, so such a target
// needs the native client (client.WithFallback) or the broker.
type CrossWireError struct {
	// Index is the target's index in Config.Targets.
	Index int
	// Want is the wire of the chain, Got the target's.
	Want, Got codec.Provider
}

// Error returns a safe message.
func (e *CrossWireError) Error() string {
	return "fallback: target " + strconv.Itoa(e.Index) + " speaks " + string(e.Got) +
		", not the chain's " + string(e.Want) + ": a drop-in call cannot cross wires (use client.WithFallback with the native client, or the broker)"
}

// CredentialError reports that a target's Credential function failed. It
// keeps the target's name only: neither the credential nor the function's
// error text.
type CredentialError struct {
	// Target names the target.
	Target string
}

// Error returns a safe message.
func (e *CredentialError) Error() string {
	return "fallback: the credential of target " + e.Target + " could not be obtained"
}

// BodyError reports a request body in which a target's model cannot be
// set: it is not one JSON object. The call ends with it when it would fall
// back to that target; nothing is sent there.
type BodyError struct {
	// Target names the target.
	Target string
}

// Error returns a safe message: it never quotes the body.
func (e *BodyError) Error() string {
	return "fallback: the request body is not a JSON object, so target " + e.Target + "'s model cannot be set in it"
}

// Layer is the fallback layer. It is immutable after New and safe for
// concurrent use.
type Layer struct {
	codec   codec.Codec
	rewrite codec.ModelRewriter
	router  codec.Router // a codec naming the model in the URL (R23.1)
	targets []target
	primary string
	rules   Rules
	onEvent func(event.Event) error
}

type target struct {
	Target
	name string
	up   *url.URL
}

// New returns the fallback layer of cfg. It returns a *ConfigError for a
// missing codec, an invalid upstream, a model swap the codec cannot make
// a target that changes neither model, upstream nor credential, or a
// status outside 400–599, and a *CrossWireError for a target of another
// wire. With no targets the layer passes every call through unchanged.
func New(cfg Config) (*Layer, error) {
	if cfg.Codec == nil {
		return nil, &ConfigError{Index: -1, Field: "Codec", Problem: "is required"}
	}
	if err := cfg.Rules.Validate(); err != nil {
		return nil, err
	}
	l := &Layer{codec: cfg.Codec, primary: cfg.Primary, rules: cfg.Rules, onEvent: cfg.OnEvent}
	l.rules.Statuses = slices.Clone(cfg.Rules.Statuses)
	l.rules.Codes, l.rules.NeverCodes = slices.Clone(cfg.Rules.Codes), slices.Clone(cfg.Rules.NeverCodes)
	l.rules.Stalls = slices.Clone(cfg.Rules.Stalls)
	l.rewrite, _ = cfg.Codec.(codec.ModelRewriter)
	l.router, _ = cfg.Codec.(codec.Router)
	for i, t := range cfg.Targets {
		if c := t.Codec; c != nil && (c.Provider() != cfg.Codec.Provider() || c.Path() != cfg.Codec.Path()) {
			return nil, &CrossWireError{Index: i, Want: cfg.Codec.Provider(), Got: c.Provider()}
		}
		if t.Model == "" && t.Upstream == "" && t.Credential == nil && t.Gate == nil && t.Context == nil {
			return nil, &ConfigError{Index: i, Field: "Model", Problem: "is empty, as are Upstream, Credential, Gate and Context: the target would be the one before it again"}
		}
		if t.Model != "" && l.rewrite == nil && l.router == nil {
			return nil, &ConfigError{Index: i, Field: "Model", Problem: "needs a codec that can name another model (codec.ModelRewriter)"}
		}
		if err := (Rules{Stalls: t.Stalls}).Validate(); err != nil {
			return nil, &ConfigError{Index: i, Field: "Stalls", Problem: "holds a value that is not header_timeout, first_output_timeout or idle_timeout"}
		}
		tg := target{Target: t, name: t.Name}
		if t.Stalls != nil {
			tg.Stalls = slices.Clone(t.Stalls)
		}
		if t.Upstream != "" {
			u, err := url.Parse(t.Upstream)
			if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" {
				return nil, &ConfigError{Index: i, Field: "Upstream", Problem: "must be an absolute http or https URL without user information, query or fragment"}
			}
			tg.up = u
		}
		if tg.name == "" {
			tg.name = t.Model
		}
		if tg.name == "" && tg.up != nil {
			tg.name = tg.up.Host
		}
		if tg.name == "" {
			tg.name = "target " + strconv.Itoa(i+1)
		}
		l.targets = append(l.targets, tg)
	}
	return l, nil
}

// Name returns "fallback".
func (*Layer) Name() string { return "fallback" }

// Position returns layer.PerCall.
func (*Layer) Position() layer.Position { return layer.PerCall }

// Wrap returns next with the fallback around it. When the first target
// answers a drop-in call nobody watches, the layer costs the *layer.Call it
// places and nothing else: the engine takes the request's body as without
// the layer, and the layer reads it again from the request's GetBody only
// when a fallback is due (R20.11).
func (l *Layer) Wrap(next http.RoundTripper) http.RoundTripper {
	if len(l.targets) == 0 {
		return next
	}
	return &transport{l: l, next: next}
}

type transport struct {
	l    *Layer
	next http.RoundTripper
}

// credentialHeaders are the request headers that carry a credential and
// never follow a request to another upstream: the account's credential
// headers and Proxy-Authorization.
var credentialHeaders = append(layer.CredentialHeaders(), "Proxy-Authorization")

// credentialParams are the query parameters that commonly carry an API key
// (?key=, ?api-key=) and never follow a request to another upstream.
var credentialParams = []string{"key", "api-key", "api_key", "access_token"}

func (t *transport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method != http.MethodPost {
		// Only a completion is created anew on another target: a read of
		// a stored response (GET /v1/responses/{id}), a cancel or a
		// delete belongs to the upstream that holds it (R20.2).
		return t.next.RoundTrip(req)
	}
	lc := layer.CallFrom(req.Context())
	if lc == nil {
		// Nobody above reads the result's completion: the layer reads
		// only the outcome, so the engine keeps its check-only path
		// (R20.11).
		lc = &layer.Call{OutcomeOnly: true}
		req = req.WithContext(layer.WithCall(req.Context(), lc))
	}
	l := t.l
	w := walk{t: t, req: req, lc: lc}
	// The first target is the request as given, and the engine takes its
	// body as without the layer. The layer takes it first only when it
	// could not have it again for a fallback (no GetBody), or when its
	// target_started event is watched and needs the model (R20.11).
	if req.GetBody == nil || l.onEvent != nil || len(lc.Observers()) > 0 {
		if err := w.take(req.Body); err != nil {
			return nil, err
		}
	}
	w.facts0, w.gate0, w.skip0, w.leave0, w.finish0 = lc.Facts, lc.Gate, lc.SkipOpenCircuit, lc.LeaveOnStall, lc.Finish
	return t.from(&w, 0)
}

// from runs the walk w from target i on: each target in turn until one
// answers, or the call ends (R20.2). The call's fields the walk changes
// are restored when it returns.
func (t *transport) from(w *walk, i int) (*http.Response, error) {
	l, req, lc := t.l, w.req, w.lc
	defer func() { lc.Facts, lc.Gate, lc.SkipOpenCircuit, lc.LeaveOnStall = w.facts0, w.gate0, w.skip0, w.leave0 }()
	last := len(l.targets)
	for ; ; i++ {
		treq, model := req, w.info.Model
		if i > 0 || w.run != nil {
			var err error
			if treq, model, err = t.request(req, lc, i, w.body, w.info.Model, w.run.names[i]); err != nil {
				return nil, err
			}
		}
		l.aim(lc, i, w.facts0, w.gate0)
		if w.run != nil {
			if err := w.run.Start(i, w.event(model)); err != nil {
				closeBody(treq)
				return nil, err
			}
		}
		lc.Result = layer.CallResult{}
		lc.SkipOpenCircuit = i < last
		lc.LeaveOnStall = w.leaveFor(i)
		lc.Finish = w.finish0
		resp, err := t.next.RoundTrip(treq)
		e := lc.Result.Err
		if e == nil || (resp != nil && resp.StatusCode/100 == 2) {
			// A success, an error outside recovery, or a body already
			// handed over: the answer is the caller's (R20.3), though a
			// stream that fails before any output still goes on to the
			// next target in the same body (R20.14). A stream of a later
			// target that fails from here on still reports every target
			// left behind (R20.7).
			if resp != nil && w.run != nil {
				lc.Finish = w.run.Opened(i, lc.Result.LogicalID, w.finish0)
			}
			if resp != nil && e == nil && i < last && resp.StatusCode/100 == 2 {
				if fr, ok := resp.Body.(layer.FrameReader); ok && lc.Result.Stream != nil {
					resp.Body = &continuing{w: *w, i: i, treq: treq, model: model, fr: fr, body: resp.Body}
				}
			}
			return resp, err
		}
		resp, err, done := t.after(w, i, treq, model, resp, e)
		if done {
			return resp, err
		}
	}
}

// after decides once target i, sent as treq for model, ended with the
// typed error e and, for a drop-in caller, the final response resp (nil
// when there is none, or when the target's stream had opened). done
// reports that the call ends with resp, err; otherwise the walk goes on
// with target i+1.
func (t *transport) after(w *walk, i int, treq *http.Request, model string, resp *http.Response, e *layer.RecoveryError) (_ *http.Response, _ error, done bool) {
	l, req, lc := t.l, w.req, w.lc
	if w.run == nil {
		// The first target failed and its body is needed again: the
		// request's own copy (GetBody), taken only now.
		var body io.ReadCloser
		if i < len(l.targets) && req.Context().Err() == nil && l.rulesFor(i).FallsBack(e) {
			if b, gerr := req.GetBody(); gerr == nil {
				body = b
			}
		}
		if body == nil || w.take(body) != nil {
			// No fallback, or a body that cannot be had again, so
			// nothing more can be sent: the call ends with the first
			// target's outcome, as without the layer.
			if resp == nil {
				return nil, e, true
			}
			return resp, nil, true
		}
		model = w.info.Model
	}
	ev := w.event(model)
	ev.Identity = event.Identity{LogicalID: lc.Result.LogicalID, WireAttempt: lc.Result.WireAttempts}
	next, final, oerr := w.run.After(treq.Context(), i, e, ev)
	if oerr != nil {
		closeResp(resp)
		return nil, oerr, true
	}
	if !next {
		lc.Result.Err = final
		if resp == nil {
			return nil, final, true
		}
		if final.Outcome != e.Outcome {
			resp.Header.Set("X-Recourse-Outcome", string(final.Outcome))
		}
		return resp, nil, true
	}
	closeResp(resp)
	return nil, nil, false
}

// aim points the call lc at target i (0 is the first): the facts and gate
// it came with, and for a fallback target that target's own gate and
// model.
func (l *Layer) aim(lc *layer.Call, i int, facts0 *codec.RequestInfo, gate0 layer.ResendGate) {
	lc.Facts, lc.Gate = facts0, gate0
	if i == 0 {
		return
	}
	tg := &l.targets[i-1]
	if tg.Gate != nil {
		lc.Gate = tg.Gate
	}
	if facts0 != nil && tg.Model != "" {
		f := *facts0
		f.Model = tg.Model
		lc.Facts = &f
	}
}

// walk is what one call through the layer learns of its request once it
// takes the body: the bytes every further target is built from, the
// request facts, the targets' names and facts, and the Run.
type walk struct {
	t    *transport
	req  *http.Request
	lc   *layer.Call
	body []byte
	info codec.RequestInfo
	run  *Run

	// The call's fields as the caller placed them, restored after each
	// stretch of the walk.
	facts0  *codec.RequestInfo
	gate0   layer.ResendGate
	skip0   bool
	leave0  layer.StallSet
	finish0 func(*layer.RecoveryError)
}

// leaveFor returns the stall set of target i's run: the caller's, and for
// every target but the last the rules' (R20.12).
func (w *walk) leaveFor(i int) layer.StallSet {
	if i < len(w.t.l.targets) {
		return w.leave0 | layer.StallSetOf(w.t.l.rulesFor(i).Stalls...)
	}
	return w.leave0
}

// rulesFor returns the rules that decide whether target i falls back: the
// layer's, with the target's own Stalls when it has them (R20.16).
func (l *Layer) rulesFor(i int) Rules {
	r := l.rules
	if i > 0 && i <= len(l.targets) && l.targets[i-1].Stalls != nil {
		r.Stalls = l.targets[i-1].Stalls
	}
	return r
}

// take reads body (the request's, or a copy from its GetBody) once and
// starts the call's Run.
func (w *walk) take(body io.ReadCloser) error {
	b, err := readBody(body)
	if err != nil {
		return err
	}
	l, req, lc := w.t.l, w.req, w.lc
	w.body = b
	if lc.Facts != nil {
		w.info = *lc.Facts
	} else if in, err := codec.DescribeRequest(l.codec, req.URL, b); err == nil {
		w.info = in
	}
	primary := l.primary
	if primary == "" {
		primary = w.info.Model
	}
	if primary == "" {
		primary = req.URL.Host
	}
	names := make([]string, 1, len(l.targets)+1)
	names[0] = primary
	facts := make([]codec.Facts, 1, len(l.targets)+1)
	facts[0] = l.codec.Facts()
	for _, tg := range l.targets {
		names = append(names, tg.name)
		f := l.codec.Facts()
		if tg.Facts != nil {
			f = *tg.Facts
		}
		facts = append(facts, f)
	}
	t := w.t
	w.run = NewRun(l.rules, names, facts, func(ev event.Event) error { return t.emit(lc, ev) })
	for i := range l.targets {
		w.run.SetStalls(i+1, l.targets[i].Stalls)
	}
	return nil
}

// event is the base of the walk's events for a target of model.
func (w *walk) event(model string) event.Event {
	return event.Event{Provider: w.t.l.codec.Provider(), Operation: w.info.Operation, Model: model}
}

// emit delivers one of the layer's events to its OnEvent and to the call's
// observers, as the engine does (R11.4).
func (t *transport) emit(lc *layer.Call, ev event.Event) error { return lc.Emit(t.l.onEvent, ev) }

// request returns the request of target i (0: the request as given) and
// its model.
func (t *transport) request(req *http.Request, lc *layer.Call, i int, body []byte, model, name string) (*http.Request, string, error) {
	ctx := req.Context()
	b := body
	h := req.Header.Clone()
	u := req.URL
	host := req.Host
	if i > 0 {
		tg := &t.l.targets[i-1]
		if tg.Context != nil {
			ctx = tg.Context(ctx)
			if layer.CallFrom(ctx) != lc {
				ctx = layer.WithCall(ctx, lc)
			}
		}
		if tg.Model != "" && t.l.router == nil {
			nb, err := t.l.rewrite.WithModel(body, tg.Model)
			if err != nil {
				return nil, "", &BodyError{Target: name}
			}
			b, model = nb, tg.Model
		}
		if tg.up != nil {
			nu := *req.URL
			nu.Scheme, nu.Host, nu.User = tg.up.Scheme, tg.up.Host, nil
			nu.Path = strings.TrimSuffix(tg.up.Path, "/") + req.URL.Path
			nu.RawPath = ""
			if q := nu.Query(); len(q) > 0 {
				// A key passed in the query stays with its own upstream,
				// as a credential header does.
				for _, k := range credentialParams {
					q.Del(k)
				}
				nu.RawQuery = q.Encode()
			}
			u, host = &nu, ""
			for _, k := range credentialHeaders {
				h.Del(k)
			}
		}
		if tg.Model != "" && t.l.router != nil {
			// The wire names the model in the path (R23.1): the target's
			// URL, upstream already applied, names its model instead.
			nu, err := t.l.router.WithModelURL(u, tg.Model)
			if err != nil {
				return nil, "", &BodyError{Target: name}
			}
			u, model = nu, tg.Model
		}
		if tg.Credential != nil {
			if err := credential(ctx, tg.Credential, h); err != nil {
				return nil, "", &CredentialError{Target: name}
			}
		}
	}
	// A shallow copy: the layers below never change a request, and the
	// fields this one changes are its own.
	treq := req.WithContext(ctx)
	treq.URL, treq.Host, treq.Header = u, host, h
	treq.Body = layer.NewRequestBody(b)
	treq.ContentLength = int64(len(b))
	if i > 0 {
		treq.GetBody = func() (io.ReadCloser, error) { return layer.NewRequestBody(b), nil }
	} // the first target's bytes are the request's: its own GetBody, if any
	return treq, model, nil
}

// credential calls f, turning a panic into an error.
func credential(ctx context.Context, f func(context.Context, http.Header) error, h http.Header) (err error) {
	defer func() {
		if recover() != nil {
			err = errors.New("panic")
		}
	}()
	return f(ctx, h)
}

// readBody takes a request body once: a *layer.RequestBody without a
// copy, any other body read to its end. A nil body or http.NoBody is nil.
func readBody(body io.ReadCloser) ([]byte, error) {
	if body == nil || body == http.NoBody {
		return nil, nil
	}
	defer body.Close()
	if rb, ok := body.(*layer.RequestBody); ok {
		return rb.Unread(), nil
	}
	return io.ReadAll(body)
}

func closeBody(req *http.Request) {
	if req.Body != nil {
		req.Body.Close()
	}
}

func closeResp(r *http.Response) {
	if r != nil && r.Body != nil {
		r.Body.Close()
	}
}
