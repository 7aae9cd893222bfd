// Package httpdate implements a strict parser for the HTTP Retry-After
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
// Parse returns an explicit Value whose Kind is Absent (no header), Invalid
// (a header that is not exactly one valid value), Seconds or Date. More than
// one header field value, a comma-joined list of values, an empty or
// whitespace-only value, and any non-ASCII or control byte other than the
// surrounding whitespace all yield Invalid. For Date, Delay is the time
// remaining until the date, clamped to zero for dates in the past and
// saturated at the largest time.Duration for dates too far in the future.
//
// # Concurrency
//
// Parse and ParseHTTPDate are pure functions: they read only their arguments
// and immutable package-level tables, never consult the system clock, and
// never panic. They are safe for concurrent use by multiple goroutines and do
// not allocate.
package httpdate
