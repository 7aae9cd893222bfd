package retry

import (
	"math"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// now is the fixed wall-clock time used by most tests: Saturday 10 Oct 2026.
var now = time.Date(2026, time.October, 10, 0, 0, 0, 0, time.UTC)

// utc is shorthand for a UTC instant.
func utc(y int, mon time.Month, d, h, m, s int) time.Time {
	return time.Date(y, mon, d, h, m, s, 0, time.UTC)
}

// dateValue is the expected afterValue for an HTTP-date at instant t, seen at n.
func dateValue(t, n time.Time) afterValue {
	return afterValue{Kind: afterDate, Delay: max(0, t.Sub(n)), Time: t}
}

// secondsValue is the expected afterValue for n delay-seconds.
func secondsValue(n int64) afterValue {
	return afterValue{Kind: afterSeconds, Delay: time.Duration(n) * time.Second}
}

var invalid = afterValue{Kind: afterInvalid}

// checkValue compares got with want field by field, comparing Time with
// Equal (the same instant) and additionally requiring Time to be in UTC.
func checkValue(t *testing.T, values []string, n time.Time, got, want afterValue) {
	t.Helper()
	require.Equal(t, want.Kind, got.Kind, "Parse(%q, %v) afterKind", values, n)
	require.Equal(t, want.Delay, got.Delay, "Parse(%q, %v) Delay", values, n)
	require.True(t, got.Time.Equal(want.Time), "Parse(%q, %v) Time %v, want %v", values, n, got.Time, want.Time)
	if !got.Time.IsZero() {
		require.Equal(t, time.UTC, got.Time.Location(), "Parse(%q): Time %v is not in UTC", values, got.Time)
	}
}

type parseCase struct {
	name   string
	values []string
	now    time.Time // zero means the package-level now
	want   afterValue
}

func runParseCases(t *testing.T, cases []parseCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			n := tc.now
			if n.IsZero() {
				n = now
			}
			checkValue(t, tc.values, n, parseRetryAfter(tc.values, n), tc.want)
		})
	}
}

// one wraps a single header value.
func one(s string) []string { return []string{s} }

// TestR5_1_ValidForms checks every accepted form with its exact Time and Delay.
func TestR5_1_ValidForms(t *testing.T) {
	runParseCases(t, []parseCase{
		{"seconds/zero", one("0"), time.Time{}, secondsValue(0)},
		{"seconds/120", one("120"), time.Time{}, secondsValue(120)},
		{"seconds/leading_zeros", one("007"), time.Time{}, secondsValue(7)},
		{"seconds/surrounding_SP", one("  120  "), time.Time{}, secondsValue(120)},
		{"seconds/surrounding_HTAB", one("\t120\t"), time.Time{}, secondsValue(120)},
		{"seconds/mixed_OWS", one(" \t 120 \t "), time.Time{}, secondsValue(120)},
		{"seconds/one_day", one("86400"), time.Time{}, secondsValue(86400)},

		{"imf_fixdate", one("Sat, 10 Oct 2026 00:00:02 GMT"), time.Time{},
			afterValue{Kind: afterDate, Delay: 2 * time.Second, Time: utc(2026, time.October, 10, 0, 0, 2)}},
		{"imf_fixdate/OWS", one(" \tSat, 10 Oct 2026 00:00:02 GMT\t "), time.Time{},
			afterValue{Kind: afterDate, Delay: 2 * time.Second, Time: utc(2026, time.October, 10, 0, 0, 2)}},
		{"imf_fixdate/end_of_year", one("Thu, 31 Dec 2026 23:59:59 GMT"), time.Time{},
			dateValue(utc(2026, time.December, 31, 23, 59, 59), now)},
		{"imf_fixdate/leap_day", one("Tue, 29 Feb 2028 12:00:00 GMT"), time.Time{},
			dateValue(utc(2028, time.February, 29, 12, 0, 0), now)},
		{"imf_fixdate/leap_day_400", one("Tue, 29 Feb 2000 12:00:00 GMT"), time.Time{},
			dateValue(utc(2000, time.February, 29, 12, 0, 0), now)},
		{"imf_fixdate/max_fields", one("Sat, 10 Oct 2026 23:59:59 GMT"), time.Time{},
			afterValue{Kind: afterDate, Delay: 23*time.Hour + 59*time.Minute + 59*time.Second, Time: utc(2026, time.October, 10, 23, 59, 59)}},
		{"imf_fixdate/year_0000", one("Sat, 01 Jan 0000 00:00:00 GMT"), time.Time{},
			dateValue(utc(0, time.January, 1, 0, 0, 0), now)},

		{"rfc850", one("Saturday, 10-Oct-26 00:00:02 GMT"), time.Time{},
			afterValue{Kind: afterDate, Delay: 2 * time.Second, Time: utc(2026, time.October, 10, 0, 0, 2)}},
		{"rfc850/OWS", one("\tSaturday, 10-Oct-26 00:00:02 GMT "), time.Time{},
			afterValue{Kind: afterDate, Delay: 2 * time.Second, Time: utc(2026, time.October, 10, 0, 0, 2)}},
		{"rfc850/wednesday", one("Wednesday, 14-Oct-26 08:30:00 GMT"), time.Time{},
			dateValue(utc(2026, time.October, 14, 8, 30, 0), now)},

		{"asctime", one("Sat Oct 10 00:00:02 2026"), time.Time{},
			afterValue{Kind: afterDate, Delay: 2 * time.Second, Time: utc(2026, time.October, 10, 0, 0, 2)}},
		{"asctime/OWS", one(" Sat Oct 10 00:00:02 2026\t"), time.Time{},
			afterValue{Kind: afterDate, Delay: 2 * time.Second, Time: utc(2026, time.October, 10, 0, 0, 2)}},
		{"asctime/space_padded_day", one("Thu Oct  1 00:00:02 2026"), time.Time{},
			dateValue(utc(2026, time.October, 1, 0, 0, 2), now)},
		{"asctime/zero_padded_day", one("Thu Oct 01 00:00:02 2026"), time.Time{},
			dateValue(utc(2026, time.October, 1, 0, 0, 2), now)},
		{"asctime/future_padded_day", one("Mon Nov  2 10:00:00 2026"), time.Time{},
			afterValue{Kind: afterDate, Delay: 23*24*time.Hour + 10*time.Hour, Time: utc(2026, time.November, 2, 10, 0, 0)}},
	})
}

