package openai

import (
	"bytes"
	"encoding/json"
	"sync/atomic"
	"unicode/utf8"
	"unsafe"

	"github.com/recourse-dev/recourse/chat"
	"github.com/recourse-dev/recourse/codecs/internal/jsonscan"
	"github.com/recourse-dev/recourse/layer"
)

// The fast paths below read the common shapes of a response body and of a
// request body without encoding/json: one validating pass over the whole
// body (jsonscan.ValidObject, SkipValid) that records the raw values of the
// members they read, keys compared exactly, byte for byte, then a walk over
// those raw values (tool calls, usage). They decide nothing themselves:
// whenever a body is not of the common shape (an error object, a field of an
// unexpected type, an escaped key, a number that is not a plain integer, a
// missing choice or message, invalid or too deeply nested JSON) they report
// ok=false and the reference decoders in decode.go, which handle every body,
// decide. So a fast path returns exactly what its reference decoder returns
// for the same body, only sooner (fast_test.go checks this by fuzzing).

// response holds the raw values fastDecode reads, found in one validating
// pass over the body; a member that appears twice keeps its last value, as
// the reference decoder's maps do.
type response struct {
	id, model, choices, usage, errv, object []byte
	choice, finish, msg                     []byte // of choices[0]
	content, reasoningContent, reasoning    []byte // of its message
	toolCalls, functionCall                 []byte
}

// fastDecode is the fast path of Decode for a body that is valid UTF-8.
func fastDecode(body []byte) (*chat.Completion, bool) { return fastRead(body, true) }

// fastCheck is the fast path of Check for a body that is valid UTF-8: it
// reports true exactly when fastDecode would return a completion, without
// building one (a body with tool calls still decodes them).
func fastCheck(body []byte) bool {
	_, ok := fastRead(body, false)
	return ok
}

// fastRead is fastDecode when build is set; otherwise it makes every check
// fastDecode makes and returns a nil completion.
func fastRead(body []byte, build bool) (*chat.Completion, bool) {
	var r response
	if !r.scan(body) {
		return nil, false
	}
	id, model, choices, usage, errv, object := r.id, r.model, r.choices, r.usage, r.errv, r.object
	// A provider error object, {"object":"error"} (also escaped), and a body
	// without a first choice object with a message object are left to the
	// reference decoder.
	if !absent(errv) || isString(object) && (string(object) == `"error"` || hasEscape(object)) ||
		len(choices) == 0 || choices[0] != '[' || len(r.choice) == 0 || r.choice[0] != '{' ||
		len(r.msg) == 0 || r.msg[0] != '{' {
		return nil, false
	}
	finish, content, reasoningContent, reasoning := r.finish, r.content, r.reasoningContent, r.reasoning
	toolCalls, functionCall := r.toolCalls, r.functionCall
	// reasoning is read (and so type-checked) only when reasoning_content
	// is absent, null or empty, as in the reference decoder.
	if isString(reasoningContent) && len(reasoningContent) > 2 {
		reasoning = nil
	}
	// One allocation holds the completion and its usage, and one holds the
	// text of every string field (the strings share it and never change).
	type completion struct {
		c chat.Completion
		u chat.Usage
	}
	var texts stringArena
	for _, v := range [...][]byte{id, model, finish, content, reasoningContent, reasoning} {
		if !texts.reserve(v) {
			return nil, false
		}
	}
	var (
		out  *completion
		comp *chat.Completion
		u    *chat.Usage
	)
	if build {
		out = &completion{c: chat.Completion{Message: chat.Message{Role: chat.Assistant}}}
		comp, u = &out.c, &out.u
		fields := [...]struct {
			v   []byte
			dst *string
		}{
			{id, &comp.ID}, {model, &comp.Model}, {finish, &comp.FinishReason},
			{content, &comp.Message.Content}, {reasoningContent, &comp.Message.Reasoning},
			{reasoning, &comp.Message.Reasoning},
		}
		for _, f := range fields {
			if isString(f.v) && *f.dst == "" {
				*f.dst = texts.decode(f.v)
			}
		}
	}
	if !absent(toolCalls) || !absent(functionCall) {
		calls, ok := fastToolCalls(toolCalls, functionCall)
		if !ok {
			return nil, false
		}
		if build {
			comp.Message.ToolCalls = calls
		}
	}
	if !absent(usage) {
		if usage[0] != '{' {
			return nil, false
		}
		for m := jsonscan.ObjectMembers(usage); ; {
			key, escaped, v, ok := m.Next()
			if !ok {
				break
			}
			if escaped {
				return nil, false
			}
			var dst *int
			switch string(key) {
			case "prompt_tokens":
				if build {
					dst = &u.InputTokens
				}
			case "completion_tokens":
				if build {
					dst = &u.OutputTokens
				}
			default:
				continue
			}
			n, ok := plainInt(v)
			if !ok {
				return nil, false
			}
			if dst != nil {
				*dst = n
			}
		}
		if build {
			comp.Usage = u
		}
	}
	return comp, true
}

