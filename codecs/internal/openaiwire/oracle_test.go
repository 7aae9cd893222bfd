package openaiwire

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"unicode/utf8"

	"github.com/recourse-dev/recourse/chat"
	"github.com/recourse-dev/recourse/codec"
	"github.com/recourse-dev/recourse/codecs/internal/jsonscan"
)

// This file holds the oracle that Dialect.Decode is checked against: the
// same reading of a reply, written plainly on encoding/json. Objects are
// decoded into maps, so keys match exactly after unescaping and the last of
// duplicate keys wins; values are decoded with json.Unmarshal into the Go
// type the member must have.

// object is a decoded JSON object.
type object map[string]json.RawMessage

// has reports whether key is present with a value other than null.
func (o object) has(key string) bool {
	v, ok := o[key]
	return ok && string(v) != "null"
}

// get decodes the value at key into v; an absent key or null leaves v
// unchanged.
func (o object) get(key string, v any) error {
	raw, ok := o[key]
	if !ok || string(raw) == "null" {
		return nil
	}
	return json.Unmarshal(raw, v)
}

// str returns the value at key when it is a string, else "".
func (o object) str(key string) string {
	var s string
	if o.get(key, &s) != nil {
		return ""
	}
	return s
}

// oracleError is the oracle's *codec.ProtocolError.
func oracleError(what string) error { return &codec.ProtocolError{What: what} }

// depth returns how deeply the valid JSON document body nests, read with
// encoding/json's tokenizer.
func depth(body []byte) int {
	dec := json.NewDecoder(bytes.NewReader(body))
	d, most := 0, 0
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			return most
		}
		if err != nil {
			return most
		}
		switch tok {
		case json.Delim('{'), json.Delim('['):
			d++
			most = max(most, d)
		case json.Delim('}'), json.Delim(']'):
			d--
		}
	}
}

// oracleTop parses body as the top-level object of a reply, or returns the
// error Decode returns for a body that is not one.
func oracleTop(body []byte) (object, error) {
	if !json.Valid(body) {
		return nil, oracleError("response is not valid JSON")
	}
	var top object
	if json.Unmarshal(body, &top) != nil {
		return nil, oracleError("response is not a JSON object")
	}
	if top == nil {
		return nil, oracleError("response has no choices") // null
	}
	if depth(body) > jsonscan.MaxDepth {
		return nil, oracleError("response is nested too deeply")
	}
	return top, nil
}

// oracleProviderError is the provider error of top under d, or nil.
func oracleProviderError(d *Dialect, top object) error {
	if top.has("error") {
		var e object
		if top.get("error", &e) == nil {
			return &codec.ProviderError{Code: e.str("code"), Message: e.str("message")}
		}
		var s string
		if top.get("error", &s) == nil {
			return &codec.ProviderError{Message: s}
		}
		if d.StrictError {
			return oracleError("response error is neither an object nor a string")
		}
		return &codec.ProviderError{}
	}
	if d.VLLMError && top.str("object") == "error" {
		return &codec.ProviderError{Code: top.str("code"), Message: top.str("message")}
	}
	return nil
}

// oracleErrorCode is Dialect.ErrorCode on encoding/json.
func oracleErrorCode(d *Dialect, body []byte) string {
	var top object
	if json.Unmarshal(body, &top) != nil || top == nil || depth(body) > jsonscan.MaxDepth {
		return ""
	}
	if pe, ok := oracleProviderError(d, top).(*codec.ProviderError); ok {
		return pe.Code
	}
	return ""
}