// TestR5_1_NowInOtherZone checks that the location of now does not matter:
// only the instant is compared, and Time is always UTC.
func TestR5_1_NowInOtherZone(t *testing.T) {
	zone := time.FixedZone("UTC+3", 3*60*60)
	n := now.In(zone)
	for _, s := range []string{
		"Sat, 10 Oct 2026 00:00:02 GMT",
		"Saturday, 10-Oct-26 00:00:02 GMT",
		"Sat Oct 10 00:00:02 2026",
	} {
		got := parseRetryAfter(one(s), n)
		checkValue(t, one(s), n, got, afterValue{Kind: afterDate, Delay: 2 * time.Second, Time: utc(2026, time.October, 10, 0, 0, 2)})
	}
}

// TestR5_1_MonotonicNow checks that a now carrying a monotonic clock reading
// (as returned by time.Now) is handled by wall-clock comparison.
func TestR5_1_MonotonicNow(t *testing.T) {
	n := time.Now()
	target := n.Add(90 * time.Second).UTC().Truncate(time.Second)
	s := target.Format(http.TimeFormat)
	got := parseRetryAfter(one(s), n)
	want := dateValue(target, n.Round(0))
	checkValue(t, one(s), n, got, want)
}

// Layouts of the three HTTP-date forms in time.Format notation.
const (
	layoutIMF     = "Mon, 02 Jan 2006 15:04:05 GMT"
	layoutRFC850  = "Monday, 02-Jan-06 15:04:05 GMT"
	layoutAsctime = "Mon Jan _2 15:04:05 2006"
)

// TestR5_2_AllWeekdaysAndMonths formats every day of 2026 in every form and
// expects each to parse back to the same instant. This covers every weekday
// and month token, and both asctime day paddings.
func TestR5_2_AllWeekdaysAndMonths(t *testing.T) {
	start := utc(2026, time.January, 1, 13, 14, 15)
	for d := start; d.Year() == 2026; d = d.AddDate(0, 0, 1) {
		for _, layout := range []string{layoutIMF, layoutRFC850, layoutAsctime} {
			s := d.Format(layout)
			got, ok := parseHTTPDate(s, now)
			require.False(t, !ok || !got.Equal(d) || got.Location() != time.UTC, "ParseHTTPDate(%q) = %v, %v; want %v, true", s, got, ok, d)
			checkValue(t, one(s), now, parseRetryAfter(one(s), now), dateValue(d, now))
		}
	}
}

