package openaiwire

import (
	"encoding/json"
	"errors"
	"unicode/utf8"

	"github.com/recourse-dev/recourse/chat"
	"github.com/recourse-dev/recourse/codec"
	"github.com/recourse-dev/recourse/codecs/internal/jsonscan"
)

// The decoder below reads a complete chat completion object in one
// validating pass over the body (jsonscan.ValidObject, SkipValid) that
// records the raw values of the members it reads, keys compared exactly
// after unescaping, then walks those raw values (the first choice, tool
// calls, usage). It decides every body itself and returns what decoding the
// body into encoding/json maps (map[string]json.RawMessage, keys matched
// exactly, the last of duplicate keys winning) and reading the same members
// returns, error for error: decode_test.go checks that against such a
// decoder by fuzzing. The one difference is by design: a body nested
// deeper than the observer scans (jsonscan.MaxDepth) is refused, so that
// everything Decode returns was also observed (R13.2).

// response holds the raw values Decode reads, found in one validating pass
// over the body; a member that appears twice keeps its last value, as a map
// does, and a later choices or message replaces everything read from an
// earlier one.
type response struct {
	id, model, choices, usage, errv, object, code, message []byte
	choice, finish, msg                                    []byte // of choices[0]
	content, reasoningContent, reasoning                   []byte // of its message
	toolCalls, functionCall                                []byte
}

// Decode decodes a complete 2xx chat completion body as d reads it.
//
// A body with a top-level "error" other than null is a
// *[codec.ProviderError]: an object gives its "code" (when a string) and
// "message", a string is the message, and another value is a
// *[codec.ProtocolError] when d.StrictError is set and a ProviderError
// without code or message otherwise. With d.VLLMError, vLLM's
// {"object":"error","code":…,"message":…} is a ProviderError too.
//
// A body that is not valid UTF-8, not JSON (also an empty or
// whitespace-only body), not one object (surrounding whitespace is
// allowed; null has no choices), nested deeper than
// jsonscan.MaxDepth, without choices[0].message, or whose members have the
// wrong types is a *[codec.ProtocolError] whose What never quotes the body.
// With d.Objects a tool call must also name its function and carry
// arguments that are a string holding a JSON object (an absent, null or
// blank string is {}).
//
// Otherwise Decode returns the assistant message of choices[0] (content;
// reasoning_content, or reasoning when that is absent or empty; tool calls,
// then a legacy function_call as one more call without an ID) with its
// finish reason, the id, the model and the usage (nil when the body has
// none). Keys are matched exactly after unescaping. Decode never returns
// both a completion and an error, and is safe for concurrent use.
func (d *Dialect) Decode(body []byte) (*chat.Completion, error) { return d.read(body, true) }

// Check returns the error Decode returns for body, nil when Decode would
// succeed, without building the completion's strings (codec.Checker). It
// is safe for concurrent use.
func (d *Dialect) Check(body []byte) error {
	_, err := d.read(body, false)
	return err
}

// ErrorCode returns the code of the *codec.ProviderError that Decode
// returns for body, or "" when Decode returns none or its code is empty.
// Unlike Decode it takes invalid UTF-8 (decoded as encoding/json does, to
// U+FFFD), as error bodies of any status are read with it. It never falls
// back to error.type, accepts any bytes without panicking, and is safe for
// concurrent use.
func (d *Dialect) ErrorCode(body []byte) string {
	var r response
	if !r.scan(body) {
		return ""
	}
	if pe, ok := d.providerError(&r).(*codec.ProviderError); ok {
		return pe.Code
	}
	return ""
}

// decodeError returns a *codec.ProtocolError with a safe description,
// which is also its underlying error.
func decodeError(what string) error {
	return &codec.ProtocolError{What: what, Err: errors.New(what)}
}

// read is Decode when build is set; otherwise it makes every check Decode
// makes and returns a nil completion.
func (d *Dialect) read(body []byte, build bool) (*chat.Completion, error) {
	if !utf8.Valid(body) {
		return nil, decodeError("response is not valid UTF-8")
	}
	var r response
	if !r.scan(body) {
		return nil, syntaxError(body)
	}
	if err := d.providerError(&r); err != nil {
		return nil, err
	}
	switch {
	case Absent(r.choices) || r.choices[0] == '[' && r.choice == nil:
		return nil, decodeError("response has no choices")
	case r.choices[0] != '[':
		return nil, decodeError("response choices is not an array")
	case r.choice[0] != '{' && !Absent(r.choice):
		return nil, decodeError("response choice is not an object")
	case Absent(r.msg):
		return nil, decodeError("response has no message")
	case r.msg[0] != '{':
		return nil, decodeError("response message is not an object")
	}
	// reasoning is read (and so type-checked) only when reasoning_content
	// is absent, null or empty.
	reasoning := r.reasoning
	if IsString(r.reasoningContent) && len(r.reasoningContent) > 2 {
		reasoning = nil
	}
	// One allocation holds the completion and its usage, and one holds the
	// text of every string member (the strings share it and never change).
	texts := [...][]byte{r.id, r.model, r.finish, r.content, r.reasoningContent, reasoning}
	var arena stringArena
	for i, v := range texts {
		if !arena.reserve(v) {
			return nil, decodeError(textWhat[i])
		}
	}
	var calls []chat.ToolCall
	if !Absent(r.toolCalls) || !Absent(r.functionCall) {
		var err error
		if calls, err = d.decodeToolCalls(r.toolCalls, r.functionCall); err != nil {
			return nil, err
		}
	}
	var usage chat.Usage
	if !Absent(r.usage) {
		if err := decodeUsage(r.usage, &usage); err != nil {
			return nil, err
		}
	}
	if !build {
		return nil, nil
	}
	out := &struct {
		c chat.Completion
		u chat.Usage
	}{c: chat.Completion{Message: chat.Message{Role: chat.Assistant, ToolCalls: calls}}, u: usage}
	comp := &out.c
	dsts := [...]*string{&comp.ID, &comp.Model, &comp.FinishReason, &comp.Message.Content,
		&comp.Message.Reasoning, &comp.Message.Reasoning}
	for i, v := range texts {
		if IsString(v) && *dsts[i] == "" {
			*dsts[i] = arena.decode(v)
		}
	}
	if !Absent(r.usage) {
		comp.Usage = &out.u
	}
	return comp, nil
}

