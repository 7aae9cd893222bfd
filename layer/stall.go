package layer

import (
	"github.com/recourse-dev/recourse/event"
	"time"
)

// MaxDuration is the largest duration any recovery setting accepts: a
// policy's delays and budget (package layers/retry) and a stall limit
// (package layers/stall). It is the timer range of 2147483647
// milliseconds (R3).
const MaxDuration = 2147483647 * time.Millisecond

// StallSet is a set of the three stall limits, one bit each; the zero
// value is empty. It is a value and safe for concurrent use.
type StallSet uint8

// StallSetOf returns the set of limits. A value outside event.StallHeader,
// event.StallFirstOutput and event.StallIdle is left out.
func StallSetOf(limits ...event.StallLimit) StallSet {
	var s StallSet
	for _, l := range limits {
		s |= stallBit(l)
	}
	return s
}

// Has reports whether l is in the set; a value outside the three limits
// never is.
func (s StallSet) Has(l event.StallLimit) bool { b := stallBit(l); return b != 0 && s&b != 0 }

// stallBit returns the bit of l in a StallSet, or 0 for a value outside
// the three limits.
func stallBit(l event.StallLimit) StallSet {
	switch l {
	case event.StallHeader:
		return 1
	case event.StallFirstOutput:
		return 2
	case event.StallIdle:
		return 4
	}
	return 0
}

// StallError is the error a per-attempt stall limit returns through the
// wire plane when it ends an attempt: from RoundTrip for the header
// timeout, from the response body's Read for the first-output and idle
// timeouts. The engine (package layers/retry) finds it with errors.As and
// records Limit in the attempt's safe event.Failure (Failure.Stall). A stall is a
// transport failure: eligible like any other before the first semantic
// byte (local providers still need admission, R8.3), interrupted after it
// (R13.1). Its Error text is safe (R10.5).
type StallError struct {
	// Limit is the limit that fired. The engine records only the three
	// limits above; another value ends the attempt as a stall without a
	// name.
	Limit event.StallLimit
	// After is the configured value of that limit.
	After time.Duration
}

// Error returns a safe message naming the limit and its value, for example
// "recourse: idle timeout: no byte for 30s".
func (e *StallError) Error() string {
	switch e.Limit {
	case event.StallHeader:
		return "recourse: header timeout: no response headers within " + e.After.String()
	case event.StallFirstOutput:
		return "recourse: first-output timeout: no reasoning, content or tool output within " + e.After.String() + " of the headers"
	case event.StallIdle:
		return "recourse: idle timeout: no byte for " + e.After.String()
	}
	return "recourse: stall"
}