// TestR5_2_WeekdayTokens checks that weekday names are exact, case-sensitive,
// of the right length for the form, and agree with the calendar date.
func TestR5_2_WeekdayTokens(t *testing.T) {
	runParseCases(t, []parseCase{
		// Weekday must match the calendar date (10 Oct 2026 is a Saturday).
		{"imf/weekday_mismatch", one("Fri, 10 Oct 2026 00:00:02 GMT"), time.Time{}, invalid},
		{"imf/weekday_mismatch_sun", one("Sun, 10 Oct 2026 00:00:02 GMT"), time.Time{}, invalid},
		{"rfc850/weekday_mismatch", one("Friday, 10-Oct-26 00:00:02 GMT"), time.Time{}, invalid},
		{"asctime/weekday_mismatch", one("Fri Oct 10 00:00:02 2026"), time.Time{}, invalid},
		{"asctime/padded_weekday_mismatch", one("Sat Oct  1 00:00:02 2026"), time.Time{}, invalid},

		// Case-sensitive tokens.
		{"imf/lower_case", one("sat, 10 Oct 2026 00:00:02 GMT"), time.Time{}, invalid},
		{"imf/upper_case", one("SAT, 10 Oct 2026 00:00:02 GMT"), time.Time{}, invalid},
		{"rfc850/lower_case", one("saturday, 10-Oct-26 00:00:02 GMT"), time.Time{}, invalid},
		{"rfc850/upper_case", one("SATURDAY, 10-Oct-26 00:00:02 GMT"), time.Time{}, invalid},
		{"asctime/lower_case", one("sat Oct 10 00:00:02 2026"), time.Time{}, invalid},

		// Wrong length of name for the form.
		{"imf/long_weekday", one("Saturday, 10 Oct 2026 00:00:02 GMT"), time.Time{}, invalid},
		{"rfc850/short_weekday", one("Sat, 10-Oct-26 00:00:02 GMT"), time.Time{}, invalid},
		{"asctime/long_weekday", one("Saturday Oct 10 00:00:02 2026"), time.Time{}, invalid},
		{"rfc850/truncated_weekday", one("Satur, 10-Oct-26 00:00:02 GMT"), time.Time{}, invalid},
		{"imf/two_letter_weekday", one("Sa, 10 Oct 2026 00:00:02 GMT"), time.Time{}, invalid},
		{"imf/abbrev_dot", one("Sat., 10 Oct 2026 00:00:02 GMT"), time.Time{}, invalid},
		{"imf/no_weekday", one("10 Oct 2026 00:00:02 GMT"), time.Time{}, invalid},
		{"rfc850/no_weekday", one(", 10-Oct-26 00:00:02 GMT"), time.Time{}, invalid},
		{"imf/nonsense_weekday", one("Xyz, 10 Oct 2026 00:00:02 GMT"), time.Time{}, invalid},
		{"rfc850/padded_weekday", one(" Saturday, 10-Oct-26 00:00:02 GMT x"), time.Time{}, invalid},
	})
}

