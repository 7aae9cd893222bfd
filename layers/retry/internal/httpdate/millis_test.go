package httpdate_test

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/recourse-dev/recourse/layers/retry/internal/httpdate"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestParseMillis covers the forms OpenAI (retry-after-ms) and Azure OpenAI
// (x-ms-retry-after-ms) send, and every class of invalid value.
func TestParseMillis(t *testing.T) {
	for _, tc := range []struct {
		in   []string
		kind httpdate.Kind
		d    time.Duration
	}{
		{nil, httpdate.Absent, 0},
		{[]string{"20"}, httpdate.Milliseconds, 20 * time.Millisecond},
		{[]string{"0"}, httpdate.Milliseconds, 0},
		{[]string{"1500"}, httpdate.Milliseconds, 1500 * time.Millisecond},
		{[]string{" 250\t"}, httpdate.Milliseconds, 250 * time.Millisecond},
		{[]string{"12.5"}, httpdate.Milliseconds, 12500 * time.Microsecond},
		{[]string{"0.000001"}, httpdate.Milliseconds, time.Nanosecond},
		{[]string{"0.0000001"}, httpdate.Milliseconds, time.Nanosecond}, // rounded up, never shortened
		{[]string{"1.0000000"}, httpdate.Milliseconds, time.Millisecond},
		{[]string{"9223372036854"}, httpdate.Milliseconds, 9223372036854 * time.Millisecond},
		{[]string{"9223372036855"}, httpdate.Invalid, 0},
		{[]string{"9223372036854.775807"}, httpdate.Milliseconds, time.Duration(1<<63 - 1)},
		{[]string{"9223372036854.775808"}, httpdate.Invalid, 0},
		{[]string{""}, httpdate.Invalid, 0},
		{[]string{"-5"}, httpdate.Invalid, 0},
		{[]string{"+5"}, httpdate.Invalid, 0},
		{[]string{"1e3"}, httpdate.Invalid, 0},
		{[]string{".5"}, httpdate.Invalid, 0},
		{[]string{"5."}, httpdate.Invalid, 0},
		{[]string{"5.5.5"}, httpdate.Invalid, 0},
		{[]string{"20ms"}, httpdate.Invalid, 0},
		{[]string{"2 0"}, httpdate.Invalid, 0},
		{[]string{"20", "30"}, httpdate.Invalid, 0},
		{[]string{"Sat, 10 Oct 2026 00:00:02 GMT"}, httpdate.Invalid, 0},
	} {
		got := httpdate.ParseMillis(tc.in)
		assert.False(t, got.Kind != tc.kind || got.Delay != tc.d || !got.Time.IsZero(), "ParseMillis(%q) = %v %v %v; want %v %v", tc.in, got.Kind, got.Delay, got.Time, tc.kind, tc.d)
	}
}

// FuzzParseMillis checks that ParseMillis never panics, never returns a
// negative delay, agrees with strconv on whole numbers, and never shortens
// the value it parsed.
func FuzzParseMillis(f *testing.F) {
	for _, s := range []string{"20", "0", "12.5", "0.0000001", "9223372036854", "9223372036855", "-5", "1e3", ".5", "5.", "", " 7 ", "20\n30", "\xff"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v := httpdate.ParseMillis([]string{s})
		require.False(t, v.Delay < 0 || !v.Time.IsZero(), "ParseMillis(%q) = %+v", s, v)
		require.False(t, v.Kind != httpdate.Milliseconds && v.Kind != httpdate.Invalid, "ParseMillis(%q): kind %v", s, v.Kind)
		require.False(t, v.Kind == httpdate.Invalid && v.Delay != 0, "ParseMillis(%q): invalid with delay %v", s, v.Delay)
		trimmed := strings.Trim(s, " \t")
		if n, err := strconv.ParseUint(trimmed, 10, 63); err == nil && trimmed[0] != '+' && n <= uint64(1<<63-1)/uint64(time.Millisecond) {
			require.False(t, v.Kind != httpdate.Milliseconds || v.Delay != time.Duration(n)*time.Millisecond, "ParseMillis(%q) = %+v; want %d ms", s, v, n)
		}
		if v.Kind == httpdate.Milliseconds {
			if fl, err := strconv.ParseFloat(trimmed, 64); err != nil || float64(v.Delay) < fl*float64(time.Millisecond)*(1-1e-12) {
				t.Fatalf("ParseMillis(%q) = %v, below strconv's %v ms (%v)", s, v.Delay, fl, err)
			}
		}
		for _, more := range [][]string{{s, s}, {s, "1"}} {
			if w := httpdate.ParseMillis(more); w.Kind != httpdate.Invalid {
				t.Fatalf("ParseMillis(%q) = %+v; repeated fields are invalid", more, w)
			}
		}
	})
}