// textWhat says, for each string member read reads in turn, what is wrong
// when it is not a string.
var textWhat = [...]string{
	"response id is not a string",
	"response model is not a string",
	"response finish_reason is not a string",
	"response content is not a string",
	"response reasoning_content is not a string",
	"response reasoning is not a string",
}

// syntaxError returns the error of a body (valid UTF-8) that scan refused.
func syntaxError(body []byte) error {
	t := jsonscan.TrimSpace(body)
	switch {
	case !json.Valid(t): // also an empty or whitespace-only body
		var v json.RawMessage
		return &codec.ProtocolError{What: "response is not valid JSON", Err: json.Unmarshal(t, &v)}
	case string(t) == "null":
		// As a null object: no member, so no choices.
		return decodeError("response has no choices")
	case t[0] != '{':
		return decodeError("response is not a JSON object")
	}
	// encoding/json accepts nesting far deeper than the observer scans; a
	// body the observer cannot account for is not accepted either, so that
	// everything Decode returns was also observed.
	return decodeError("response is nested too deeply")
}

// scan checks that body is one JSON object nested at most jsonscan.MaxDepth
// deep, optionally surrounded by whitespace, and records the members Decode
// reads. It reports false for anything else.
// It is one function of more than 80 lines because its closures, one per
// nesting level (message, choice, choices, top), share body and r and nest
// as the document does; apart, each would take both.
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
			key = jsonscan.Unescape(nil, key)
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
			key = jsonscan.Unescape(nil, key)
		}
		switch string(key) {
		case "message":
			r.content, r.reasoningContent, r.reasoning, r.toolCalls, r.functionCall = nil, nil, nil, nil, nil
			if body[v] != '{' {
				return raw(&r.msg, v, 3)
			}
			end := jsonscan.ValidObject(body, v, 3, message)
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
		switch {
		case n > 0:
			return jsonscan.SkipValid(body, v, 2)
		case body[v] != '{':
			return raw(&r.choice, v, 2)
		}
		end := jsonscan.ValidObject(body, v, 2, choice)
		if end >= 0 {
			r.choice = body[v:end]
		}
		return end
	}
	top := func(key []byte, escaped bool, v int) int {
		if escaped {
			key = jsonscan.Unescape(nil, key)
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
		case "code":
			return raw(&r.code, v, 1)
		case "message":
			return raw(&r.message, v, 1)
		case "choices":
			r.choice, r.finish, r.msg = nil, nil, nil
			r.content, r.reasoningContent, r.reasoning, r.toolCalls, r.functionCall = nil, nil, nil, nil, nil
			if body[v] != '[' {
				return raw(&r.choices, v, 1)
			}
			end := jsonscan.ValidArray(body, v, 1, choices)
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

// providerError returns the error of a body that reports one, or nil.
func (d *Dialect) providerError(r *response) error {
	if !Absent(r.errv) {
		switch r.errv[0] {
		case '{':
			var code, message []byte
			for m := jsonscan.ObjectMembers(r.errv); ; {
				key, v, ok := m.NextName()
				if !ok {
					break
				}
				switch string(key) {
				case "code":
					code = v
				case "message":
					message = v
				}
			}
			return &codec.ProviderError{Code: stringOr(code), Message: stringOr(message)}
		case '"':
			// {"error":"text"}, as some compatible servers send.
			return &codec.ProviderError{Message: stringOr(r.errv)}
		}
		if d.StrictError {
			return decodeError("response error is neither an object nor a string")
		}
		return &codec.ProviderError{}
	}
	if d.VLLMError && isText(r.object, "error") {
		// vLLM: {"object":"error","message":…,"type":…,"code":400}.
		return &codec.ProviderError{Code: stringOr(r.code), Message: stringOr(r.message)}
	}
	return nil
}