// TestR5_2_Fields checks month tokens, clock ranges, day existence, field
// widths, spacing and the GMT literal.
func TestR5_2_Fields(t *testing.T) {
	runParseCases(t, []parseCase{
		// Month tokens.
		{"month/lower", one("Sat, 10 oct 2026 00:00:02 GMT"), time.Time{}, invalid},
		{"month/upper", one("Sat, 10 OCT 2026 00:00:02 GMT"), time.Time{}, invalid},
		{"month/long", one("Sat, 10 October 2026 00:00:02 GMT"), time.Time{}, invalid},
		{"month/unknown", one("Sat, 10 Okt 2026 00:00:02 GMT"), time.Time{}, invalid},
		{"month/numeric", one("Sat, 10 010 2026 00:00:02 GMT"), time.Time{}, invalid},
		{"month/rfc850_lower", one("Saturday, 10-oct-26 00:00:02 GMT"), time.Time{}, invalid},
		{"month/asctime_lower", one("Sat oct 10 00:00:02 2026"), time.Time{}, invalid},

		// Clock ranges: hours 00-23, minutes 00-59, seconds 00-59.
		{"hour/24", one("Sat, 10 Oct 2026 24:00:00 GMT"), time.Time{}, invalid},
		{"minute/60", one("Sat, 10 Oct 2026 00:60:00 GMT"), time.Time{}, invalid},
		{"second/60_leap_second_rejected", one("Sat, 10 Oct 2026 23:59:60 GMT"), time.Time{}, invalid},
		{"second/99", one("Sat, 10 Oct 2026 00:00:99 GMT"), time.Time{}, invalid},
		{"rfc850/hour_24", one("Saturday, 10-Oct-26 24:00:00 GMT"), time.Time{}, invalid},
		{"asctime/second_60", one("Sat Oct 10 23:59:60 2026"), time.Time{}, invalid},

		// Days must exist.
		{"day/00", one("Sat, 00 Oct 2026 00:00:02 GMT"), time.Time{}, invalid},
		{"day/32", one("Sat, 32 Oct 2026 00:00:02 GMT"), time.Time{}, invalid},
		{"day/31_feb", one("Tue, 31 Feb 2026 00:00:02 GMT"), time.Time{}, invalid},
		{"day/31_apr", one("Fri, 31 Apr 2026 00:00:02 GMT"), time.Time{}, invalid},
		{"day/29_feb_common_year", one("Sun, 29 Feb 2026 00:00:02 GMT"), time.Time{}, invalid},
		{"day/29_feb_1900", one("Thu, 29 Feb 1900 00:00:02 GMT"), time.Time{}, invalid},
		{"day/rfc850_31_feb", one("Tuesday, 31-Feb-26 00:00:02 GMT"), time.Time{}, invalid},
		{"day/asctime_0", one("Sat Oct  0 00:00:02 2026"), time.Time{}, invalid},
		{"day/asctime_31_sep", one("Thu Sep 31 00:00:02 2026"), time.Time{}, invalid},

		// IMF-fixdate spacing and widths.
		{"imf/no_space_after_comma", one("Sat,10 Oct 2026 00:00:02 GMT"), time.Time{}, invalid},
		{"imf/double_space_after_comma", one("Sat,  10 Oct 2026 00:00:02 GMT"), time.Time{}, invalid},
		{"imf/no_comma", one("Sat 10 Oct 2026 00:00:02 GMT"), time.Time{}, invalid},
		{"imf/double_space_before_time", one("Sat, 10 Oct 2026  00:00:02 GMT"), time.Time{}, invalid},
		{"imf/double_space_before_GMT", one("Sat, 10 Oct 2026 00:00:02  GMT"), time.Time{}, invalid},
		{"imf/inner_tab", one("Sat,\t10 Oct 2026 00:00:02 GMT"), time.Time{}, invalid},
		{"imf/one_digit_day", one("Thu, 1 Oct 2026 00:00:02 GMT"), time.Time{}, invalid},
		{"imf/space_padded_day", one("Thu,  1 Oct 2026 00:00:02 GMT"), time.Time{}, invalid},
		{"imf/two_digit_year", one("Sat, 10 Oct 26 00:00:02 GMT"), time.Time{}, invalid},
		{"imf/five_digit_year", one("Sat, 10 Oct 02026 00:00:02 GMT"), time.Time{}, invalid},
		{"imf/one_digit_hour", one("Sat, 10 Oct 2026 0:00:02 GMT"), time.Time{}, invalid},
		{"imf/no_seconds", one("Sat, 10 Oct 2026 00:00 GMT"), time.Time{}, invalid},
		{"imf/dash_clock", one("Sat, 10 Oct 2026 00-00-02 GMT"), time.Time{}, invalid},
		{"imf/dashes_in_date", one("Sat, 10-Oct-2026 00:00:02 GMT"), time.Time{}, invalid},
		{"imf/fractional_seconds", one("Sat, 10 Oct 2026 00:00:02.5 GMT"), time.Time{}, invalid},
		{"imf/signed_day", one("Sat, +1 Oct 2026 00:00:02 GMT"), time.Time{}, invalid},

		// RFC 850 spacing and widths.
		{"rfc850/four_digit_year", one("Saturday, 10-Oct-2026 00:00:02 GMT"), time.Time{}, invalid},
		{"rfc850/spaces_in_date", one("Saturday, 10 Oct 26 00:00:02 GMT"), time.Time{}, invalid},
		{"rfc850/one_digit_day", one("Thursday, 1-Oct-26 00:00:02 GMT"), time.Time{}, invalid},
		{"rfc850/no_space_after_comma", one("Saturday,10-Oct-26 00:00:02 GMT"), time.Time{}, invalid},
		{"rfc850/no_comma", one("Saturday 10-Oct-26 00:00:02 GMT"), time.Time{}, invalid},
		{"rfc850/double_space", one("Saturday, 10-Oct-26  00:00:02 GMT"), time.Time{}, invalid},
		{"rfc850/one_digit_year", one("Saturday, 10-Oct-6 00:00:02 GMT"), time.Time{}, invalid},

		// asctime spacing and widths.
		{"asctime/single_space_before_one_digit_day", one("Thu Oct 1 00:00:02 2026"), time.Time{}, invalid},
		{"asctime/space_and_two_digits", one("Thu Oct  01 00:00:02 2026"), time.Time{}, invalid},
		{"asctime/trailing_space_in_day", one("Thu Oct 1  00:00:02 2026"), time.Time{}, invalid},
		{"asctime/comma", one("Sat, Oct 10 00:00:02 2026"), time.Time{}, invalid},
		{"asctime/two_digit_year", one("Sat Oct 10 00:00:02 26"), time.Time{}, invalid},
		{"asctime/double_space_after_weekday", one("Sat  Oct 10 00:00:02 2026"), time.Time{}, invalid},
		{"asctime/double_space_before_year", one("Sat Oct 10 00:00:02  2026"), time.Time{}, invalid},
		{"asctime/zone_suffix_GMT", one("Sat Oct 10 00:00:02 2026 GMT"), time.Time{}, invalid},
		{"asctime/zone_before_year", one("Sat Oct 10 00:00:02 GMT 2026"), time.Time{}, invalid},
		{"asctime/day_month_swapped", one("Sat 10 Oct 00:00:02 2026"), time.Time{}, invalid},

		// "GMT" literal required; other zones invalid.
		{"imf/missing_GMT", one("Sat, 10 Oct 2026 00:00:02"), time.Time{}, invalid},
		{"imf/UTC", one("Sat, 10 Oct 2026 00:00:02 UTC"), time.Time{}, invalid},
		{"imf/+0000", one("Sat, 10 Oct 2026 00:00:02 +0000"), time.Time{}, invalid},
		{"imf/lower_gmt", one("Sat, 10 Oct 2026 00:00:02 gmt"), time.Time{}, invalid},
		{"imf/Z", one("Sat, 10 Oct 2026 00:00:02 Z"), time.Time{}, invalid},
		{"imf/GMT+0", one("Sat, 10 Oct 2026 00:00:02 GMT+0"), time.Time{}, invalid},
		{"imf/EST", one("Sat, 10 Oct 2026 00:00:02 EST"), time.Time{}, invalid},
		{"imf/trailing_garbage", one("Sat, 10 Oct 2026 00:00:02 GMTx"), time.Time{}, invalid},
		{"rfc850/missing_GMT", one("Saturday, 10-Oct-26 00:00:02"), time.Time{}, invalid},
		{"rfc850/UTC", one("Saturday, 10-Oct-26 00:00:02 UTC"), time.Time{}, invalid},
		{"rfc850/+0000", one("Saturday, 10-Oct-26 00:00:02 +0000"), time.Time{}, invalid},
		{"rfc850/lower_gmt", one("Saturday, 10-Oct-26 00:00:02 gmt"), time.Time{}, invalid},
	})
}

