package layer

import "time"

// MaxDuration is the largest duration any recovery setting accepts: a
// policy's delays and budget (package layers/retry) and a stall limit
// (package layers/stall). It is the timer range of 2147483647
// milliseconds (R3).
const MaxDuration = 2147483647 * time.Millisecond

// StallLimit names the per-attempt stall limit that ended an attempt. The
// limits are opt-in (package layers/stall); the default chain has none, and
// a Failure's Stall is then always empty.
type StallLimit string

// The per-attempt stall limits.
const (
	// StallHeader is the header timeout: the response headers did not
	// arrive in time after the request was handed to the transport.
	StallHeader StallLimit = "header_timeout"
	// StallFirstOutput is the first-output timeout: no semantic byte
	// (reasoning, content or a tool fragment) arrived in time after the
	// response headers. Keepalives are not output.
	StallFirstOutput StallLimit = "first_output_timeout"
	// StallIdle is the idle timeout: no byte at all (keepalives included)
	// arrived in time while the attempt was waiting for the next one.
	StallIdle StallLimit = "idle_timeout"
)

// Text returns the limit as a short phrase for status lines and notices:
// "header timeout", "first-output timeout", "idle timeout", or "stall" for
// a value outside the defined set.
func (l StallLimit) Text() string {
	switch l {
	case StallHeader:
		return "header timeout"
	case StallFirstOutput:
		return "first-output timeout"
	case StallIdle:
		return "idle timeout"
	}
	return "stall"
}

// StallSet is a set of the three stall limits, one bit each; the zero
// value is empty. It is a value and safe for concurrent use.
type StallSet uint8

// StallSetOf returns the set of limits. A value outside StallHeader,
// StallFirstOutput and StallIdle is left out.
func StallSetOf(limits ...StallLimit) StallSet {
	var s StallSet
	for _, l := range limits {
		s |= l.bit()
	}
	return s
}

// Has reports whether l is in the set; a value outside the three limits
// never is.
func (s StallSet) Has(l StallLimit) bool { b := l.bit(); return b != 0 && s&b != 0 }

func (l StallLimit) bit() StallSet {
	switch l {
	case StallHeader:
		return 1
	case StallFirstOutput:
		return 2
	case StallIdle:
		return 4
	}
	return 0
}

// StallError is the error a per-attempt stall limit returns through the
// wire plane when it ends an attempt: from RoundTrip for the header
// timeout, from the response body's Read for the first-output and idle
// timeouts. The engine (package layers/retry) finds it with errors.As and
// records Limit in the attempt's safe Failure (Failure.Stall). A stall is a
// transport failure: eligible like any other before the first semantic
// byte (local providers still need admission, R8.3), interrupted after it
// (R13.1). Its Error text is safe (R10.5).
type StallError struct {
	// Limit is the limit that fired. The engine records only the three
	// limits above; another value ends the attempt as a stall without a
	// name.
	Limit StallLimit
	// After is the configured value of that limit.
	After time.Duration
}

// Error returns a safe message naming the limit and its value, for example
// "recourse: idle timeout: no byte for 30s".
func (e *StallError) Error() string {
	switch e.Limit {
	case StallHeader:
		return "recourse: header timeout: no response headers within " + e.After.String()
	case StallFirstOutput:
		return "recourse: first-output timeout: no reasoning, content or tool output within " + e.After.String() + " of the headers"
	case StallIdle:
		return "recourse: idle timeout: no byte for " + e.After.String()
	}
	return "recourse: stall"
}
