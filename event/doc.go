// Package event holds what a call of recourse reports: its lifecycle
// events and the safe records they carry. It is read by whoever watches or
// judges a call rather than shapes it: an observer (a policy's OnEvent, an
// observer added with layer.Call.Observe, packages otelbridge and
// eventlog), an admission hook, which is asked about a Failure, and a
// caller that reads the outcome and the failures of a *layer.RecoveryError.
//
// It holds:
//
//   - Event, one safe lifecycle event (R11), and Type, its type, with one
//     constant per type (AttemptStarted, DelayScheduled, Exhausted, …)
//     whose value is the type's wire name ("attempt_started"); Types lists
//     them all.
//   - Identity and Progress, the identity of one wire attempt and what it
//     received, carried by every event.
//   - Failure, the safe record of one failed attempt (R10.2), with the
//     enumerations that describe it: Category, Phase, Acceptance, Reason
//     (of its Classification), Hint, StallLimit and the parsed RetryAfter
//     with its RetryAfterKind. Evidence and ResponseEvidence are the
//     private, sensitive evidence behind a Failure, reached only through
//     Inspect (R10.5).
//   - Outcome, how a recovery ended without success (R10.4), and the
//     records of the events of a quota, a fallback, a breaker and a resume:
//     QuotaRefusal, FallbackStep, BreakerState and Resume.
//
// Everything in this package but Evidence, ResponseEvidence and Inspect is
// safe to log: it never holds body text, header values, credentials, tool
// arguments or an original error message. The package imports only the
// standard library, package codec and package chat; package layer, the
// vocabulary of whoever writes or places a layer, builds on it.
package event
