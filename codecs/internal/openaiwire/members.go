package openaiwire

import (
	"bytes"
	"encoding/json"
	"strconv"
	"unicode/utf8"
	"unsafe"

	"github.com/recourse-dev/recourse/chat"
	"github.com/recourse-dev/recourse/codecs/internal/jsonscan"
)

// This file holds what Decode reads out of the raw member values its scan
// recorded: tool calls, usage, strings and integers.

// decodeToolCalls decodes tool_calls (an array of call objects, each with a
// function object) and then a legacy function_call object.
func (d *Dialect) decodeToolCalls(toolCalls, functionCall []byte) ([]chat.ToolCall, error) {
	n := 0
	if !Absent(toolCalls) {
		if toolCalls[0] != '[' {
			return nil, decodeError("response tool_calls is not an array")
		}
		for els := jsonscan.ArrayElements(toolCalls); ; n++ {
			if _, ok := els.Next(); !ok {
				break
			}
		}
	}
	if !Absent(functionCall) {
		if functionCall[0] != '{' {
			return nil, decodeError("response function_call is not an object")
		}
		n++
	}
	if n == 0 {
		return nil, nil // an empty tool_calls array and no function_call
	}
	calls := make([]chat.ToolCall, 0, n)
	for els := jsonscan.ArrayElements(toolCalls); !Absent(toolCalls); {
		call, ok := els.Next()
		if !ok {
			break
		}
		if call[0] != '{' {
			return nil, decodeError("response tool call is not an object")
		}
		var id, fn []byte
		for m := jsonscan.ObjectMembers(call); ; {
			key, v, ok := m.NextName()
			if !ok {
				break
			}
			switch string(key) {
			case "id":
				id = v
			case "function":
				fn = v
			}
		}
		if Absent(fn) || fn[0] != '{' {
			return nil, decodeError("response tool call has no function")
		}
		tc, err := d.decodeFunction(fn)
		if err != nil {
			return nil, err
		}
		if tc.ID, ok = PlainString(id, true); !ok {
			return nil, decodeError("response tool call id is not a string")
		}
		calls = append(calls, tc)
	}
	if !Absent(functionCall) {
		tc, err := d.decodeFunction(functionCall)
		if err != nil {
			return nil, err
		}
		calls = append(calls, tc)
	}
	return calls, nil
}

// decodeFunction decodes the object {"name":…,"arguments":…}. Without
// d.Objects, arguments that are a string holding valid JSON are kept as
// that JSON text, a string that is not valid JSON as a JSON string value,
// and a non-string value (some compatible servers send an object) as it
// is; with d.Objects see Decode.
func (d *Dialect) decodeFunction(fn []byte) (chat.ToolCall, error) {
	var tc chat.ToolCall
	var name, args []byte
	for m := jsonscan.ObjectMembers(fn); ; {
		key, v, ok := m.NextName()
		if !ok {
			break
		}
		switch string(key) {
		case "name":
			name = v
		case "arguments":
			args = v
		}
	}
	var ok bool
	if tc.Name, ok = PlainString(name, true); !ok {
		return tc, decodeError("response tool call name is not a string")
	}
	if d.Objects {
		return tc, objectArguments(&tc, args)
	}
	switch {
	case Absent(args):
	case args[0] != '"':
		tc.Arguments = append(json.RawMessage(nil), args...)
	default:
		s := jsonscan.Unquote(make([]byte, 0, len(args)-2), args)
		if json.Valid(s) {
			tc.Arguments = s
		} else {
			tc.Arguments, _ = json.Marshal(string(s)) // a string always marshals
		}
	}
	return tc, nil
}

// objectArguments sets the arguments of tc, which has a name, under
// Dialect.Objects.
func objectArguments(tc *chat.ToolCall, args []byte) error {
	if tc.Name == "" {
		return decodeError("response tool call has no name")
	}
	if !Absent(args) && args[0] != '"' {
		return decodeError("response tool call arguments are not a string")
	}
	tc.Arguments = json.RawMessage("{}")
	if Absent(args) {
		return nil
	}
	s := jsonscan.Unquote(make([]byte, 0, len(args)-2), args)
	switch t := jsonscan.TrimSpace(s); {
	case len(t) == 0:
	case t[0] != '{' || !json.Valid(t):
		return decodeError("response tool call arguments are not a JSON object")
	default:
		tc.Arguments = s
	}
	return nil
}