// scan checks that body is one JSON value nested at most jsonscan.MaxDepth
// deep and, when it is an object, records the members fastDecode reads.
// It reports false for anything else, and for an escaped key where keys are
// matched (the reference decoder decides those bodies).
func (r *response) scan(body []byte) bool {
	i := jsonscan.SkipSpace(body, 0)
	if i >= len(body) || body[i] != '{' {
		return false
	}
	raw := func(dst *[]byte, v, depth int) int {
		end := jsonscan.SkipValid(body, v, depth)
		if end >= 0 {
			*dst = body[v:end]
		}
		return end
	}
	message := func(key []byte, escaped bool, v int) int {
		if escaped {
			return -1
		}
		switch string(key) {
		case "content":
			return raw(&r.content, v, 4)
		case "reasoning_content":
			return raw(&r.reasoningContent, v, 4)
		case "reasoning":
			return raw(&r.reasoning, v, 4)
		case "tool_calls":
			return raw(&r.toolCalls, v, 4)
		case "function_call":
			return raw(&r.functionCall, v, 4)
		}
		return jsonscan.SkipValid(body, v, 4)
	}
	choice := func(key []byte, escaped bool, v int) int {
		if escaped {
			return -1
		}
		switch string(key) {
		case "message":
			r.content, r.reasoningContent, r.reasoning, r.toolCalls, r.functionCall = nil, nil, nil, nil, nil
			end := -1
			if body[v] == '{' {
				end = jsonscan.ValidObject(body, v, 3, message)
			} else {
				end = jsonscan.SkipValid(body, v, 3)
			}
			if end >= 0 {
				r.msg = body[v:end]
			}
			return end
		case "finish_reason":
			return raw(&r.finish, v, 3)
		}
		return jsonscan.SkipValid(body, v, 3)
	}
	choices := func(n, v int) int {
		if n > 0 || body[v] != '{' {
			if n == 0 {
				return raw(&r.choice, v, 2)
			}
			return jsonscan.SkipValid(body, v, 2)
		}
		end := jsonscan.ValidObject(body, v, 2, choice)
		if end >= 0 {
			r.choice = body[v:end]
		}
		return end
	}
	top := func(key []byte, escaped bool, v int) int {
		if escaped {
			return -1
		}
		switch string(key) {
		case "id":
			return raw(&r.id, v, 1)
		case "model":
			return raw(&r.model, v, 1)
		case "usage":
			return raw(&r.usage, v, 1)
		case "error":
			return raw(&r.errv, v, 1)
		case "object":
			return raw(&r.object, v, 1)
		case "choices":
			// A later choices replaces everything read from an earlier one.
			r.choice, r.finish, r.msg = nil, nil, nil
			r.content, r.reasoningContent, r.reasoning, r.toolCalls, r.functionCall = nil, nil, nil, nil, nil
			end := -1
			if body[v] == '[' {
				end = jsonscan.ValidArray(body, v, 1, choices)
			} else {
				end = jsonscan.SkipValid(body, v, 1)
			}
			if end >= 0 {
				r.choices = body[v:end]
			}
			return end
		}
		return jsonscan.SkipValid(body, v, 1)
	}
	end := jsonscan.ValidObject(body, i, 0, top)
	return end >= 0 && jsonscan.SkipSpace(body, end) == len(body)
}

// fastToolCalls decodes tool_calls (an array of call objects, each with a
// function object) and then a legacy function_call object.
func fastToolCalls(toolCalls, functionCall []byte) ([]chat.ToolCall, bool) {
	n := 0
	if !absent(toolCalls) {
		if toolCalls[0] != '[' {
			return nil, false
		}
		for els := jsonscan.ArrayElements(toolCalls); ; n++ {
			if _, ok := els.Next(); !ok {
				break
			}
		}
	}
	if !absent(functionCall) {
		n++
	}
	if n == 0 {
		return nil, true // an empty tool_calls array and no function_call
	}
	calls := make([]chat.ToolCall, 0, n)
	if !absent(toolCalls) {
		for els := jsonscan.ArrayElements(toolCalls); ; {
			call, ok := els.Next()
			if !ok {
				break
			}
			if call[0] != '{' {
				return nil, false
			}
			var id, fn []byte
			for m := jsonscan.ObjectMembers(call); ; {
				key, escaped, v, ok := m.Next()
				if !ok {
					break
				}
				if escaped {
					return nil, false
				}
				switch string(key) {
				case "id":
					id = v
				case "function":
					fn = v
				}
			}
			tc, ok := fastFunction(fn)
			if !ok {
				return nil, false
			}
			if tc.ID, ok = plainString(id); !ok {
				return nil, false
			}
			calls = append(calls, tc)
		}
	}
	if !absent(functionCall) {
		tc, ok := fastFunction(functionCall)
		if !ok {
			return nil, false
		}
		calls = append(calls, tc)
	}
	return calls, true
}

