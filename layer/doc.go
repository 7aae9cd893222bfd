// Package layer is the shared vocabulary of recourse: call identity,
// attempts, failures, progress, outcomes, lifecycle events, the typed errors
// (RecoveryError, PolicyError, StreamError), the explicit sensitive
// inspection function (Inspect), and the codec and capability interfaces.
//
// # Two planes, one currency each
//
// A recourse chain has two planes.
//
// The wire plane carries requests and responses. Its currency is the
// standard library's http.RoundTripper: every layer is a Layer whose Wrap
// returns a RoundTripper that keeps the RoundTripper contract. Typed state
// does not travel through untyped maps: the retry layer puts one typed
// *Attempt into each attempt's request context (identity, request facts,
// codec, capture hook, progress counters), and the wire-plane layers reach
// it with AttemptFrom. Outside a retry layer AttemptFrom returns nil and the
// wire-plane layers pass everything through.
//
// The decision plane runs between attempts, inside the retry layer:
// classification, budget and deadline, admission, backoff. Its currency is
// typed values (Failure, layer.AdmissionRequest, layer.Decision), never
// strings.
//
//	caller
//	  │ http.Request
//	  ▼
//	tracing ── observes Events (WithObserver)
//	retry ──────────────┐  decision plane:
//	  │ per attempt     │  classify (R4) → budget/deadline (R7)
//	  │ *Attempt in ctx │  → admission (R8) → backoff (R5, R6)
//	  ▼                 │  → delay_scheduled → sleep → retry_started
//	capture   snapshots (R12)
//	progress  counts bytes and semantic evidence (R13.2)
//	redirectguard  3xx → *RefusedError (R2.2)
//	sender    one POST (R2.1)
//	  ▼
//	provider
//
// Failures travel up the wire plane as typed errors (*CaptureError,
// redirect refusals, transport errors) and become one safe Failure record
// per attempt in the retry layer. Everything in a Failure, an Event or the
// Error text of these types is safe to log (R10.5); private evidence stays
// behind Inspect.
package layer