// decodeUsage decodes a usage object: prompt_tokens and completion_tokens
// as integers, absent or null being 0.
func decodeUsage(v []byte, u *chat.Usage) error {
	if v[0] != '{' {
		return decodeError("response usage is not an object")
	}
	var prompt, completion []byte
	for m := jsonscan.ObjectMembers(v); ; {
		key, v, ok := m.NextName()
		if !ok {
			break
		}
		switch string(key) {
		case "prompt_tokens":
			prompt = v
		case "completion_tokens":
			completion = v
		}
	}
	var ok bool
	if u.InputTokens, ok = integer(prompt); !ok {
		return decodeError("response prompt_tokens is not an integer")
	}
	if u.OutputTokens, ok = integer(completion); !ok {
		return decodeError("response completion_tokens is not an integer")
	}
	return nil
}

// Absent reports whether a raw member value is missing or null, which
// Decode and the request readers treat alike.
func Absent(v []byte) bool { return len(v) == 0 || string(v) == "null" }

// IsString reports whether the raw member value v is a JSON string.
func IsString(v []byte) bool { return len(v) > 0 && v[0] == '"' }

// isText reports whether the raw value v is the JSON string s.
func isText(v []byte, s string) bool {
	switch {
	case !IsString(v):
		return false
	case bytes.IndexByte(v, '\\') < 0:
		return string(v[1:len(v)-1]) == s
	}
	return string(jsonscan.Unquote(nil, v)) == s
}

// stringOr returns the text of a raw string value, or "" for any other
// value. It takes strings with invalid UTF-8 (ErrorCode reads any body).
func stringOr(v []byte) string {
	if !IsString(v) {
		return ""
	}
	return string(jsonscan.Unquote(make([]byte, 0, len(v)-2), v))
}

// PlainString decodes a raw value that must be a string or absent (null):
// ok is false for any other value. validUTF8 says that v is known to be
// valid UTF-8 (Decode checks the whole body first), which spares checking
// it again; otherwise a string with invalid UTF-8 is decoded as
// encoding/json decodes it, each invalid byte replaced by U+FFFD. The
// result may share memory with a new buffer but never with v.
func PlainString(v []byte, validUTF8 bool) (string, bool) {
	switch {
	case Absent(v):
		return "", true
	case !IsString(v):
		return "", false
	}
	if inner := v[1 : len(v)-1]; bytes.IndexByte(inner, '\\') < 0 && (validUTF8 || utf8.Valid(inner)) {
		return string(inner), true
	}
	return BytesString(jsonscan.Unquote(make([]byte, 0, len(v)-2), v)), true
}

// integer decodes a raw value that must be absent (null, 0) or an integer
// that fits an int64, as encoding/json decodes into an int: a fraction or
// an exponent is not an integer, even when its value is whole.
func integer(v []byte) (int, bool) {
	if Absent(v) {
		return 0, true
	}
	if len(v) <= 18 {
		n, neg, w := 0, v[0] == '-', v
		if neg {
			w = w[1:]
		}
		for _, c := range w {
			if c < '0' || c > '9' {
				return 0, false
			}
			n = n*10 + int(c-'0')
		}
		if neg {
			n = -n
		}
		return n, len(w) > 0
	}
	n, err := strconv.ParseInt(string(v), 10, 64)
	return int(n), err == nil
}

// BytesString returns b as a string without copying; b must never be
// written again.
func BytesString(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(&b[0], len(b))
}

// stringArena decodes several string values of a valid UTF-8 document into
// one buffer: reserve every value first, then decode each. The strings share
// the buffer, whose bytes are never written again once a string refers to
// them.
type stringArena struct {
	size int
	buf  []byte
}

// reserve accounts a raw value that must be a string or absent (null); it
// reports false for any other value.
func (a *stringArena) reserve(v []byte) bool {
	switch {
	case Absent(v):
		return true
	case !IsString(v):
		return false
	}
	// Decoding never lengthens valid UTF-8 text: an escape is longer than
	// what it decodes to.
	a.size += len(v) - 2
	return true
}

// decode returns the text of the reserved string value v.
func (a *stringArena) decode(v []byte) string {
	if a.buf == nil {
		a.buf = make([]byte, 0, a.size)
	}
	start := len(a.buf)
	a.buf = jsonscan.Unquote(a.buf, v)
	// Only appends follow, and they never write where a string points (if
	// append moves the buffer, the earlier strings keep the old one).
	return BytesString(a.buf[start:])
}
