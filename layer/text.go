package layer

import (
	"strconv"
	"time"
)

// Text returns the safe short text of f that every notice, status line and
// in-band retry announcement of this module uses, so that one retry reads
// the same in the broker and in the proxy (R17.1, R21.6): the stall limit
// that ended the attempt ("header timeout", "first-output timeout", "idle
// timeout"; a cancellation is "cancelled" even when a stall limit is
// recorded), otherwise "HTTP 504" for an HTTP failure with a status,
// "HTTP error" for one without, "transport error", "client timeout",
// "provider error", "protocol error", "cancelled", or "error" for an
// unknown category and for a nil f. It reads only the stall limit, the
// category and the status, so it never holds a body, a header, a key or a
// tool argument.
func (f *Failure) Text() string {
	if f == nil {
		return "error"
	}
	if f.Stall != "" && f.Category != CategoryCancellation {
		return f.Stall.Text()
	}
	switch f.Category {
	case CategoryHTTP:
		if f.HTTPStatus != 0 {
			return "HTTP " + strconv.Itoa(f.HTTPStatus)
		}
		return "HTTP error"
	case CategoryTransport:
		return "transport error"
	case CategoryClientTimeout:
		return "client timeout"
	case CategoryProviderResponse:
		return "provider error"
	case CategoryProtocol:
		return "protocol error"
	case CategoryCancellation:
		return "cancelled"
	}
	return "error"
}

// FormatDelay renders a wait for display, the one delay wording of the
// broker's status lines and the proxy's in-band notices (R17.2, R21.6):
// from one second up in seconds with one decimal, rounded half up to the
// tenth ("1.2s", "2.0s", "12.0s"); below in whole milliseconds, truncated
// ("800ms", "0ms"). A negative d is shown as "0ms".
func FormatDelay(d time.Duration) string {
	ms := max(d.Milliseconds(), 0)
	if ms < 1000 {
		return strconv.FormatInt(ms, 10) + "ms"
	}
	tenths := (ms + 50) / 100
	return strconv.FormatInt(tenths/10, 10) + "." + strconv.FormatInt(tenths%10, 10) + "s"
}