// TestR5_3_TwoDigitYear checks the RFC 850 50-year rule and its boundaries.
func TestR5_3_TwoDigitYear(t *testing.T) {
	leapNow := time.Date(2024, time.February, 29, 12, 0, 0, 0, time.UTC) // +50y = 2074-03-01T12:00:00Z
	centuryNow := time.Date(2000, time.January, 1, 0, 0, 0, 0, time.UTC)
	lateNow := time.Date(2060, time.June, 15, 0, 0, 0, 0, time.UTC)
	runParseCases(t, []parseCase{
		{"26_is_2026", one("Saturday, 10-Oct-26 00:00:02 GMT"), time.Time{},
			dateValue(utc(2026, time.October, 10, 0, 0, 2), now)},
		{"27_is_2027", one("Friday, 01-Jan-27 00:00:00 GMT"), time.Time{},
			dateValue(utc(2027, time.January, 1, 0, 0, 0), now)},
		{"75_is_2075_49_years_ahead", one("Thursday, 10-Oct-75 00:00:00 GMT"), time.Time{},
			dateValue(utc(2075, time.October, 10, 0, 0, 0), now)},
		{"80_is_1980", one("Tuesday, 01-Jan-80 00:00:00 GMT"), time.Time{},
			dateValue(utc(1980, time.January, 1, 0, 0, 0), now)},
		{"99_is_1999", one("Friday, 31-Dec-99 23:59:59 GMT"), time.Time{},
			dateValue(utc(1999, time.December, 31, 23, 59, 59), now)},
		{"00_is_2000_leap_day", one("Tuesday, 29-Feb-00 00:00:00 GMT"), time.Time{},
			dateValue(utc(2000, time.February, 29, 0, 0, 0), now)},

		// Boundary: exactly now+50y stays in now's century; one second
		// later moves to the previous century.
		{"boundary/one_second_before", one("Friday, 09-Oct-76 23:59:59 GMT"), time.Time{},
			dateValue(utc(2076, time.October, 9, 23, 59, 59), now)},
		{"boundary/exactly_50_years", one("Saturday, 10-Oct-76 00:00:00 GMT"), time.Time{},
			dateValue(utc(2076, time.October, 10, 0, 0, 0), now)},
		{"boundary/one_second_after", one("Sunday, 10-Oct-76 00:00:01 GMT"), time.Time{},
			dateValue(utc(1976, time.October, 10, 0, 0, 1), now)},
		// The weekday is checked against the resolved year.
		{"boundary/one_second_after_with_2076_weekday", one("Saturday, 10-Oct-76 00:00:01 GMT"), time.Time{}, invalid},
		{"boundary/exactly_50_years_with_1976_weekday", one("Sunday, 10-Oct-76 00:00:00 GMT"), time.Time{}, invalid},

		// now.AddDate(50, 0, 0) from 29 Feb 2024 12:00 is 1 Mar 2074 12:00.
		{"leap_now/exactly_50_years", one("Thursday, 01-Mar-74 12:00:00 GMT"), leapNow,
			dateValue(utc(2074, time.March, 1, 12, 0, 0), leapNow)},
		{"leap_now/one_second_after", one("Friday, 01-Mar-74 12:00:01 GMT"), leapNow,
			dateValue(utc(1974, time.March, 1, 12, 0, 1), leapNow)},

		{"century_now/exactly_50_years", one("Saturday, 01-Jan-50 00:00:00 GMT"), centuryNow,
			dateValue(utc(2050, time.January, 1, 0, 0, 0), centuryNow)},
		{"century_now/one_second_after", one("Sunday, 01-Jan-50 00:00:01 GMT"), centuryNow,
			dateValue(utc(1950, time.January, 1, 0, 0, 1), centuryNow)},

		// The candidate year is always in now's century: a past year in
		// that century is kept even if it is decades ago.
		{"late_now/10_is_2010", one("Tuesday, 15-Jun-10 00:00:00 GMT"), lateNow,
			dateValue(utc(2010, time.June, 15, 0, 0, 0), lateNow)},
		{"late_now/99_is_2099", one("Monday, 15-Jun-99 00:00:00 GMT"), lateNow,
			dateValue(utc(2099, time.June, 15, 0, 0, 0), lateNow)},
	})
}

