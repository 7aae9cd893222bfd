package jsonscan

import (
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// MaxDepth is the deepest nesting of objects and arrays a Scanner accepts;
// opening one more container is a syntax error.
const MaxDepth = 512

// maxKeyLen is the longest decoded object key that is kept for matching.
// Longer keys are scanned but never match a rule. The codecs' keys are at
// most 17 bytes (reasoning_content); 64 keeps a Scanner, which every
// attempt's observer holds, small.
const maxKeyLen = 64

// Counts is semantic evidence found in a JSON prefix.
type Counts struct {
	// ReasoningBytes is the number of decoded UTF-8 bytes of reasoning
	// strings seen, including a partial string cut mid-way.
	ReasoningBytes int64
	// ContentBytes is the number of decoded UTF-8 bytes of content strings
	// seen, including a partial string cut mid-way.
	ContentBytes int64
	// ToolFragments is the number of tool-call objects started: an object
	// element of a tool-calls array began, or a single tool-call object began.
	ToolFragments int64
	// CompletedToolCalls is the number of tool-call objects whose closing
	// brace was seen.
	CompletedToolCalls int64
}

// Rules selects which paths count. A path is the sequence of object keys
// from the root, with array indices ignored, e.g. choices.message.content.
// Keys are matched exactly, after JSON unescaping.
type Rules struct {
	// Content lists paths of strings that are content text, e.g.
	// {{"choices","message","content"}} for OpenAI or {{"message","content"}}
	// for Ollama.
	Content [][]string
	// Reasoning lists paths of strings that are reasoning text, e.g.
	// {{"choices","message","reasoning_content"},{"choices","message","reasoning"}}
	// for OpenAI-compatible servers or {{"message","thinking"}} for Ollama.
	Reasoning [][]string
	// ToolCalls lists paths of arrays whose object elements are tool calls,
	// e.g. {{"choices","message","tool_calls"}} or {{"message","tool_calls"}}.
	ToolCalls [][]string
	// ToolObjects lists paths of single objects that each count as one tool
	// call, e.g. {{"choices","message","function_call"}}.
	ToolObjects [][]string
}

// SyntaxError reports the first byte that cannot belong to any valid JSON
// document. Its message never contains document bytes.
type SyntaxError struct {
	// Offset is the zero-based position of the offending byte, counted from
	// the first byte written since the Scanner was created or last Reset.
	Offset int64
	msg    string
}

// Error returns a description of the error and its offset.
func (e *SyntaxError) Error() string {
	return "jsonscan: " + e.msg + " at offset " + strconv.FormatInt(e.Offset, 10)
}

// Node flags of the rule trie.
const (
	flagContent uint8 = 1 << iota
	flagReasoning
	flagToolArray
	flagToolObject
)

// noNode marks a path that no rule extends.
const noNode int32 = -1

type trieEdge struct {
	key  string
	node int32
}

type trieNode struct {
	flags uint8
	kids  []trieEdge
}

// buildTrie compiles r into a trie of keys rooted at node 0.
func buildTrie(r *Rules) []trieNode {
	nodes := []trieNode{{}}
	if r == nil {
		return nodes
	}
	add := func(paths [][]string, flag uint8) {
		for _, path := range paths {
			n := int32(0)
			for _, k := range path {
				next := noNode
				for _, e := range nodes[n].kids {
					if e.key == k {
						next = e.node
						break
					}
				}
				if next == noNode {
					next = int32(len(nodes))
					nodes = append(nodes, trieNode{})
					nodes[n].kids = append(nodes[n].kids, trieEdge{key: k, node: next})
				}
				n = next
			}
			nodes[n].flags |= flag
		}
	}
	add(r.Content, flagContent)
	add(r.Reasoning, flagReasoning)
	add(r.ToolCalls, flagToolArray)
	add(r.ToolObjects, flagToolObject)
	return nodes
}

type state uint8

const (
	stValue        state = iota // expecting a value
	stValueOrClose              // after '[': a value or ']'
	stKeyOrClose                // after '{': a key or '}'
	stKey                       // after ',' in an object: a key
	stColon                     // after a key: ':'
	stAfterValue                // in a container after a value: ',' or its close
	stEnd                       // after the top-level value: whitespace only
	stString                    // inside a string
	stEsc                       // after '\' in a string
	stEscU                      // inside the hex digits of \uXXXX
	stNumMinus                  // after '-'
	stNumZero                   // after a leading '0'
	stNumInt                    // in integer digits
	stNumDot                    // after '.'
	stNumFrac                   // in fraction digits
	stNumE                      // after 'e' or 'E'
	stNumESign                  // after the exponent sign
	stNumExp                    // in exponent digits
	stLiteral                   // inside true, false or null
)

// sink says what happens to the decoded bytes of the current string.
type sink uint8

const (
	sinkNone  sink = iota // discard
	sinkKey               // collect into the key buffer
	sinkCount             // add to the selected counters
)

type frame struct {
	node    int32 // trie node of the container's own path
	valNode int32 // trie node of the current member's (or element's) path
	array   bool
	tool    bool // the container is a tool-call object
}

// Scanner scans a JSON document incrementally. Not safe for concurrent use.
// A Scanner must not be copied.
type Scanner struct {
	nodes []trieNode
	stack []frame // starts in stack0
	// stack0 holds the usual depth: a chat completion with tool calls or
	// logprobs nests at most 8 containers deep.
	stack0 [8]frame
	counts Counts
	err    *SyntaxError
	off    int64 // bytes consumed before the current Write
	state  state

	// Current string.
	strKey      bool // the string is an object key
	sink        sink
	toContent   bool
	toReasoning bool
	highPending bool // the last escape was a high surrogate
	high        rune
	hexN        uint8
	hex         rune

	// Current literal.
	lit    string
	litPos int

	// Current key.
	keyLen      int
	keyOverflow bool
	key         [maxKeyLen]byte
}

// NewScanner returns a Scanner that counts the paths selected by r. The rules
// are copied, so r may be changed afterwards; a nil r counts nothing but still
// checks syntax.
func NewScanner(r *Rules) *Scanner {
	return Compile(r).NewScanner()
}

// Compiled is a Rules value prepared once for many scanners. It is
// immutable and safe for concurrent use.
type Compiled struct{ nodes []trieNode }

// Compile prepares r (copying it) so that NewScanner does no per-scanner
// preparation: codecs compile their rules once per process.
func Compile(r *Rules) *Compiled { return &Compiled{nodes: buildTrie(r)} }

// NewScanner returns a scanner for the compiled rules.
func (c *Compiled) NewScanner() *Scanner {
	s := new(Scanner)
	c.Init(s)
	return s
}

// Init makes s a new scanner for the compiled rules, so that a Scanner can
// be part of a larger value (one allocation for both). s must not be copied
// afterwards.
func (c *Compiled) Init(s *Scanner) {
	*s = Scanner{nodes: c.nodes}
	s.stack = s.stack0[:0] // no allocation for the usual depth
}

// Counts returns the evidence found so far.
func (s *Scanner) Counts() Counts {
	return s.counts
}

// Complete reports whether exactly one top-level value has been fully
// scanned, optionally followed by whitespace, and no syntax error occurred.
// A top-level number is complete as soon as it is a valid number, even though
// more digits could follow.
func (s *Scanner) Complete() bool {
	if s.err != nil || len(s.stack) != 0 {
		return false
	}
	switch s.state {
	case stEnd, stNumZero, stNumInt, stNumFrac, stNumExp:
		return true
	}
	return false
}

// Reset returns the Scanner to its initial state, keeping its rules and
// allocated memory.
func (s *Scanner) Reset() {
	nodes, stack := s.nodes, s.stack[:0]
	*s = Scanner{nodes: nodes, stack: stack}
}

// Write feeds the next bytes of the document. It never fails on truncation;
// it returns a *SyntaxError at the first byte that cannot belong to any valid
// JSON document, after which every Write returns that same error and Counts
// stays frozen.
func (s *Scanner) Write(p []byte) error {
	if s.err != nil {
		return s.err
	}
	for i := 0; i < len(p); {
		c := p[i]
		msg := ""
		switch s.state {
		case stString:
			j := i
			for j < len(p) {
				b := p[j]
				if b == '"' || b == '\\' || b < 0x20 {
					break
				}
				j++
			}
			if j > i {
				s.plain(p[i:j])
				i = j
				continue
			}
			switch {
			case c == '"':
				s.endString()
			case c == '\\':
				s.state = stEsc
			default:
				msg = "invalid control character in string literal"
			}
		case stValue:
			if !isSpace(c) {
				msg = s.beginValue(c)
			}
		case stValueOrClose:
			if isSpace(c) {
				break
			}
			if c == ']' {
				s.closeContainer()
			} else {
				msg = s.beginValue(c)
			}
		case stKeyOrClose, stKey:
			switch {
			case isSpace(c):
			case c == '"':
				s.beginKey()
			case c == '}' && s.state == stKeyOrClose:
				s.closeContainer()
			default:
				msg = "invalid character looking for beginning of object key string"
			}
		case stColon:
			switch {
			case isSpace(c):
			case c == ':':
				s.state = stValue
			default:
				msg = "invalid character after object key"
			}
		case stAfterValue:
			if isSpace(c) {
				break
			}
			top := &s.stack[len(s.stack)-1]
			switch {
			case c == ',' && top.array:
				s.state = stValue
			case c == ',':
				s.state = stKey
			case c == ']' && top.array, c == '}' && !top.array:
				s.closeContainer()
			case top.array:
				msg = "invalid character after array element"
			default:
				msg = "invalid character after object key:value pair"
			}
		case stEnd:
			if !isSpace(c) {
				msg = "invalid character after top-level value"
			}
		case stEsc:
			msg = s.escape(c)
		case stEscU:
			v, ok := unhex(c)
			if !ok {
				msg = "invalid character in \\u hexadecimal escape"
				break
			}
			s.hex = s.hex<<4 | v
			s.hexN++
			if s.hexN == 4 {
				s.escapedRune(s.hex)
				s.state = stString
			}
		case stLiteral:
			if s.litPos < len(s.lit) && c == s.lit[s.litPos] {
				s.litPos++
				if s.litPos == len(s.lit) {
					s.valueDone()
				}
			} else {
				msg = "invalid character in literal"
			}
		case stNumMinus:
			switch {
			case c == '0':
				s.state = stNumZero
			case '1' <= c && c <= '9':
				s.state = stNumInt
			default:
				msg = "invalid character in numeric literal"
			}
		case stNumZero, stNumInt, stNumFrac, stNumExp:
			switch {
			case isDigit(c) && s.state != stNumZero:
			case c == '.' && (s.state == stNumZero || s.state == stNumInt):
				s.state = stNumDot
			case (c == 'e' || c == 'E') && s.state != stNumExp:
				s.state = stNumE
			default:
				// The number ended; c belongs to what follows it.
				s.valueDone()
				continue
			}
		case stNumDot:
			if isDigit(c) {
				s.state = stNumFrac
			} else {
				msg = "invalid character in numeric literal"
			}
		case stNumE:
			switch {
			case c == '+' || c == '-':
				s.state = stNumESign
			case isDigit(c):
				s.state = stNumExp
			default:
				msg = "invalid character in numeric literal"
			}
		case stNumESign:
			if isDigit(c) {
				s.state = stNumExp
			} else {
				msg = "invalid character in numeric literal"
			}
		default:
			msg = "internal scanner state error"
		}
		if msg != "" {
			s.err = &SyntaxError{Offset: s.off + int64(i), msg: msg}
			return s.err
		}
		i++
	}
	s.off += int64(len(p))
	return nil
}

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
