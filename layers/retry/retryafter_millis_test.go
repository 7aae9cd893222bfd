package retry

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestParseMillis covers the forms OpenAI (retry-after-ms) and Azure OpenAI
// (x-ms-retry-after-ms) send, and every class of invalid value.
func TestParseMillis(t *testing.T) {
	for _, tc := range []struct {
		in   []string
		kind afterKind
		d    time.Duration
	}{
		{nil, afterAbsent, 0},
		{[]string{"20"}, afterMilliseconds, 20 * time.Millisecond},
		{[]string{"0"}, afterMilliseconds, 0},
		{[]string{"1500"}, afterMilliseconds, 1500 * time.Millisecond},
		{[]string{" 250\t"}, afterMilliseconds, 250 * time.Millisecond},
		{[]string{"12.5"}, afterMilliseconds, 12500 * time.Microsecond},
		{[]string{"0.000001"}, afterMilliseconds, time.Nanosecond},
		{[]string{"0.0000001"}, afterMilliseconds, time.Nanosecond}, // rounded up, never shortened
		{[]string{"1.0000000"}, afterMilliseconds, time.Millisecond},
		{[]string{"9223372036854"}, afterMilliseconds, 9223372036854 * time.Millisecond},
		{[]string{"9223372036855"}, afterInvalid, 0},
		{[]string{"9223372036854.775807"}, afterMilliseconds, time.Duration(1<<63 - 1)},
		{[]string{"9223372036854.775808"}, afterInvalid, 0},
		{[]string{""}, afterInvalid, 0},
		{[]string{"-5"}, afterInvalid, 0},
		{[]string{"+5"}, afterInvalid, 0},
		{[]string{"1e3"}, afterInvalid, 0},
		{[]string{".5"}, afterInvalid, 0},
		{[]string{"5."}, afterInvalid, 0},
		{[]string{"5.5.5"}, afterInvalid, 0},
		{[]string{"20ms"}, afterInvalid, 0},
		{[]string{"2 0"}, afterInvalid, 0},
		{[]string{"20", "30"}, afterInvalid, 0},
		{[]string{"Sat, 10 Oct 2026 00:00:02 GMT"}, afterInvalid, 0},
	} {
		got := parseRetryAfterMillis(tc.in)
		assert.False(t, got.Kind != tc.kind || got.Delay != tc.d || !got.Time.IsZero(), "ParseMillis(%q) = %v %v %v; want %v %v", tc.in, got.Kind, got.Delay, got.Time, tc.kind, tc.d)
	}
}

// FuzzParseMillis checks that parseRetryAfterMillis never panics, never returns a
// negative delay, agrees with strconv on whole numbers, and never shortens
// the value it parsed.
func FuzzParseRetryAfterMillis(f *testing.F) {
	for _, s := range []string{"20", "0", "12.5", "0.0000001", "9223372036854", "9223372036855", "-5", "1e3", ".5", "5.", "", " 7 ", "20\n30", "\xff"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v := parseRetryAfterMillis([]string{s})
		require.False(t, v.Delay < 0 || !v.Time.IsZero(), "ParseMillis(%q) = %+v", s, v)
		require.False(t, v.Kind != afterMilliseconds && v.Kind != afterInvalid, "ParseMillis(%q): kind %v", s, v.Kind)
		require.False(t, v.Kind == afterInvalid && v.Delay != 0, "ParseMillis(%q): invalid with delay %v", s, v.Delay)
		trimmed := strings.Trim(s, " \t")
		if n, err := strconv.ParseUint(trimmed, 10, 63); err == nil && trimmed[0] != '+' && n <= uint64(1<<63-1)/uint64(time.Millisecond) {
			require.False(t, v.Kind != afterMilliseconds || v.Delay != time.Duration(n)*time.Millisecond, "ParseMillis(%q) = %+v; want %d ms", s, v, n)
		}
		if v.Kind == afterMilliseconds {
			if fl, err := strconv.ParseFloat(trimmed, 64); err != nil || float64(v.Delay) < fl*float64(time.Millisecond)*(1-1e-12) {
				t.Fatalf("ParseMillis(%q) = %v, below strconv's %v ms (%v)", s, v.Delay, fl, err)
			}
		}
		for _, more := range [][]string{{s, s}, {s, "1"}} {
			if w := parseRetryAfterMillis(more); w.Kind != afterInvalid {
				t.Fatalf("ParseMillis(%q) = %+v; repeated fields are invalid", more, w)
			}
		}
	})
}