// TestR5_3_NowCenturyUsesUTC checks that the century of now is taken from its
// UTC instant, not from its location's wall clock.
func TestR5_3_NowCenturyUsesUTC(t *testing.T) {
	// 2000-01-01T01:00+03:00 is 1999-12-31T22:00Z, in the 1900s.
	n := time.Date(2000, time.January, 1, 1, 0, 0, 0, time.FixedZone("UTC+3", 3*60*60))
	s := "Monday, 01-Jan-01 00:00:00 GMT" // 2001-01-01 is a Monday, 1901-01-01 a Tuesday.
	checkValue(t, one(s), n, parseRetryAfter(one(s), n), invalid)
	s = "Tuesday, 01-Jan-01 00:00:00 GMT"
	checkValue(t, one(s), n, parseRetryAfter(one(s), n), dateValue(utc(1901, time.January, 1, 0, 0, 0), n))
}

// TestR5_4_PastAndPresentDates checks that past dates, and now itself, have
// zero remaining delay.
func TestR5_4_PastAndPresentDates(t *testing.T) {
	runParseCases(t, []parseCase{
		{"past/one_second", one("Fri, 09 Oct 2026 23:59:59 GMT"), time.Time{},
			afterValue{Kind: afterDate, Delay: 0, Time: utc(2026, time.October, 9, 23, 59, 59)}},
		{"past/rfc850", one("Friday, 09-Oct-26 23:59:59 GMT"), time.Time{},
			afterValue{Kind: afterDate, Delay: 0, Time: utc(2026, time.October, 9, 23, 59, 59)}},
		{"past/asctime", one("Thu Oct  1 00:00:02 2026"), time.Time{},
			afterValue{Kind: afterDate, Delay: 0, Time: utc(2026, time.October, 1, 0, 0, 2)}},
		{"past/long_ago", one("Sun, 06 Nov 1994 08:49:37 GMT"), time.Time{},
			afterValue{Kind: afterDate, Delay: 0, Time: utc(1994, time.November, 6, 8, 49, 37)}},
		{"present/exactly_now", one("Sat, 10 Oct 2026 00:00:00 GMT"), time.Time{},
			afterValue{Kind: afterDate, Delay: 0, Time: now}},
		{"future/one_second", one("Sat, 10 Oct 2026 00:00:01 GMT"), time.Time{},
			afterValue{Kind: afterDate, Delay: time.Second, Time: utc(2026, time.October, 10, 0, 0, 1)}},
	})
}

// TestR5_4_FarFutureDateSaturates checks that a date more than ~292 years
// ahead saturates Delay at the largest Duration instead of overflowing.
func TestR5_4_FarFutureDateSaturates(t *testing.T) {
	s := "Fri, 31 Dec 9999 23:59:59 GMT"
	checkValue(t, one(s), now, parseRetryAfter(one(s), now), afterValue{
		Kind: afterDate, Delay: time.Duration(math.MaxInt64), Time: utc(9999, time.December, 31, 23, 59, 59),
	})
}

