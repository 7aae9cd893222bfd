package jsonscan

import (
	"bytes"
	"unicode/utf16"
	"unicode/utf8"
)

// This file holds allocation-free helpers for decoders that read a few
// fields out of a complete document: Valid checks the whole document once,
// and the readers below then walk raw values of a valid document without
// checking its syntax again. A raw value is the exact bytes of one JSON value
// without surrounding whitespace, as encoding/json.RawMessage holds it.

// Valid reports whether p is one JSON value, optionally surrounded by
// whitespace, that encoding/json.Valid accepts and that nests at most
// MaxDepth containers deep: exactly the documents a Scanner scans to
// Complete without an error. It allocates nothing.
func Valid(p []byte) bool {
	i := SkipValid(p, SkipSpace(p, 0), 0)
	return i >= 0 && SkipSpace(p, i) == len(p)
}

// SkipValid checks the value that starts at p[i], inside depth open
// containers, and returns the index after it; it returns -1 unless p[i:]
// starts with a value that encoding/json accepts and that leaves at most
// MaxDepth containers open in all.
func SkipValid(p []byte, i, depth int) int {
	var arrays [MaxDepth / 64]uint64 // bit d: the container at depth d is an array
	d := depth
	for {
		// A value starts at p[i].
		if i >= len(p) {
			return -1
		}
		switch c := p[i]; {
		case c == '{' || c == '[':
			if d >= MaxDepth {
				return -1
			}
			word, bit := d/64, uint64(1)<<(d%64)
			if c == '[' {
				arrays[word] |= bit
			} else {
				arrays[word] &^= bit
			}
			d++
			i = SkipSpace(p, i+1)
			if i < len(p) && (p[i] == ']' && c == '[' || p[i] == '}' && c == '{') {
				d--
				i++
				break
			}
			if c == '{' {
				if i = member(p, i); i < 0 {
					return -1
				}
			}
			continue
		case c == '"':
			i, _ = skipString(p, i)
		case c == '-' || '0' <= c && c <= '9':
			i = skipNumber(p, i)
		case c == 't':
			i = literal(p, i, "true")
		case c == 'f':
			i = literal(p, i, "false")
		case c == 'n':
			i = literal(p, i, "null")
		default:
			return -1
		}
		if i < 0 {
			return -1
		}
		// After a value: close containers until a comma or the end.
		for {
			if d == depth {
				return i
			}
			i = SkipSpace(p, i)
			if i >= len(p) {
				return -1
			}
			array := arrays[(d-1)/64]>>((d-1)%64)&1 != 0
			c := p[i]
			if array && c == ']' || !array && c == '}' {
				d--
				i++
				continue
			}
			if c != ',' {
				return -1
			}
			i = SkipSpace(p, i+1)
			if !array {
				if i = member(p, i); i < 0 {
					return -1
				}
			}
			break
		}
	}
}

// ValidObject checks the object that starts at p[i], inside depth open
// containers, calling member for each member with its key (without the
// quotes, still escaped when escaped is true) and the index of its value;
// member checks the value, inside depth+1 containers, and returns the index
// after it, or -1. ValidObject returns the index after the object, or -1
// when the object or a member is not valid (member may also return -1 to
// stop early).
func ValidObject(p []byte, i, depth int, member func(key []byte, escaped bool, v int) int) int {
	if depth >= MaxDepth || i >= len(p) || p[i] != '{' {
		return -1
	}
	if i = SkipSpace(p, i+1); i < len(p) && p[i] == '}' {
		return i + 1
	}
	for done := false; ; {
		if i = SkipSpace(p, i); i >= len(p) || p[i] != '"' {
			return -1
		}
		end, escaped := skipString(p, i)
		if end < 0 {
			return -1
		}
		key := p[i+1 : end-1]
		if i = SkipSpace(p, end); i >= len(p) || p[i] != ':' {
			return -1
		}
		if i = SkipSpace(p, i+1); i >= len(p) {
			return -1
		}
		if i = member(key, escaped, i); i < 0 {
			return -1
		}
		if i, done = afterValue(p, i, '}'); done {
			return i
		}
	}
}

// ValidArray is ValidObject for an array: elem is called with the index n
// and the start v of each element.
func ValidArray(p []byte, i, depth int, elem func(n, v int) int) int {
	if depth >= MaxDepth || i >= len(p) || p[i] != '[' {
		return -1
	}
	if i = SkipSpace(p, i+1); i < len(p) && p[i] == ']' {
		return i + 1
	}
	done := false
	for n := 0; ; n++ {
		if i = SkipSpace(p, i); i >= len(p) {
			return -1
		}
		if i = elem(n, i); i < 0 {
			return -1
		}
		if i, done = afterValue(p, i, ']'); done {
			return i
		}
	}
}

