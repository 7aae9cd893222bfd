package retry

import (
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// fuzzSeeds covers every valid form and every class of invalid input that
// the unit tests name.
var fuzzSeeds = []string{
	"0", "120", "007", " \t120\t ", "9223372036", "9223372037",
	"123456789012345678901234567890", "1.5", "-1", "+5", "", " ", "\t",
	"1, 2", "1\n2", "120\r\n", "\x00", "\u00a0120", "\xff",
	"Sat, 10 Oct 2026 00:00:02 GMT",
	"Saturday, 10-Oct-26 00:00:02 GMT",
	"Sat Oct 10 00:00:02 2026",
	"Thu Oct  1 00:00:02 2026",
	"Thu Oct 01 00:00:02 2026",
	"Fri, 10 Oct 2026 00:00:02 GMT",
	"sat, 10 Oct 2026 00:00:02 GMT",
	"Saturday, 10 Oct 2026 00:00:02 GMT",
	"Sat, 10-Oct-26 00:00:02 GMT",
	"Sat, 10 Okt 2026 00:00:02 GMT",
	"Sat,  10 Oct 2026 00:00:02 GMT",
	"Sat, 10 Oct 2026 00:00:02",
	"Sat, 10 Oct 2026 00:00:02 UTC",
	"Sat, 10 Oct 2026 00:00:02 +0000",
	"Sat, 10 Oct 2026 23:59:60 GMT",
	"Tue, 31 Feb 2026 00:00:02 GMT",
	"Tue, 29 Feb 2028 12:00:00 GMT",
	"Fri, 31 Dec 9999 23:59:59 GMT",
	"Thursday, 10-Oct-75 00:00:00 GMT",
	"Tuesday, 01-Jan-80 00:00:00 GMT",
	"Saturday, 10-Oct-76 00:00:00 GMT",
	"Sunday, 10-Oct-76 00:00:01 GMT",
	"2026-10-10T00:00:02Z",
	"10/10/2026",
	"Saturday, October 10, 2026",
	"Sat, 10 Oct 2026 00:00:02 GMT, Sat, 10 Oct 2026 00:00:03 GMT",
	"Sat, 10 Oct 2026 00:00:02 GMT\nSat, 10 Oct 2026 00:00:02 GMT",
}

// fuzzNows are the wall-clock times each input is parsed at: the fixed test
// time, a leap day (AddDate normalisation), a time late in a century, and a
// non-UTC location.
var fuzzNows = []time.Time{
	now,
	time.Date(2024, time.February, 29, 12, 0, 0, 0, time.UTC),
	time.Date(2099, time.December, 31, 23, 59, 59, 999999999, time.UTC),
	time.Date(2000, time.January, 1, 1, 0, 0, 0, time.FixedZone("UTC+3", 3*60*60)),
}

// FuzzParse checks that Parse never panics and that every result satisfies
// the invariants in checkInvariants.
func FuzzParseRetryAfter(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, n := range fuzzNows {
			// The input as one field value, and split on LF as several
			// field values (exercising the duplicate-header path).
			checkInvariants(t, []string{s}, n)
			checkInvariants(t, strings.Split(s, "\n"), n)
			// parseHTTPDate on its own must not panic and must return the
			// zero time on failure.
			if got, ok := parseHTTPDate(s, n); !ok && !got.IsZero() {
				t.Fatalf("ParseHTTPDate(%q) = %v, false; want zero time", s, got)
			}
		}
	})
}

// checkInvariants asserts the properties every Parse result must have.
func checkInvariants(t *testing.T, values []string, n time.Time) {
	t.Helper()
	v := parseRetryAfter(values, n)
	require.False(t, v.Kind < afterAbsent || v.Kind > afterDate, "Parse(%q): afterKind %d out of range", values, int(v.Kind))
	require.False(t, v.Delay < 0, "Parse(%q): negative Delay %v", values, v.Delay)
	require.False(t, (v.Kind == afterAbsent) != (len(values) == 0), "Parse(%q): afterKind %v with %d values", values, v.Kind, len(values))
	require.False(t, v.Kind != afterAbsent && len(values) != 1 && v.Kind != afterInvalid, "Parse(%q): afterKind %v for %d values, want invalid", values, v.Kind, len(values))
	require.False(t, v.Kind != afterDate && !v.Time.IsZero(), "Parse(%q): afterKind %v with non-zero Time %v", values, v.Kind, v.Time)
	require.False(t, (v.Kind == afterAbsent || v.Kind == afterInvalid) && v.Delay != 0, "Parse(%q): afterKind %v with Delay %v", values, v.Kind, v.Delay)
	if len(values) == 1 {
		// Extra surrounding whitespace never changes the result.
		padded := parseRetryAfter([]string{" \t" + values[0] + "\t "}, n)
		require.True(t, sameValue(v, padded), "Parse(%q) = %+v but padded value gives %+v", values, v, padded)
	}

	switch v.Kind {
	case afterSeconds:
		s := strings.Trim(values[0], " \t")
		secs, err := strconv.ParseUint(s, 10, 64)
		require.False(t, err != nil || s[0] == '+' || time.Duration(secs)*time.Second != v.Delay || v.Delay/time.Second != time.Duration(secs), "Parse(%q): afterSeconds with Delay %v, strconv says %d, %v", values, v.Delay, secs, err)
		// The canonical decimal form re-parses to the same value.
		again := parseRetryAfter([]string{strconv.FormatUint(secs, 10)}, n)
		require.True(t, sameValue(v, again), "Parse(%q) = %+v; canonical form gives %+v", values, v, again)
	case afterDate:
		require.False(t, v.Time.Location() != time.UTC, "Parse(%q): Time %v not in UTC", values, v.Time)
		if want := max(0, v.Time.Sub(n)); v.Delay != want {
			t.Fatalf("Parse(%q): Delay %v, want max(0, Time-now) = %v", values, v.Delay, want)
		}
		require.False(t, v.Time.Nanosecond() != 0, "Parse(%q): Time %v has sub-second part", values, v.Time)
		s := strings.Trim(values[0], " \t")
		if got, ok := parseHTTPDate(s, n); !ok || !got.Equal(v.Time) {
			t.Fatalf("ParseHTTPDate(%q) = %v, %v; Parse gave %v", s, got, ok, v.Time)
		}
		// Re-formatting as IMF-fixdate and asctime gives the same instant.
		if y := v.Time.Year(); y >= 0 && y <= 9999 {
			for _, layout := range []string{layoutIMF, layoutAsctime} {
				f := v.Time.Format(layout)
				again := parseRetryAfter([]string{f}, n)
				require.True(t, sameValue(v, again), "Parse(%q) = %+v; re-formatted %q gives %+v", values, v, f, again)
			}
		}
		// Every IMF-fixdate or asctime date accepted here is also accepted,
		// with the same meaning, by the more lenient net/http parser.
		if !strings.Contains(s, "-") {
			theirs, err := http.ParseTime(s)
			require.False(t, err != nil || !theirs.Equal(v.Time), "Parse(%q) = %v; net/http.ParseTime gives %v, %v", values, v.Time, theirs, err)
		}
	}
}

// sameValue reports whether a and b are the same result.
func sameValue(a, b afterValue) bool {
	return a.Kind == b.Kind && a.Delay == b.Delay && a.Time.Equal(b.Time)
}