// TestR5_4_Invalid checks the listed invalid inputs, joined and repeated
// header values, and non-ASCII and control bytes.
func TestR5_4_Invalid(t *testing.T) {
	runParseCases(t, []parseCase{
		{"iso8601", one("2026-10-10T00:00:02Z"), time.Time{}, invalid},
		{"iso8601_offset", one("2026-10-10T00:00:02+00:00"), time.Time{}, invalid},
		{"locale_numeric", one("10/10/2026"), time.Time{}, invalid},
		{"locale_long", one("Saturday, October 10, 2026"), time.Time{}, invalid},
		{"rfc1123z", one("Sat, 10 Oct 2026 00:00:02 +0000"), time.Time{}, invalid},
		{"fractional_seconds", one("1.5"), time.Time{}, invalid},
		{"fractional_zero", one("1.0"), time.Time{}, invalid},
		{"negative_seconds", one("-1"), time.Time{}, invalid},
		{"negative_zero", one("-0"), time.Time{}, invalid},
		{"plus_sign", one("+5"), time.Time{}, invalid},
		{"exponent", one("1e3"), time.Time{}, invalid},
		{"hex", one("0x10"), time.Time{}, invalid},
		{"unit_suffix", one("5s"), time.Time{}, invalid},
		{"iso_duration", one("PT5S"), time.Time{}, invalid},
		{"inner_space", one("12 0"), time.Time{}, invalid},
		{"semicolon", one("120;"), time.Time{}, invalid},
		{"word", one("soon"), time.Time{}, invalid},
		{"empty", one(""), time.Time{}, invalid},
		{"space_only", one(" "), time.Time{}, invalid},
		{"tab_only", one("\t"), time.Time{}, invalid},
		{"OWS_only", one(" \t \t"), time.Time{}, invalid},

		// Joined duplicates and multiple field values.
		{"joined/seconds", one("1, 2"), time.Time{}, invalid},
		{"joined/seconds_no_space", one("1,2"), time.Time{}, invalid},
		{"joined/same_seconds", one("120, 120"), time.Time{}, invalid},
		{"joined/trailing_comma", one("120,"), time.Time{}, invalid},
		{"joined/leading_comma", one(",120"), time.Time{}, invalid},
		{"joined/imf", one("Sat, 10 Oct 2026 00:00:02 GMT, Sat, 10 Oct 2026 00:00:03 GMT"), time.Time{}, invalid},
		{"joined/imf_and_seconds", one("Sat, 10 Oct 2026 00:00:02 GMT, 5"), time.Time{}, invalid},
		{"joined/seconds_and_imf", one("5, Sat, 10 Oct 2026 00:00:02 GMT"), time.Time{}, invalid},
		{"joined/rfc850", one("Saturday, 10-Oct-26 00:00:02 GMT, Saturday, 10-Oct-26 00:00:02 GMT"), time.Time{}, invalid},
		{"multiple/two_seconds", []string{"1", "2"}, time.Time{}, invalid},
		{"multiple/identical", []string{"120", "120"}, time.Time{}, invalid},
		{"multiple/with_empty", []string{"", "120"}, time.Time{}, invalid},
		{"multiple/dates", []string{"Sat, 10 Oct 2026 00:00:02 GMT", "Sat, 10 Oct 2026 00:00:02 GMT"}, time.Time{}, invalid},

		// Non-ASCII and control bytes.
		{"nul", one("\x00"), time.Time{}, invalid},
		{"trailing_nul", one("120\x00"), time.Time{}, invalid},
		{"crlf", one("120\r\n"), time.Time{}, invalid},
		{"lf_inside", one("1\n20"), time.Time{}, invalid},
		{"vertical_tab", one("\v120"), time.Time{}, invalid},
		{"form_feed", one("120\f"), time.Time{}, invalid},
		{"del", one("120\x7f"), time.Time{}, invalid},
		{"nbsp", one("\u00a0120"), time.Time{}, invalid},
		{"fullwidth_digits", one("\uff11\uff12"), time.Time{}, invalid},
		{"arabic_indic_digits", one("\u0661\u0662"), time.Time{}, invalid},
		{"invalid_utf8", one("\xff120"), time.Time{}, invalid},
		{"date_with_crlf", one("Sat, 10 Oct 2026 00:00:02 GMT\r\n"), time.Time{}, invalid},
		{"date_with_nbsp", one("Sat,\u00a010 Oct 2026 00:00:02 GMT"), time.Time{}, invalid},
		{"date_non_ascii_weekday", one("Sät, 10 Oct 2026 00:00:02 GMT"), time.Time{}, invalid},
	})
}

// TestR5_4_Overflow checks the delay-seconds overflow bound.
func TestR5_4_Overflow(t *testing.T) {
	// math.MaxInt64 / int64(time.Second) == 9223372036.
	runParseCases(t, []parseCase{
		{"largest_safe", one("9223372036"), time.Time{}, secondsValue(9223372036)},
		{"largest_safe_leading_zeros", one("0000000000000000000000009223372036"), time.Time{}, secondsValue(9223372036)},
		{"smallest_overflow", one("9223372037"), time.Time{}, invalid},
		{"ten_billion", one("10000000000"), time.Time{}, invalid},
		{"max_int64", one("9223372036854775807"), time.Time{}, invalid},
		{"max_uint64_plus_one", one("18446744073709551616"), time.Time{}, invalid},
		{"thirty_digits", one("123456789012345678901234567890"), time.Time{}, invalid},
		{"many_nines", one(strings.Repeat("9", 1000)), time.Time{}, invalid},
	})
	if got := parseRetryAfter(one("9223372036"), now).Delay; got != 9223372036*time.Second || got < 0 {
		t.Fatalf("largest safe delay = %v", got)
	}
}

// TestR5_5_ExplicitResult checks each afterKind and its zero fields.
func TestR5_5_ExplicitResult(t *testing.T) {
	for _, tc := range []struct {
		name   string
		values []string
		want   afterValue
	}{
		{"absent/nil", nil, afterValue{Kind: afterAbsent}},
		{"absent/empty_slice", []string{}, afterValue{Kind: afterAbsent}},
		{"invalid", one("nope"), afterValue{Kind: afterInvalid}},
		{"seconds", one("3"), afterValue{Kind: afterSeconds, Delay: 3 * time.Second}},
		{"date", one("Sat, 10 Oct 2026 00:00:03 GMT"),
			afterValue{Kind: afterDate, Delay: 3 * time.Second, Time: utc(2026, time.October, 10, 0, 0, 3)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := parseRetryAfter(tc.values, now)
			checkValue(t, tc.values, now, got, tc.want)
			require.False(t, tc.want.Kind != afterDate && !got.Time.IsZero(), "Time = %v, want zero for %v", got.Time, got.Kind)
		})
	}
}

