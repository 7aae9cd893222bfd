package jsonscan

import (
	"unicode/utf16"
	"unicode/utf8"
)

// This file holds the Scanner's steps that Write calls at token
// boundaries (a value, key, string or container beginning or ending, an
// escape, decoded text to count) and the byte classes they test.

func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r'
}

func isDigit(c byte) bool {
	return '0' <= c && c <= '9'
}

func unhex(c byte) (rune, bool) {
	switch {
	case '0' <= c && c <= '9':
		return rune(c - '0'), true
	case 'a' <= c && c <= 'f':
		return rune(c - 'a' + 10), true
	case 'A' <= c && c <= 'F':
		return rune(c - 'A' + 10), true
	}
	return 0, false
}

// valueNode returns the trie node of the value about to start and whether it
// is an array element.
func (s *Scanner) valueNode() (int32, bool) {
	if n := len(s.stack); n > 0 {
		f := &s.stack[n-1]
		return f.valNode, f.array
	}
	return 0, false
}

func (s *Scanner) flags(node int32) uint8 {
	if node < 0 || int(node) >= len(s.nodes) {
		return 0
	}
	return s.nodes[node].flags
}

// beginValue starts the value whose first byte is c and returns an error
// message if c cannot start one.
func (s *Scanner) beginValue(c byte) string {
	switch c {
	case '{', '[':
		if len(s.stack) >= MaxDepth {
			return "exceeded maximum nesting depth"
		}
		node, inArray := s.valueNode()
		f := s.flags(node)
		if c == '[' {
			s.stack = append(s.stack, frame{node: node, valNode: node, array: true})
			s.state = stValueOrClose
			return ""
		}
		tool := f&flagToolObject != 0 || (f&flagToolArray != 0 && inArray)
		if tool {
			s.counts.ToolFragments++
		}
		s.stack = append(s.stack, frame{node: node, valNode: noNode, tool: tool})
		s.state = stKeyOrClose
	case '"':
		node, _ := s.valueNode()
		f := s.flags(node)
		s.strKey = false
		s.toContent = f&flagContent != 0
		s.toReasoning = f&flagReasoning != 0
		s.sink = sinkNone
		if s.toContent || s.toReasoning {
			s.sink = sinkCount
		}
		s.highPending = false
		s.state = stString
	case '-':
		s.state = stNumMinus
	case '0':
		s.state = stNumZero
	case '1', '2', '3', '4', '5', '6', '7', '8', '9':
		s.state = stNumInt
	case 't':
		s.beginLiteral("true")
	case 'f':
		s.beginLiteral("false")
	case 'n':
		s.beginLiteral("null")
	default:
		return "invalid character looking for beginning of value"
	}
	return ""
}

func (s *Scanner) beginLiteral(lit string) {
	s.lit = lit
	s.litPos = 1
	s.state = stLiteral
}

// beginKey starts an object key. The key is collected only if some rule
// continues below the object's path.
func (s *Scanner) beginKey() {
	top := &s.stack[len(s.stack)-1]
	top.valNode = noNode
	s.strKey = true
	s.sink = sinkNone
	if top.node >= 0 && int(top.node) < len(s.nodes) && len(s.nodes[top.node].kids) > 0 {
		s.sink = sinkKey
	}
	s.keyLen = 0
	s.keyOverflow = false
	s.highPending = false
	s.state = stString
}

// endString handles the closing quote of a string.
func (s *Scanner) endString() {
	s.highPending = false
	if !s.strKey {
		s.valueDone()
		return
	}
	top := &s.stack[len(s.stack)-1]
	top.valNode = noNode
	if s.sink == sinkKey && !s.keyOverflow {
		key := s.key[:s.keyLen]
		for _, e := range s.nodes[top.node].kids {
			if string(key) == e.key {
				top.valNode = e.node
				break
			}
		}
	}
	s.state = stColon
}

// valueDone moves on after a complete value.
func (s *Scanner) valueDone() {
	if len(s.stack) == 0 {
		s.state = stEnd
	} else {
		s.state = stAfterValue
	}
}

// closeContainer pops the innermost container after its closing byte.
func (s *Scanner) closeContainer() {
	f := s.stack[len(s.stack)-1]
	s.stack = s.stack[:len(s.stack)-1]
	if f.tool {
		s.counts.CompletedToolCalls++
	}
	s.valueDone()
}

// escape handles the byte after a backslash in a string.
func (s *Scanner) escape(c byte) string {
	var b byte
	switch c {
	case '"', '\\', '/':
		b = c
	case 'b':
		b = '\b'
	case 'f':
		b = '\f'
	case 'n':
		b = '\n'
	case 'r':
		b = '\r'
	case 't':
		b = '\t'
	case 'u':
		s.hexN = 0
		s.hex = 0
		s.state = stEscU
		return ""
	default:
		return "invalid escape character in string literal"
	}
	s.highPending = false
	s.emit([]byte{b})
	s.state = stString
	return ""
}

// escapedRune handles the code unit of a complete \uXXXX escape, decoding
// surrogates as encoding/json does: a valid pair is one rune and a lone
// surrogate is U+FFFD.
func (s *Scanner) escapedRune(r rune) {
	if s.highPending && utf16.IsSurrogate(r) && r >= 0xDC00 {
		// The pair completes: U+FFFD (3 bytes) already emitted for the high
		// surrogate becomes the 4-byte encoding of the combined rune.
		s.highPending = false
		switch s.sink {
		case sinkCount:
			s.add(1)
		case sinkKey:
			if !s.keyOverflow {
				s.keyLen -= 3
				s.emitRune(utf16.DecodeRune(s.high, r))
			}
		}
		return
	}
	s.highPending = false
	if utf16.IsSurrogate(r) {
		if r < 0xDC00 {
			s.highPending = true
			s.high = r
		}
		r = utf8.RuneError
	}
	s.emitRune(r)
}

func (s *Scanner) emitRune(r rune) {
	var buf [utf8.UTFMax]byte
	n := utf8.EncodeRune(buf[:], r)
	s.emit(buf[:n])
}

// plain handles a run of unescaped string bytes.
func (s *Scanner) plain(b []byte) {
	s.highPending = false
	s.emit(b)
}

// emit routes decoded string bytes to the current sink.
func (s *Scanner) emit(b []byte) {
	switch s.sink {
	case sinkCount:
		s.add(int64(len(b)))
	case sinkKey:
		if s.keyOverflow || len(b) > maxKeyLen-s.keyLen {
			s.keyOverflow = true
			return
		}
		s.keyLen += copy(s.key[s.keyLen:], b)
	}
}

func (s *Scanner) add(n int64) {
	if s.toContent {
		s.counts.ContentBytes += n
	}
	if s.toReasoning {
		s.counts.ReasoningBytes += n
	}
}
