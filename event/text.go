package event

import "strconv"

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