// TestR5_5_FromHeader exercises Parse with http.Header.Values, including a
// header field repeated on the wire.
func TestR5_5_FromHeader(t *testing.T) {
	h := http.Header{}
	checkValue(t, nil, now, parseRetryAfter(h.Values("Retry-After"), now), afterValue{Kind: afterAbsent})
	h.Set("Retry-After", "30")
	checkValue(t, h.Values("Retry-After"), now, parseRetryAfter(h.Values("Retry-After"), now), secondsValue(30))
	h.Add("Retry-After", "30")
	checkValue(t, h.Values("Retry-After"), now, parseRetryAfter(h.Values("Retry-After"), now), invalid)
}

// TestKindString checks afterKind.String, including out-of-range values.
func TestKindString(t *testing.T) {
	for k, want := range map[afterKind]string{
		afterAbsent:       "absent",
		afterInvalid:      "invalid",
		afterSeconds:      "seconds",
		afterDate:         "date",
		afterMilliseconds: "milliseconds",
		-1:                "Kind(-1)",
		5:                 "Kind(5)",
	} {
		if got := k.String(); got != want {
			t.Errorf("Kind(%d).String() = %q, want %q", int(k), got, want)
		}
	}
}

// TestParseHTTPDateStrict checks parseHTTPDate directly: it accepts exactly
// one HTTP-date, without surrounding whitespace, and returns the zero time on
// failure.
func TestParseHTTPDateStrict(t *testing.T) {
	want := utc(2026, time.October, 10, 0, 0, 2)
	for _, s := range []string{
		"Sat, 10 Oct 2026 00:00:02 GMT",
		"Saturday, 10-Oct-26 00:00:02 GMT",
		"Sat Oct 10 00:00:02 2026",
	} {
		got, ok := parseHTTPDate(s, now)
		assert.False(t, !ok || !got.Equal(want) || got.Location() != time.UTC, "ParseHTTPDate(%q) = %v, %v; want %v, true", s, got, ok, want)
		for _, bad := range []string{" " + s, s + " ", "\t" + s, s + "\r\n"} {
			if got, ok := parseHTTPDate(bad, now); ok || !got.IsZero() {
				t.Errorf("ParseHTTPDate(%q) = %v, %v; want zero, false", bad, got, ok)
			}
		}
	}
	for _, bad := range []string{"", "0", "120", ",", "Sat,", "Saturday, ", strings.Repeat("x", 29), strings.Repeat(",", 24), strings.Repeat(" ", 24)} {
		if got, ok := parseHTTPDate(bad, now); ok || !got.IsZero() {
			t.Errorf("ParseHTTPDate(%q) = %v, %v; want zero, false", bad, got, ok)
		}
	}
}

// TestAgreesWithNetHTTP cross-checks IMF-fixdate and asctime dates against
// net/http.ParseTime, which is more lenient but must agree on every date this
// package accepts. (RFC 850 is excluded: net/http uses a different
// two-digit-year pivot.)
func TestAgreesWithNetHTTP(t *testing.T) {
	start := utc(1999, time.December, 25, 23, 59, 59)
	for d := start; d.Before(utc(2001, time.March, 5, 0, 0, 0)); d = d.Add(25*time.Hour + 7*time.Minute + 11*time.Second) {
		for _, layout := range []string{layoutIMF, layoutAsctime} {
			s := d.Format(layout)
			ours, ok := parseHTTPDate(s, now)
			theirs, err := http.ParseTime(s)
			require.False(t, !ok || err != nil || !ours.Equal(theirs), "%q: ours %v, %v; net/http %v, %v", s, ours, ok, theirs, err)
		}
	}
}

// TestNoAllocs checks that Parse does not allocate.
func TestNoAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts are not reliable under the race detector")
	}
	for _, s := range []string{
		"Sat, 10 Oct 2026 00:00:02 GMT",
		"Saturday, 10-Oct-26 00:00:02 GMT",
		"Sat Oct 10 00:00:02 2026",
		"120",
		"1, 2",
	} {
		values := one(s)
		if n := testing.AllocsPerRun(100, func() { parseRetryAfter(values, now) }); n != 0 {
			t.Errorf("Parse(%q) allocates %v times per run, want 0", s, n)
		}
	}
}

// TestConcurrentUse runs Parse from many goroutines; with -race it checks
// that the package-level tables are only read.
func TestConcurrentUse(t *testing.T) {
	inputs := []string{"120", "Sat, 10 Oct 2026 00:00:02 GMT", "Saturday, 10-Oct-26 00:00:02 GMT", "Sat Oct 10 00:00:02 2026", "bad"}
	done := make(chan struct{})
	for i := range 8 {
		go func() {
			defer func() { done <- struct{}{} }()
			for j := range 200 {
				s := inputs[(i+j)%len(inputs)]
				_ = parseRetryAfter(one(s), now)
			}
		}()
	}
	for range 8 {
		<-done
	}
}
