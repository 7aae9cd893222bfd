// Package broker runs the model side of a conversation on top of the native
// client (package chain): the tool loop, a chat session, visible retry
// notices and, opt-in, safe continuation of a stream that broke after it
// started (CONTRACT.md R16, R17).
//
// # Tool loop
//
// A Broker sends the conversation, executes the tool calls of a completed
// response, appends the assistant message and one tool message per call to
// the caller's history, and repeats until the model answers without tool
// calls (the final assistant message is appended too) or the tool depth
// limit is reached. Each completion is its own chain call, so it has its own
// logical request ID and only its HTTP attempts share it. Recovery happens
// inside a completion: it never re-runs a tool, restarts the loop or repeats
// a completion that already succeeded, and everything completed before a
// failure stays in the history. Tool calls of an interrupted or
// length-terminated response are never executed.
//
// # Retry notices and status
//
// Right before every backoff sleep of a completion, the broker turns the
// chain's delay_scheduled lifecycle event into a RetryNotice and hands it to
// the WithNotices callback, together with ContinuationNotices and Activity
// signals. Notices are operational state for the user interface: they never
// enter the history, the model context or a session's messages. FormatRetry,
// FormatContinuation and Countdown render them; a Status holds the one
// transient status line a terminal UI shows and clears it on the next sign
// of activity (an Activity notice). With a retry quota in the chain (package layers/quota)
// a refused resend is announced by a QuotaNotice (FormatQuota) and a first
// request held by the shared cooldown by a CooldownNotice (FormatCooldown).
//
// # Continuation
//
// WithContinuation turns on continuation for GenerateStream. When a stream
// breaks after semantic output arrived, the blocks the protocol had already
// closed are committed as a partial assistant message and the next request
// of the same turn loop continues from that history, after the same
// admission and backoff as a retry and within a budget. A stream that
// completes normally takes exactly the normal success path.
package broker
