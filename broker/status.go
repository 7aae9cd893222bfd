package broker

import (
	"strconv"
	"sync"
	"time"

	"github.com/recourse-dev/recourse/layer"
)

// FormatRetry renders a retry notice as one status line, for
// example "retrying LLM request after HTTP 504 (attempt 2/4 in 1.2s)". The
// attempt shown is the next one (FailedAttempt+1, capped at MaxAttempts).
// A failure without a non-2xx HTTP status shows its kind instead
// ("retrying LLM request after transport error (attempt 2/3 in 800ms)").
// Waits of a second or more show seconds with one decimal; shorter waits
// show whole milliseconds. A notice of a background stream's resume
// (Resume set) reads "resuming LLM stream after idle timeout (from event
// 57)", 57 being the cursor, or "(from the start)" when no event carried a
// sequence number yet.
func FormatRetry(n RetryNotice) string {
	return formatRetry(n, n.Wait)
}

// Countdown renders n like FormatRetry, with the wait reduced by since, the
// time that passed since the notice arrived; the remaining wait never goes
// below zero. A UI that redraws its status line calls it on every tick.
func Countdown(n RetryNotice, since time.Duration) string {
	return formatRetry(n, max(n.Wait-max(since, 0), 0))
}

func formatRetry(n RetryNotice, wait time.Duration) string {
	what := n.Error
	if n.HTTPStatus != 0 && n.HTTPStatus/100 != 2 {
		what = "HTTP " + strconv.Itoa(n.HTTPStatus)
	} else if what == "" {
		what = "error"
	}
	if n.Resume != nil {
		from := "the start"
		if n.Resume.Cursor >= 0 {
			from = "event " + strconv.FormatInt(n.Resume.Cursor, 10)
		}
		return "resuming LLM stream after " + what + " (from " + from + ")"
	}
	next := n.FailedAttempt + 1
	if n.MaxAttempts > 0 && next > n.MaxAttempts {
		next = n.MaxAttempts
	}
	return "retrying LLM request after " + what + " (attempt " + strconv.Itoa(next) + "/" +
		strconv.Itoa(n.MaxAttempts) + " in " + layer.FormatDelay(wait) + ")"
}

// FormatContinuation renders a continuation notice as one status line:
// "LLM stream interrupted; continuing generation (1/3): transport error".
func FormatContinuation(n ContinuationNotice) string {
	reason := n.Reason
	if reason == "" {
		reason = "error"
	}
	return "LLM stream interrupted; continuing generation (" + strconv.Itoa(n.Attempt) + "/" +
		strconv.Itoa(n.Max) + "): " + reason
}

// FormatQuota renders a quota notice as one status line: "not retrying
// LLM request after HTTP 503: retry quota for api.openai.com exhausted: 14
// resends in the last 60 s".
func FormatQuota(n QuotaNotice) string {
	what := n.Error
	if n.HTTPStatus != 0 && n.HTTPStatus/100 != 2 {
		what = "HTTP " + strconv.Itoa(n.HTTPStatus)
	} else if what == "" {
		what = "error"
	}
	return "not retrying LLM request after " + what + ": " + n.Quota.Text()
}

// FormatCooldown renders a cooldown notice as one status line: "LLM
// provider cooling down: sending in 4.0s".
func FormatCooldown(n CooldownNotice) string { return formatCooldown(n.Wait) }

func formatCooldown(wait time.Duration) string {
	return "LLM provider cooling down: sending in " + layer.FormatDelay(wait)
}

// Status is the transient status line of a terminal UI: a retry,
// continuation, quota, cooldown or fallback notice sets it, and the next sign of activity clears it —
// a new completion starting, a content, reasoning or tool delta, a tool
// result, the end of the run, or idle. It is never a transcript entry.
// Feed it every Notice of a broker's WithNotices callback. The zero value
// is an empty status; a Status is safe for concurrent use.
type Status struct {
	mu    sync.Mutex
	retry *RetryNotice
	cont  *ContinuationNotice
	quota *QuotaNotice
	cool  *CooldownNotice
	fb    *FallbackNotice
}

// reset empties every line; s.mu is held.
func (s *Status) reset() { s.retry, s.cont, s.quota, s.cool, s.fb = nil, nil, nil, nil, nil }

// Apply updates the status with n: a retry, continuation, quota or
// cooldown notice (or a fallback notice) replaces the line, any Activity clears it.
func (s *Status) Apply(n Notice) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case n.Event == EventRetry && n.Retry != nil:
		r := *n.Retry
		s.reset()
		s.retry = &r
	case n.Event == EventContinuation && n.Continuation != nil:
		c := *n.Continuation
		s.reset()
		s.cont = &c
	case n.Event == EventQuotaExhausted && n.Quota != nil:
		q := *n.Quota
		s.reset()
		s.quota = &q
	case n.Event == EventCooldown && n.Cooldown != nil:
		c := *n.Cooldown
		s.reset()
		s.cool = &c
	case n.Event == EventFallback && n.Fallback != nil:
		f := *n.Fallback
		s.reset()
		s.fb = &f
	case n.Event == EventActivity && n.Activity != nil:
		s.reset()
	}
}

// Clear empties the status line, for a UI that replaces it with a prompt
// of its own (for example an admission question).
func (s *Status) Clear() {
	s.mu.Lock()
	s.reset()
	s.mu.Unlock()
}

// Line returns the current status line, or "" when there is none.
func (s *Status) Line() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.retry != nil:
		return FormatRetry(*s.retry)
	case s.cont != nil:
		return FormatContinuation(*s.cont)
	case s.quota != nil:
		return FormatQuota(*s.quota)
	case s.cool != nil:
		return FormatCooldown(*s.cool)
	case s.fb != nil:
		return FormatFallback(*s.fb)
	}
	return ""
}

// Live returns the current status line with a retry's wait counting down
// by since, the time that passed since the notice was applied (see
// Countdown) and a cooldown's likewise; a continuation or quota line is
// returned as it is, "" when there is no status.
func (s *Status) Live(since time.Duration) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.retry != nil:
		return Countdown(*s.retry, since)
	case s.cont != nil:
		return FormatContinuation(*s.cont)
	case s.quota != nil:
		return FormatQuota(*s.quota)
	case s.cool != nil:
		return formatCooldown(max(s.cool.Wait-max(since, 0), 0))
	case s.fb != nil:
		return FormatFallback(*s.fb)
	}
	return ""
}