// afterValue reads what follows a member or an element of a container
// that ends at i, after white space: after a ',' it returns the index past
// it (where white space may precede the next one) and done false; after
// the container's closing byte it returns the index past that and done
// true; at anything else, or at the end of p, it returns -1 and done true.
func afterValue(p []byte, i int, closing byte) (next int, done bool) {
	if i = SkipSpace(p, i); i < len(p) {
		switch p[i] {
		case ',':
			return i + 1, false
		case closing:
			return i + 1, true
		}
	}
	return -1, true
}

// member checks an object key and its colon at p[i] and returns the index of
// the member's value, or -1.
func member(p []byte, i int) int {
	if i >= len(p) || p[i] != '"' {
		return -1
	}
	if i, _ = skipString(p, i); i < 0 {
		return -1
	}
	if i = SkipSpace(p, i); i >= len(p) || p[i] != ':' {
		return -1
	}
	return SkipSpace(p, i+1)
}

// SkipSpace returns the index of the first byte at or after i that is not
// JSON whitespace, or len(p).
func SkipSpace(p []byte, i int) int {
	for i < len(p) && isSpace(p[i]) {
		i++
	}
	return i
}

// plainByte marks the bytes that a string holds as they are: not a quote, a
// backslash or a control character.
var plainByte = func() (t [256]bool) {
	for c := 0x20; c < 256; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// skipString checks the string that starts at p[i] (a quote) and returns the
// index after its closing quote, or -1, and whether it has an escape.
func skipString(p []byte, i int) (int, bool) {
	escaped := false
	for i++; i < len(p); i++ {
		for i+4 <= len(p) && plainByte[p[i]] && plainByte[p[i+1]] && plainByte[p[i+2]] && plainByte[p[i+3]] {
			i += 4
		}
		for i < len(p) && plainByte[p[i]] {
			i++
		}
		if i >= len(p) {
			break
		}
		c := p[i]
		switch {
		case c == '"':
			return i + 1, escaped
		case c < 0x20:
			return -1, false
		case c != '\\':
		default:
			escaped = true
			if i++; i >= len(p) {
				return -1, false
			}
			switch p[i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				if i+4 >= len(p) {
					return -1, false
				}
				for _, h := range p[i+1 : i+5] {
					if _, ok := unhex(h); !ok {
						return -1, false
					}
				}
				i += 4
			default:
				return -1, false
			}
		}
	}
	return -1, false
}

// skipNumber checks the number that starts at p[i] and returns the index
// after it, or -1.
func skipNumber(p []byte, i int) int {
	if p[i] == '-' {
		i++
	}
	switch {
	case i >= len(p):
		return -1
	case p[i] == '0':
		i++
	case '1' <= p[i] && p[i] <= '9':
		i = digits(p, i)
	default:
		return -1
	}
	if i < len(p) && p[i] == '.' {
		j := digits(p, i+1)
		if j == i+1 {
			return -1
		}
		i = j
	}
	if i < len(p) && (p[i] == 'e' || p[i] == 'E') {
		i++
		if i < len(p) && (p[i] == '+' || p[i] == '-') {
			i++
		}
		j := digits(p, i)
		if j == i {
			return -1
		}
		i = j
	}
	return i
}

func digits(p []byte, i int) int {
	for i < len(p) && isDigit(p[i]) {
		i++
	}
	return i
}

// literal checks that lit starts at p[i] and returns the index after it, or
// -1.
func literal(p []byte, i int, lit string) int {
	if len(p)-i < len(lit) || string(p[i:i+len(lit)]) != lit {
		return -1
	}
	return i + len(lit)
}

// TrimSpace returns p without the whitespace JSON allows around a value
// (space, tab, "\r" and "\n"; not "\v", "\f" or other Unicode spaces), as
// a slice of p. It takes any bytes: the raw value of a valid document, a
// body or a line that is still to be validated.
func TrimSpace(p []byte) []byte {
	i, j := SkipSpace(p, 0), len(p)
	for j > i && isSpace(p[j-1]) {
		j--
	}
	return p[i:j]
}

// EndOfString returns the index after the closing quote of the string that
// starts at p[i] in a valid document (len(p) when p is cut inside it).
func EndOfString(p []byte, i int) int {
	for i++; ; {
		j := bytes.IndexByte(p[i:], '"')
		if j < 0 {
			return len(p) // not in a valid document
		}
		i += j
		// The quote closes the string unless an odd number of backslashes
		// precede it.
		k := i
		for p[k-1] == '\\' {
			k--
		}
		if (i-k)%2 == 0 {
			return i + 1
		}
		i++
	}
}

// SkipValue returns the index after the value that starts at p[i] in a valid
// document, without validating it (SkipValid validates). Nesting of any
// depth is skipped in constant memory.
func SkipValue(p []byte, i int) int {
	switch p[i] {
	case '"':
		return EndOfString(p, i)
	case '{', '[':
		depth := 0
		for ; i < len(p); i++ {
			switch p[i] {
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return i + 1
				}
			case '"':
				i = EndOfString(p, i) - 1 // the loop steps past the closing quote
			}
		}
		return i
	}
	// A number or a literal ends at a delimiter or whitespace.
	for i < len(p) {
		switch p[i] {
		case ',', '}', ']', ' ', '\t', '\n', '\r':
			return i
		}
		i++
	}
	return i
}

