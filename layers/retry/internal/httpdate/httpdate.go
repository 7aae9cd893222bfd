package httpdate

import (
	"math"
	"strconv"
	"time"
)

// Kind says which form a Retry-After value took.
type Kind int

const (
	// Absent means the response carried no Retry-After header.
	Absent Kind = iota
	// Invalid means a Retry-After header was present but its value is not valid.
	Invalid
	// Seconds means the value was a non-negative integer number of seconds.
	Seconds
	// Date means the value was an HTTP-date.
	Date
	// Milliseconds means the value was a millisecond retry hint (see
	// ParseMillis); Parse never returns it.
	Milliseconds
)

// String returns the lower-case name of k: "absent", "invalid", "seconds",
// "date" or "milliseconds", or "Kind(n)" for a value outside the defined
// range.
func (k Kind) String() string {
	switch k {
	case Absent:
		return "absent"
	case Invalid:
		return "invalid"
	case Seconds:
		return "seconds"
	case Date:
		return "date"
	case Milliseconds:
		return "milliseconds"
	}
	return "Kind(" + strconv.Itoa(int(k)) + ")"
}

// Value is the explicit result of parsing a Retry-After header.
type Value struct {
	// Kind says which form the header took.
	Kind Kind
	// Delay is the remaining delay: 0 for Absent and Invalid, the number of
	// seconds for Seconds, and max(0, Time.Sub(now)) for Date.
	Delay time.Duration
	// Time is the parsed instant in UTC for Date and the zero time otherwise.
	Time time.Time
}

// maxSeconds is the largest delay-seconds value whose time.Duration does not
// overflow.
const maxSeconds = math.MaxInt64 / int64(time.Second)

// Parse interprets the Retry-After header values of one response, as
// returned by http.Header.Values("Retry-After"), at wall-clock time now.
//
// No values yields Absent. More than one value, or a single value that is
// not exactly one delay-seconds or HTTP-date after trimming surrounding
// SP and HTAB, yields Invalid.
func Parse(values []string, now time.Time) Value {
	s, v, ok := single(values)
	if !ok {
		return v
	}
	if s == "" || !printableASCII(s) {
		return Value{Kind: Invalid}
	}
	if isDigit(s[0]) {
		n, ok := parseSeconds(s)
		if !ok {
			return Value{Kind: Invalid}
		}
		return Value{Kind: Seconds, Delay: time.Duration(n) * time.Second}
	}
	t, ok := ParseHTTPDate(s, now)
	if !ok {
		return Value{Kind: Invalid}
	}
	return Value{Kind: Date, Delay: max(0, t.Sub(now)), Time: t}
}

// single returns the one value of a singleton header field, trimmed of
// surrounding SP and HTAB, and ok. No values are Absent and more than one
// Invalid, each with ok false: RFC 9110 defines Retry-After as a singleton,
// so a repeated field is not a valid value, and the millisecond hints are
// read the same way.
func single(values []string) (s string, v Value, ok bool) {
	switch len(values) {
	case 0:
		return "", Value{Kind: Absent}, false
	case 1:
		return trimOWS(values[0]), Value{}, true
	}
	return "", Value{Kind: Invalid}, false
}

// trimOWS removes leading and trailing SP and HTAB from s.
func trimOWS(s string) string {
	for len(s) > 0 && (s[0] == ' ' || s[0] == '\t') {
		s = s[1:]
	}
	for len(s) > 0 && (s[len(s)-1] == ' ' || s[len(s)-1] == '\t') {
		s = s[:len(s)-1]
	}
	return s
}

// printableASCII reports whether every byte of s is SP or a visible ASCII
// character, rejecting control bytes (including HTAB) and non-ASCII bytes.
func printableASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e {
			return false
		}
	}
	return true
}

// isDigit reports whether c is an ASCII decimal digit.
func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// parseSeconds parses a non-empty string of ASCII digits as a number of
// seconds no greater than maxSeconds. The bound is checked on every step, so
// the accumulator never exceeds maxSeconds*10+9 and cannot overflow.
func parseSeconds(s string) (int64, bool) {
	if s == "" {
		return 0, false
	}
	var n int64
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !isDigit(c) {
			return 0, false
		}
		n = n*10 + int64(c-'0')
		if n > maxSeconds {
			return 0, false
		}
	}
	return n, true
}
