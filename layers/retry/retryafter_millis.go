package retry

import (
	"math"
	"time"
)

// maxMillis is the largest whole number of milliseconds whose time.Duration
// does not overflow.
const maxMillis = math.MaxInt64 / int64(time.Millisecond)

// parseRetryAfterMillis interprets the values of a millisecond retry hint of one
// response (retry-after-ms, x-ms-retry-after-ms), as returned by
// http.Header.Values.
//
// No values yields afterAbsent. One value that is, after trimming surrounding SP
// and HTAB, a non-negative decimal number of milliseconds — ASCII digits,
// optionally followed by "." and more digits, the form OpenAI's and Azure's
// SDKs parse — yields afterMilliseconds with that Delay; a fraction finer than a
// nanosecond is rounded up, so the minimum is never shortened. Anything else
// (a sign, an exponent, an empty value, a value that overflows, repeated
// header fields) yields afterInvalid.
func parseRetryAfterMillis(values []string) afterValue {
	s, v, ok := single(values)
	if !ok {
		return v
	}
	whole, frac := s, ""
	for i := 0; i < len(s); i++ {
		if s[i] == '.' {
			whole, frac = s[:i], s[i+1:]
			if frac == "" {
				return afterValue{Kind: afterInvalid}
			}
			break
		}
	}
	if whole == "" {
		return afterValue{Kind: afterInvalid}
	}
	var ms int64
	for i := 0; i < len(whole); i++ {
		c := whole[i]
		if !isDigit(c) {
			return afterValue{Kind: afterInvalid}
		}
		ms = ms*10 + int64(c-'0')
		if ms > maxMillis {
			return afterValue{Kind: afterInvalid}
		}
	}
	// The fraction, in nanoseconds: its first six digits, rounded up when
	// any later digit is not zero.
	var ns int64
	up := false
	for i := 0; i < len(frac); i++ {
		c := frac[i]
		if !isDigit(c) {
			return afterValue{Kind: afterInvalid}
		}
		switch {
		case i < 6:
			ns = ns*10 + int64(c-'0')
		case c != '0':
			up = true
		}
	}
	for i := len(frac); i < 6; i++ {
		ns *= 10
	}
	if up {
		ns++
	}
	d := time.Duration(ms) * time.Millisecond
	if int64(d) > math.MaxInt64-ns {
		return afterValue{Kind: afterInvalid}
	}
	return afterValue{Kind: afterMilliseconds, Delay: d + time.Duration(ns)}
}
