package event

import (
	"encoding/json"
	"strconv"
	"time"
)

// QuotaRefusal says, in safe terms, which quota refused a resend. It names
// the upstream's host (and port when it is not the scheme's default) and
// counts; it never holds a credential, a path or a query.
type QuotaRefusal struct {
	// Upstream is the host (and non-default port) of the refusing quota,
	// for example "api.openai.com".
	Upstream string `json:"upstream"`
	// Resends is the number of resends counted in the window.
	Resends int `json:"resends"`
	// Window is the quota's window.
	Window time.Duration `json:"-"`
	// Fleet reports that the fleet-wide cap refused (a shared store),
	// rather than this process's ratio.
	Fleet bool `json:"fleet,omitempty"`
}

// Text returns the safe description of the refusal, for example "retry
// quota for api.openai.com exhausted: 14 resends in the last 60 s".
func (r *QuotaRefusal) Text() string {
	if r == nil {
		return "retry quota exhausted"
	}
	kind := "retry quota"
	if r.Fleet {
		kind = "fleet retry quota"
	}
	unit := " resends"
	if r.Resends == 1 {
		unit = " resend"
	}
	return kind + " for " + r.Upstream + " exhausted: " + strconv.Itoa(r.Resends) + unit +
		" in the last " + windowText(r.Window)
}

// windowText renders a window as "60 s" (whole seconds from one second up)
// or "500 ms".
func windowText(d time.Duration) string {
	if d >= time.Second && d%time.Second == 0 {
		return strconv.FormatInt(int64(d/time.Second), 10) + " s"
	}
	return strconv.FormatInt(d.Milliseconds(), 10) + " ms"
}

// MarshalJSON encodes the refusal with its window in whole milliseconds
// (window_ms).
func (r QuotaRefusal) MarshalJSON() ([]byte, error) {
	type plain QuotaRefusal
	return json.Marshal(struct {
		plain
		WindowMS int64 `json:"window_ms"`
	}{plain(r), r.Window.Milliseconds()})
}

// BreakerState is the state of one upstream's breaker: its retry quota and
// shared cooldown (package layers/quota) seen as a circuit breaker
// (R20.13). Its fields are safe: the upstream's host, flags, a time and
// counts.
type BreakerState struct {
	// Upstream is the host (and non-default port) of the upstream, for
	// example "api.openai.com".
	Upstream string `json:"upstream"`
	// Refusing reports that the upstream's resends are being refused: the
	// last resend decision of its quota refused (quota_exhausted).
	Refusing bool `json:"refusing"`
	// CooldownUntil is the shared cooldown horizon (a Retry-After) before
	// which nothing is sent to the upstream; zero when none holds.
	CooldownUntil time.Time `json:"cooldown_until,omitzero"`
	// Skipped counts the calls that went straight to a fallback target
	// without a request to the upstream, its circuit open (R20.5).
	Skipped int64 `json:"skipped"`
	// Failures counts the calls to the upstream that ended in failure (any
	// outcome but cancelled), a stream that failed after its 200 included.
	Failures int64 `json:"failures"`
}

// Open reports whether the breaker keeps calls from the upstream: its
// resends are refused or its cooldown holds at now.
func (b BreakerState) Open(now time.Time) bool { return b.Refusing || b.CooldownUntil.After(now) }
