package retry

import (
	"testing"
)

// sink keeps the benchmark results alive.
var sink afterValue

// BenchmarkParse measures Parse on an IMF-fixdate value.
func BenchmarkParseRetryAfter(b *testing.B) {
	values := []string{"Sat, 10 Oct 2026 00:00:02 GMT"}
	b.ReportAllocs()
	for b.Loop() {
		sink = parseRetryAfter(values, now)
	}
}

// BenchmarkParseForms measures Parse on each form and on an invalid value.
func BenchmarkParseRetryAfterForms(b *testing.B) {
	for _, bc := range []struct{ name, value string }{
		{"IMF-fixdate", "Sat, 10 Oct 2026 00:00:02 GMT"},
		{"RFC850", "Wednesday, 14-Oct-26 00:00:02 GMT"},
		{"asctime", "Sat Oct 10 00:00:02 2026"},
		{"seconds", "120"},
		{"invalid", "2026-10-10T00:00:02Z"},
	} {
		b.Run(bc.name, func(b *testing.B) {
			values := []string{bc.value}
			b.ReportAllocs()
			for b.Loop() {
				sink = parseRetryAfter(values, now)
			}
		})
	}
}
