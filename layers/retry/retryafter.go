package retry

// This file and retryafter_date.go and retryafter_millis.go implement a strict parser for the HTTP Retry-After
// response header as defined by RFC 9110 §10.2.3, with HTTP-dates as defined
// by RFC 9110 §5.6.7.
//
// # Accepted forms
//
// A Retry-After value is either delay-seconds or an HTTP-date. Optional
// whitespace (SP and HTAB) around the whole header value is ignored;
// nothing else is tolerated.
//
// Delay-seconds is one or more ASCII digits, for example "0" or "120".
// Leading zeros are allowed because the grammar (1*DIGIT) allows them. Signs,
// fractions and any other character make the value invalid, as does a number
// of seconds too large to be represented as a time.Duration; the overflow is
// detected without performing an overflowing multiplication.
//
// An HTTP-date takes one of three forms, each of which denotes UTC:
//
//	IMF-fixdate  Sat, 10 Oct 2026 00:00:02 GMT
//	RFC 850      Saturday, 10-Oct-26 00:00:02 GMT
//	asctime      Sat Oct 10 00:00:02 2026
//
// Every field must have exactly the width and separators the RFC 9110
// grammar prescribes: the IMF-fixdate day has two digits and the year four;
// the RFC 850 day and year have two digits each; the asctime day occupies two
// characters and is either two digits or a space followed by one digit
// ("Sat Oct  1 00:00:02 2026"), and its year has four digits. The literal
// "GMT" is required for IMF-fixdate and RFC 850 dates and no zone may follow
// an asctime date; other zone spellings such as "UTC" or "+0000" are invalid.
//
// Weekday and month names are exact and case-sensitive: "Mon" through "Sun"
// for IMF-fixdate and asctime, "Monday" through "Sunday" for RFC 850, and
// "Jan" through "Dec" for the month. Hours range over 00-23, minutes over
// 00-59 and seconds over 00-59; the leap second 60 that RFC 9110 permits
// syntactically is rejected because time.Time cannot represent it. The day
// must exist in the given month and year, so 31 Feb or 29 Feb of a common
// year is invalid.
//
// # Weekday decision
//
// RFC 9110 does not require recipients to check that the weekday agrees with
// the date. This package does: a weekday that does not match the calendar
// date, such as "Fri, 10 Oct 2026 00:00:02 GMT" (10 October 2026 is a
// Saturday), makes the value invalid. A contradictory date is a sign of a
// broken or hand-built header, and guessing which half is right would make
// retry timing unpredictable.
//
// # Two-digit years
//
// An RFC 850 date carries only the last two digits of its year. The parser
// first places the year in the century of now (for now in 2026, "26" is 2026
// and "75" is 2075). If the resulting timestamp is more than 50 years after
// now, that is, strictly after now.AddDate(50, 0, 0), the previous century is
// used instead, which is the most recent past year with the same last two
// digits ("80" is 1980 for now in 2026). The weekday and the day-of-month are
// checked against the year chosen by this rule.
//
// # Results
//
// parseRetryAfter returns an explicit afterValue whose afterKind is afterAbsent (no header), afterInvalid
// (a header that is not exactly one valid value), afterSeconds or afterDate. More than
// one header field value, a comma-joined list of values, an empty or
// whitespace-only value, and any non-ASCII or control byte other than the
// surrounding whitespace all yield afterInvalid. For afterDate, Delay is the time
// remaining until the date, clamped to zero for dates in the past and
// saturated at the largest time.Duration for dates too far in the future.
//
// # Concurrency
//
// parseRetryAfter and parseHTTPDate are pure functions: they read only their arguments
// and immutable package-level tables, never consult the system clock, and
// never panic. They are safe for concurrent use by multiple goroutines and do
// not allocate.

import (
	"math"
	"strconv"
	"time"
)

// afterKind says which form a Retry-After value took.
type afterKind int

const (
	// afterAbsent means the response carried no Retry-After header.
	afterAbsent afterKind = iota
	// afterInvalid means a Retry-After header was present but its value is not valid.
	afterInvalid
	// afterSeconds means the value was a non-negative integer number of seconds.
	afterSeconds
	// afterDate means the value was an HTTP-date.
	afterDate
	// afterMilliseconds means the value was a millisecond retry hint (see
	// parseRetryAfterMillis); parseRetryAfter never returns it.
	afterMilliseconds
)

// String returns the lower-case name of k: "absent", "invalid", "seconds",
// "date" or "milliseconds", or "Kind(n)" for a value outside the defined
// range.
func (k afterKind) String() string {
	switch k {
	case afterAbsent:
		return "absent"
	case afterInvalid:
		return "invalid"
	case afterSeconds:
		return "seconds"
	case afterDate:
		return "date"
	case afterMilliseconds:
		return "milliseconds"
	}
	return "Kind(" + strconv.Itoa(int(k)) + ")"
}

// afterValue is the explicit result of parsing a Retry-After header.
type afterValue struct {
	// Kind says which form the header took.
	Kind afterKind
	// Delay is the remaining delay: 0 for afterAbsent and afterInvalid, the number of
	// seconds for afterSeconds, and max(0, Time.Sub(now)) for afterDate.
	Delay time.Duration
	// Time is the parsed instant in UTC for afterDate and the zero time otherwise.
	Time time.Time
}

// maxSeconds is the largest delay-seconds value whose time.Duration does not
// overflow.
const maxSeconds = math.MaxInt64 / int64(time.Second)

// parseRetryAfter interprets the Retry-After header values of one response, as
// returned by http.Header.Values("Retry-After"), at wall-clock time now.
//
// No values yields afterAbsent. More than one value, or a single value that is
// not exactly one delay-seconds or HTTP-date after trimming surrounding
// SP and HTAB, yields afterInvalid.
func parseRetryAfter(values []string, now time.Time) afterValue {
	s, v, ok := single(values)
	if !ok {
		return v
	}
	if s == "" || !printableASCII(s) {
		return afterValue{Kind: afterInvalid}
	}
	if isDigit(s[0]) {
		n, ok := parseSeconds(s)
		if !ok {
			return afterValue{Kind: afterInvalid}
		}
		return afterValue{Kind: afterSeconds, Delay: time.Duration(n) * time.Second}
	}
	t, ok := parseHTTPDate(s, now)
	if !ok {
		return afterValue{Kind: afterInvalid}
	}
	return afterValue{Kind: afterDate, Delay: max(0, t.Sub(now)), Time: t}
}

// single returns the one value of a singleton header field, trimmed of
// surrounding SP and HTAB, and ok. No values are afterAbsent and more than one
// afterInvalid, each with ok false: RFC 9110 defines Retry-After as a singleton,
// so a repeated field is not a valid value, and the millisecond hints are
// read the same way.
func single(values []string) (s string, v afterValue, ok bool) {
	switch len(values) {
	case 0:
		return "", afterValue{Kind: afterAbsent}, false
	case 1:
		return trimOWS(values[0]), afterValue{}, true
	}
	return "", afterValue{Kind: afterInvalid}, false
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