// oracleDecode is Dialect.Decode on encoding/json.
func oracleDecode(d *Dialect, body []byte) (*chat.Completion, error) {
	if !utf8.Valid(body) {
		return nil, oracleError("response is not valid UTF-8")
	}
	top, err := oracleTop(body)
	if err != nil {
		return nil, err
	}
	if err := oracleProviderError(d, top); err != nil {
		return nil, err
	}
	var choices []json.RawMessage
	if top.get("choices", &choices) != nil {
		return nil, oracleError("response choices is not an array")
	}
	if len(choices) == 0 {
		return nil, oracleError("response has no choices")
	}
	var choice, msg object
	if json.Unmarshal(choices[0], &choice) != nil {
		return nil, oracleError("response choice is not an object")
	}
	if choice.get("message", &msg) != nil {
		return nil, oracleError("response message is not an object")
	}
	if msg == nil {
		return nil, oracleError("response has no message")
	}
	comp := &chat.Completion{Message: chat.Message{Role: chat.Assistant}}
	for _, f := range []struct {
		obj      object
		key      string
		dst      *string
		whenNone *string
	}{
		{top, "id", &comp.ID, nil},
		{top, "model", &comp.Model, nil},
		{choice, "finish_reason", &comp.FinishReason, nil},
		{msg, "content", &comp.Message.Content, nil},
		{msg, "reasoning_content", &comp.Message.Reasoning, nil},
		{msg, "reasoning", &comp.Message.Reasoning, &comp.Message.Reasoning},
	} {
		if f.whenNone != nil && *f.whenNone != "" {
			continue // reasoning only when reasoning_content is empty
		}
		if f.obj.get(f.key, f.dst) != nil {
			return nil, oracleError("response " + f.key + " is not a string")
		}
	}
	if comp.Message.ToolCalls, err = oracleToolCalls(d, msg); err != nil {
		return nil, err
	}
	if top.has("usage") {
		var usage object
		u := &chat.Usage{}
		if top.get("usage", &usage) != nil {
			return nil, oracleError("response usage is not an object")
		}
		if usage.get("prompt_tokens", &u.InputTokens) != nil {
			return nil, oracleError("response prompt_tokens is not an integer")
		}
		if usage.get("completion_tokens", &u.OutputTokens) != nil {
			return nil, oracleError("response completion_tokens is not an integer")
		}
		comp.Usage = u
	}
	return comp, nil
}

// oracleToolCalls returns the tool calls of msg, then its legacy
// function_call, if any.
func oracleToolCalls(d *Dialect, msg object) ([]chat.ToolCall, error) {
	var raws []json.RawMessage
	if msg.get("tool_calls", &raws) != nil {
		return nil, oracleError("response tool_calls is not an array")
	}
	var fc object
	if msg.get("function_call", &fc) != nil {
		return nil, oracleError("response function_call is not an object")
	}
	var calls []chat.ToolCall
	for _, raw := range raws {
		var call, fn object
		if err := json.Unmarshal(raw, &call); err != nil || call == nil {
			return nil, oracleError("response tool call is not an object")
		}
		if err := call.get("function", &fn); err != nil || fn == nil {
			return nil, oracleError("response tool call has no function")
		}
		tc, err := oracleFunction(d, fn)
		if err != nil {
			return nil, err
		}
		if call.get("id", &tc.ID) != nil {
			return nil, oracleError("response tool call id is not a string")
		}
		calls = append(calls, tc)
	}
	if fc != nil {
		tc, err := oracleFunction(d, fc)
		if err != nil {
			return nil, err
		}
		calls = append(calls, tc)
	}
	return calls, nil
}

// oracleFunction decodes {"name":…,"arguments":…}.
func oracleFunction(d *Dialect, fn object) (chat.ToolCall, error) {
	var tc chat.ToolCall
	if fn.get("name", &tc.Name) != nil {
		return tc, oracleError("response tool call name is not a string")
	}
	raw := fn["arguments"]
	var s string
	isString := fn.get("arguments", &s) == nil
	if d.Objects {
		switch {
		case tc.Name == "":
			return tc, oracleError("response tool call has no name")
		case !isString:
			return tc, oracleError("response tool call arguments are not a string")
		case len(bytes.Trim([]byte(s), " \t\r\n")) == 0:
			tc.Arguments = json.RawMessage("{}")
		default:
			var o map[string]json.RawMessage
			if json.Unmarshal([]byte(s), &o) != nil || o == nil {
				return tc, oracleError("response tool call arguments are not a JSON object")
			}
			tc.Arguments = json.RawMessage(s)
		}
		return tc, nil
	}
	switch {
	case !fn.has("arguments"):
	case !isString:
		tc.Arguments = append(json.RawMessage(nil), raw...)
	case json.Valid([]byte(s)):
		tc.Arguments = json.RawMessage(s)
	default:
		tc.Arguments, _ = json.Marshal(s)
	}
	return tc, nil
}

// sameError reports whether got is the error want is: the same type, the
// same ProtocolError.What or the same ProviderError fields.
func sameError(got, want error) bool {
	var gpr, wpr *codec.ProtocolError
	var gpv, wpv *codec.ProviderError
	switch {
	case got == nil || want == nil:
		return got == nil && want == nil
	case errors.As(want, &wpr):
		return errors.As(got, &gpr) && gpr.What == wpr.What
	case errors.As(want, &wpv):
		return errors.As(got, &gpv) && *gpv == *wpv
	}
	return false
}
