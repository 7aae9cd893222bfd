package jsonscan

import "strconv"

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
// stays frozen. It is one loop of more than 100 lines, one case a state,
// because it runs once a byte: a call per byte or per state would cost the
// observer of every body and stream its throughput.
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
