// Package layer is the shared vocabulary of recourse for whoever writes or
// places a layer: the layer type and its positions, the per-call and
// per-attempt values (Call, Attempt), admission's decision and hook, the
// resend gates, the wire capture and the typed errors (RecoveryError,
// PolicyError, StreamError, RedirectError, ObserverError, CaptureError,
// StallError). Every layer package imports this package and no other
// layer's; a user's own layer needs nothing else but package event.
//
// What a call reports lives in package event, which this package builds on
// and which imports nothing of it: the lifecycle events (event.Event and
// event.Type), the safe failure record of one attempt (event.Failure) with
// its identity, progress, category, reason and phase, the outcomes of a
// recovery (event.Outcome), and the explicit sensitive inspection function
// (event.Inspect). An observer, an admission hook or a caller that reads
// a RecoveryError's failures reads them there. The interface a provider
// codec implements is package codec, which both packages build on and which
// imports nothing of them.
//
// # Positions
//
// A chain is an onion. Each Layer declares its Position; package chain
// places it there and refuses a chain that would break a wire invariant:
//
//	caller
//	  │ http.Request (+ *Call in its context)
//	  ▼
//	PerCall layers ──── any number, in order: see one logical completion
//	  │                 (tracing, a request log, a cache, a quota)
//	Engine (retry) ──┐  decision plane (retry.Decider), between attempts:
//	  │ per attempt  │  classify → budget/deadline → [gate peek]
//	  │ *Attempt     │  → admission → [gate reserve] → delay (backoff,
//	  ▼ in context   │  ≥ the gate's horizon) → delay_scheduled → sleep
//	                 │  → retry_started → resend → [gate settle]
//	StageCapture ───── engine-owned: sensitive OnWire snapshots
//	StageProgress ──── engine-owned: bytes and semantic evidence
//	PerAttempt layers ─ any number, in order: see every wire attempt
//	  │                 (a request signer, a stall limit, a fault injector)
//	StageRedirectGuard  always: a 3xx becomes a *RedirectError
//	StageSender ─────── always: one POST per attempt
//	  ▼
//	provider
//
// The wire plane's currency is the standard library's http.RoundTripper:
// every layer keeps the RoundTripper contract. The decision plane's
// currency is typed values (event.Failure, AdmissionRequest, Decision), never
// strings. Failures travel up the wire plane as typed errors
// (*CaptureError, *RedirectError, transport errors) and become one safe
// event.Failure record per attempt in the engine. Everything in a Failure,
// an event.Event or the Error text of these types is safe to log
// (CONTRACT.md R10.5); private evidence stays behind event.Inspect.
//
// # Values in a request's context
//
// The layers of a chain talk to each other through three typed values in a
// request's context. The context may carry others that are not part of
// this vocabulary: the application's own, a tracer's span (otelbridge),
// and one private marker of recourse-proxy, which tags a call that is a
// client's own retry so that the proxy's per-call stage inside the quota
// keeps that call from depositing (it was charged as a resend instead).
//
//   - *Call (WithCall, CallFrom), one per logical completion. Its inputs
//     (Facts, TypedErrors) are set by whoever starts the call — the native
//     client hands the request facts it already knows, so the engine does
//     not describe the body again; a drop-in SDK's request has none, and
//     the first layer that needs one (a per-call layer that observes, or
//     the engine) adds it. Per-call layers add observers with Observe. The engine fills in Result: the logical ID,
//     the wire attempts, the typed error, the stream's frame reader and
//     the decoded completion. A per-call quota layer sets Gate, a
//     ResendGate the engine binds to the call's upstream (UpstreamGate)
//     and consults at the bracketed steps above. A drop-in caller that wants the typed error
//     behind an SDK's own error places a Call itself and reads its Result.
//   - the wire attempt (AttemptFrom), one per wire attempt, placed by the
//     engine for the stages and per-attempt layers below it. A layer reads
//     its identity, request facts and progress counters (Attempt); the rest
//     of its state is the engine's own. Outside an engine AttemptFrom
//     returns nil and the stages pass everything through. A per-attempt
//     layer passes its request's context on (a changed request is
//     req.Clone(req.Context()), never http.NewRequest or
//     req.Clone(context.Background())): inside an engine the sender refuses
//     a request that lost its attempt with ErrDetachedRequest and sends
//     nothing, and an engine that does not recover a call marks its
//     request for the same reason.
//   - the engine's per-call policy override (retry.WithPolicy), owned by
//     package retry because the Policy type lives there: a policy for the
//     calls made with that context, or nil to turn recovery off for them.
//
// # Configuration
//
// Every package of recourse configures its values in one way (CONTRACT.md
// R3.5):
//
//   - A policy or a set of limits is a value struct whose zero fields mean
//     the documented defaults: retry.Policy, stall.Limits, fallback.Config,
//     proxy.Config. It is passed to the constructor, which keeps a copy.
//   - What a constructor cannot work without (a codec, a base transport, a
//     client, a logger) is a positional argument.
//   - Everything optional is a functional option: a type named Option (or
//     ClientOption, StreamOption) that is a func over the value it
//     configures and cannot fail. An option only records its value.
//   - The constructor validates the struct and the options together and
//     returns a typed error that names the offending field or option
//     (*PolicyError, *quota.ConfigError, …); a constructor with nothing
//     that can be invalid returns no error.
//   - Each option has one name. There are no aliases.
package layer