// fastFunction decodes {"name":…,"arguments":…} as decodeFunction does.
func fastFunction(fn []byte) (chat.ToolCall, bool) {
	var tc chat.ToolCall
	if len(fn) == 0 || fn[0] != '{' {
		return tc, false
	}
	var name, args []byte
	for m := jsonscan.ObjectMembers(fn); ; {
		key, escaped, v, ok := m.Next()
		if !ok {
			break
		}
		if escaped {
			return tc, false
		}
		switch string(key) {
		case "name":
			name = v
		case "arguments":
			args = v
		}
	}
	var ok bool
	if tc.Name, ok = plainString(name); !ok {
		return tc, false
	}
	switch {
	case absent(args):
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
	return tc, true
}

// fastDescribe is the fast path of Describe.
func fastDescribe(body []byte) (layer.RequestInfo, bool) {
	var info layer.RequestInfo
	i := jsonscan.SkipSpace(body, 0)
	if i >= len(body) || body[i] != '{' {
		return info, false
	}
	var model, stream, format, typ []byte
	raw := func(dst *[]byte, v, depth int) int {
		end := jsonscan.SkipValid(body, v, depth)
		if end >= 0 {
			*dst = body[v:end]
		}
		return end
	}
	formatMember := func(key []byte, escaped bool, v int) int {
		if escaped {
			return -1
		}
		if string(key) == "type" {
			return raw(&typ, v, 2)
		}
		return jsonscan.SkipValid(body, v, 2)
	}
	end := jsonscan.ValidObject(body, i, 0, func(key []byte, escaped bool, v int) int {
		if escaped {
			return -1
		}
		switch string(key) {
		case "model":
			return raw(&model, v, 1)
		case "stream":
			return raw(&stream, v, 1)
		case "response_format":
			typ = nil
			if body[v] == '{' {
				end := jsonscan.ValidObject(body, v, 1, formatMember)
				if end >= 0 {
					format = body[v:end]
				}
				return end
			}
			return raw(&format, v, 1)
		}
		return jsonscan.SkipValid(body, v, 1)
	})
	if end < 0 || jsonscan.SkipSpace(body, end) != len(body) {
		return info, false
	}
	if !absent(format) && format[0] != '{' || !absent(typ) && (!isString(typ) || hasEscape(typ)) {
		return info, false
	}
	switch {
	case absent(stream), string(stream) == "true", string(stream) == "false":
	default:
		return info, false
	}
	var ok bool
	if info.Model, ok = requestModel(model); !ok {
		return info, false
	}
	switch {
	case string(stream) == "true":
		info.Operation = layer.Streaming
	case string(typ) == `"json_schema"` || string(typ) == `"json_object"`:
		info.Operation = layer.Structured
	default:
		info.Operation = layer.Ordinary
	}
	return info, true
}

// lastModel is the last model name requestModel decoded. The calls of one
// process mostly name the same few models, so a repeat costs no allocation.
var lastModel atomic.Pointer[string]

// requestModel is plainString for a request's model: a raw string without
// escapes that spells the last model decoded returns that string.
func requestModel(v []byte) (string, bool) {
	if len(v) >= 2 && v[0] == '"' {
		if inner := v[1 : len(v)-1]; !hasEscape(inner) {
			if p := lastModel.Load(); p != nil && *p == string(inner) {
				return *p, true
			}
		}
	}
	s, ok := plainString(v)
	if ok && s != "" {
		lastModel.Store(&s)
	}
	return s, ok
}

// absent reports whether a raw member value is missing or null, which the
// reference decoders treat alike.
func absent(v []byte) bool { return len(v) == 0 || string(v) == "null" }

func isString(v []byte) bool { return len(v) > 0 && v[0] == '"' }

func hasEscape(v []byte) bool { return bytes.IndexByte(v, '\\') >= 0 }

// plainString decodes a raw value that must be a string or absent (null).
func plainString(v []byte) (string, bool) {
	switch {
	case absent(v):
		return "", true
	case !isString(v):
		return "", false
	}
	if inner := v[1 : len(v)-1]; !hasEscape(inner) && utf8.Valid(inner) {
		return string(inner), true
	}
	return bytesString(jsonscan.Unquote(make([]byte, 0, len(v)-2), v)), true
}

// bytesString returns b as a string without copying; b must never be
// written again.
func bytesString(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(&b[0], len(b))
}

// plainInt decodes a raw value that must be absent (null, leaving 0) or a
// plain decimal integer that fits an int; anything else (a fraction, an
// exponent, an overflow, another type) is left to the reference decoder.
func plainInt(v []byte) (int, bool) {
	if absent(v) {
		return 0, true
	}
	neg := v[0] == '-'
	if neg {
		v = v[1:]
	}
	if len(v) == 0 || len(v) > 18 {
		return 0, false
	}
	n := 0
	for _, c := range v {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	if neg {
		n = -n
	}
	return n, true
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
	case absent(v):
		return true
	case !isString(v):
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
	return bytesString(a.buf[start:])
}
