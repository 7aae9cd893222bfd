package jsonscan

import "bytes"

// This file holds the steps a decoder's fast path takes over the members of
// a valid document (the Anthropic and Responses stream decoders read their
// delta events this way): record a member's raw value once, read a string
// member's text, read a plain index or sequence number. Each reports
// ok=false (or -1) for anything else, which the caller leaves to its
// reference decoder.

// Once checks the value that starts at p[i], inside depth open containers,
// records its raw bytes in *dst and returns the index after it, as
// ValidObject's member callback returns. It returns -1, recording nothing,
// when *dst already holds a value (a repeated key, whose winner a reference
// decoder decides) or when the value is not valid (SkipValid).
func Once(dst *[]byte, p []byte, i, depth int) int {
	if *dst != nil {
		return -1
	}
	end := SkipValid(p, i, depth)
	if end >= 0 {
		*dst = p[i:end]
	}
	return end
}

// Text returns the text of v, the raw value of a valid document, when v is
// a string: the bytes between its quotes when it holds no escape, or else
// its text decoded as Unquote does into *scratch, which is reused (the
// result is then a slice of *scratch, valid until its next use). It reports
// ok=false when v is not a string.
func Text(v []byte, scratch *[]byte) (text []byte, ok bool) {
	if len(v) < 2 || v[0] != '"' {
		return nil, false
	}
	text = v[1 : len(v)-1]
	if bytes.IndexByte(text, '\\') >= 0 {
		*scratch = Unquote((*scratch)[:0], v)
		text = *scratch
	}
	return text, true
}

// PlainInt returns the value of num, a raw JSON number, when it is made of
// decimal digits only (no sign, fraction or exponent) and fits an int64
// with room to spare (at most 18 digits), and ok=false for any other
// number.
func PlainInt(num []byte) (int64, bool) {
	if len(num) == 0 || len(num) > 18 {
		return 0, false
	}
	var n int64
	for _, c := range num {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	return n, true
}
