// Package quota is an opt-in retry quota and shared cooldown: a per-call
// layer that keeps an outage from becoming a retry storm, in one process
// or across a fleet. Per-call limits (MaxAttempts, the budget, the
// deadline) bound one call; they do not stop many calls from multiplying
// the load on a provider that is failing, and LLM rate limits are per
// account, so one replica's 429 storm is every replica's.
//
// # The quota
//
// Per upstream (scheme://host:port, optionally narrowed by the model with
// ByModel and by the credential's hash with ByCredential), every logical
// call deposits and every resend withdraws — a stream resumed after a
// keepalive-only failure and a broker continuation included. Within a
// window (default 60 s) the resends may reach max(floor, ratio × calls):
// default ratio 0.2, floor 3. The engine's decision plane consults the
// quota in this order:
//
//	classify → MaxAttempts, budget, deadline → quota peek (refused:
//	quota_exhausted; the admission hook is not asked) → admission → quota
//	reserve (atomic; a lost race is quota_exhausted too) → delay (at
//	least until the cooldown horizon) → delay_scheduled → sleep → resend
//	→ settle (a resend that succeeded is refunded, as AWS's quota does)
//
// An explicit Allow from admission does not override the quota. A refused
// resend ends the call with outcome quota_exhausted: a quota_refused event
// (its Quota says which quota), then the terminal exhausted event, and a
// *layer.RecoveryError that keeps the final failure and the history and
// says in safe text which quota refused: "retry quota for api.openai.com
// exhausted: 14 resends in the last 60 s". A drop-in caller gets the
// final failure response marked X-Should-Retry: false, so an SDK does not
// retry it on top. Under a sustained outage the quota makes calls fail at
// once with their first failure, without backoff: that is the point.
//
// # The shared cooldown
//
// A failure with a valid Retry-After (or a provider delay hint the engine
// parsed) raises its upstream's horizon, "nothing to this upstream before
// T", in the Store. Every chain using the same store respects it: a
// resend's delay is at least the time to the horizon, refused by the usual
// rules when that is above the delay ceiling (delay_ceiling) or the time
// left (deadline), exactly like a Retry-After (R5.5, R7); a first attempt
// waits for the horizon (event cooldown_wait) when it is within the delay
// ceiling and the deadline, and is sent at once otherwise — the quota
// never refuses a first attempt.
//
// # What a fleet shares
//
// The ratio needs no coordination to hold fleet-wide: if every replica
// keeps its resends at or below r × its own calls, the fleet's resends stay
// at or below r × the fleet's calls. So the ratio is counted in process.
// What a fleet must share is what is per account: the cooldown horizon,
// and optionally an absolute cap on resends per window per upstream
// (WithFleetCap), because the floor otherwise multiplies with the number
// of replicas. Both live in a Store: one MemoryStore per process, shared
// by every quota layer given no store, unless WithStore gives another, such as the Redis store of module
// github.com/recourse-dev/recourse/redisstore. A store that is unavailable
// or slower than WithStoreTimeout (default 50 ms) fails open: the decision
// is this process's alone and the engine emits quota_unavailable; an
// outage of the store never blocks or fails a completion.
//
// # The breaker in view
//
// Each upstream's quota and cooldown act as its circuit breaker, and its
// state is visible (R20.13): whether its resends are being refused, until
// when its cooldown holds, how many calls went straight to a fallback
// target and how many failed (a stream that failed after its 200
// included). The engine emits a breaker event once per change, on the call
// that saw it; Layer.Breakers is the snapshot per upstream host that a
// metrics collector reads.
//
// A Layer is safe for concurrent use; chains given the same Layer share its
// quotas, and chains given different Layers share only their store.
package quota