// Members iterates over the members of a raw object value of a valid
// document. The zero value has no members.
type Members struct {
	p []byte
	i int
}

// ObjectMembers returns an iterator over the members of v, which must be a
// raw object value (starting with '{') of a valid document.
func ObjectMembers(v []byte) Members { return Members{p: v, i: 1} }

// Next returns the next member: its key without the quotes, still escaped
// when escaped is true, and its raw value. ok is false after the last member.
func (m *Members) Next() (key []byte, escaped bool, val []byte, ok bool) {
	i := SkipSpace(m.p, m.i)
	if i >= len(m.p) || m.p[i] != '"' {
		// '}' (or the zero value).
		m.i = len(m.p)
		return nil, false, nil, false
	}
	end := EndOfString(m.p, i)
	key = m.p[i+1 : end-1]
	escaped = bytes.IndexByte(key, '\\') >= 0
	i = SkipSpace(m.p, SkipSpace(m.p, end)+1) // past the colon
	j := SkipValue(m.p, i)
	val = m.p[i:j]
	j = SkipSpace(m.p, j) // at ',' or '}'
	if j < len(m.p) && m.p[j] == ',' {
		j++
	}
	m.i = j
	return key, escaped, val, true
}

// NextName is Next with the key unescaped: name is the key's text, a slice
// of the value when the key has no escape and a new slice otherwise.
func (m *Members) NextName() (name, val []byte, ok bool) {
	key, escaped, val, ok := m.Next()
	if escaped {
		key = Unescape(nil, key)
	}
	return key, val, ok
}

// Elements iterates over the elements of a raw array value of a valid
// document. The zero value has no elements.
type Elements struct {
	p []byte
	i int
}

// ArrayElements returns an iterator over the elements of v, which must be a
// raw array value (starting with '[') of a valid document.
func ArrayElements(v []byte) Elements { return Elements{p: v, i: 1} }

// Next returns the next raw element, or ok=false after the last one.
func (e *Elements) Next() (val []byte, ok bool) {
	i := SkipSpace(e.p, e.i)
	if i >= len(e.p) || e.p[i] == ']' {
		e.i = len(e.p)
		return nil, false
	}
	j := SkipValue(e.p, i)
	val = e.p[i:j]
	j = SkipSpace(e.p, j)
	if j < len(e.p) && e.p[j] == ',' {
		j++
	}
	e.i = j
	return val, true
}

// Unquote appends the decoded text of the raw string value v (with its
// quotes) of a valid document to dst, decoding exactly as encoding/json
// does: escapes are resolved, a valid surrogate pair is one rune, and a lone
// surrogate or invalid UTF-8 becomes U+FFFD.
func Unquote(dst, v []byte) []byte { return Unescape(dst, v[1:len(v)-1]) }

// Unescape appends the decoded text of s, the bytes between the quotes of a
// string of a valid document (such as a key ValidObject or Members.Next
// reports escaped), to dst, decoding as Unquote does.
func Unescape(dst, s []byte) []byte {
	for {
		j := bytes.IndexByte(s, '\\')
		if j < 0 {
			return appendText(dst, s)
		}
		dst = appendText(dst, s[:j])
		s = s[j+1:] // the byte after the backslash
		switch c := s[0]; c {
		case 'b':
			dst = append(dst, '\b')
		case 'f':
			dst = append(dst, '\f')
		case 'n':
			dst = append(dst, '\n')
		case 'r':
			dst = append(dst, '\r')
		case 't':
			dst = append(dst, '\t')
		case 'u':
			r := hex4(s[1:])
			s = s[5:]
			if utf16.IsSurrogate(r) {
				if len(s) >= 6 && s[0] == '\\' && s[1] == 'u' {
					if d := utf16.DecodeRune(r, hex4(s[2:])); d != utf8.RuneError {
						dst = utf8.AppendRune(dst, d)
						s = s[6:]
						continue
					}
				}
				r = utf8.RuneError
			}
			dst = utf8.AppendRune(dst, r)
			continue
		default: // '"', '\\', '/'
			dst = append(dst, c)
		}
		s = s[1:]
	}
}

// appendText appends unescaped string bytes, replacing each byte of invalid
// UTF-8 with U+FFFD.
func appendText(dst, s []byte) []byte {
	if utf8.Valid(s) {
		return append(dst, s...)
	}
	for len(s) > 0 {
		r, n := utf8.DecodeRune(s)
		if r == utf8.RuneError && n == 1 {
			dst = utf8.AppendRune(dst, r)
		} else {
			dst = append(dst, s[:n]...)
		}
		s = s[n:]
	}
	return dst
}

// hex4 decodes the four hex digits at the start of s (checked by Valid).
func hex4(s []byte) rune {
	var r rune
	for _, c := range s[:4] {
		v, _ := unhex(c)
		r = r<<4 | v
	}
	return r
}
