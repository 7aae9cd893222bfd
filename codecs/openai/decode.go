package openai

import (
	"encoding/json"
	"errors"
	"unicode/utf8"

	"github.com/recourse-dev/recourse/chat"
	"github.com/recourse-dev/recourse/codecs/internal/jsonscan"
	"github.com/recourse-dev/recourse/layer"
)

// object is a decoded JSON object whose keys are matched exactly, after
// unescaping. Decoding into structs would also match keys case-insensitively
// ("Content" for "content"), which the observer does not count.
type object map[string]json.RawMessage

// has reports whether key is present with a value other than null.
func (o object) has(key string) bool {
	v, ok := o[key]
	return ok && !isNull(v)
}

// get decodes the value at key into v. An absent key or null leaves v
// unchanged.
func (o object) get(key string, v any) error {
	raw, ok := o[key]
	if !ok || isNull(raw) {
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

func isNull(raw json.RawMessage) bool { return string(raw) == "null" }

// protocolError returns a *layer.ProtocolError with a safe description.
func protocolError(what string, err error) error {
	if err == nil {
		err = errors.New(what)
	}
	return &layer.ProtocolError{What: what, Err: err}
}

// parseObject decodes body as one JSON object. A null body yields a nil
// object and no error.
func parseObject(body []byte, noun string) (object, error) {
	var o object
	if err := json.Unmarshal(body, &o); err != nil {
		if _, ok := err.(*json.UnmarshalTypeError); ok {
			return nil, protocolError(noun+" is not a JSON object", err)
		}
		return nil, protocolError(noun+" is not valid JSON", err)
	}
	return o, nil
}

// Describe reads the model and operation of an encoded request body:
// streaming when "stream" is true, structured when response_format has type
// json_schema or json_object, ordinary otherwise. A body that is not a JSON
// object, or whose model, stream or response_format has the wrong type, is
// a *[layer.ProtocolError]. Describe is safe for concurrent use.
func (c *Codec) Describe(body []byte) (layer.RequestInfo, error) {
	if info, ok := fastDescribe(body); ok {
		return info, nil
	}
	return describe(body)
}

// describe is the reference implementation of Describe: it handles every
// body, and fastDescribe returns what it returns, only for fewer bodies.
func describe(body []byte) (layer.RequestInfo, error) {
	o, err := parseObject(body, "request")
	if err != nil {
		return layer.RequestInfo{}, err
	}
	var (
		info   layer.RequestInfo
		stream bool
		format object
		typ    string
	)
	if err := o.get("model", &info.Model); err != nil {
		return layer.RequestInfo{}, protocolError("request model is not a string", err)
	}
	if err := o.get("stream", &stream); err != nil {
		return layer.RequestInfo{}, protocolError("request stream is not a boolean", err)
	}
	if err := o.get("response_format", &format); err != nil {
		return layer.RequestInfo{}, protocolError("request response_format is not an object", err)
	}
	if err := format.get("type", &typ); err != nil {
		return layer.RequestInfo{}, protocolError("request response_format type is not a string", err)
	}
	switch {
	case stream:
		info.Operation = layer.Streaming
	case typ == "json_schema" || typ == "json_object":
		info.Operation = layer.Structured
	default:
		info.Operation = layer.Ordinary
	}
	return info, nil
}

// Decode decodes a complete 2xx response body. A body with a top-level
// error (an "error" value other than null, or vLLM's {"object":"error"}) is
// a *[layer.ProviderError]. A body that is not valid UTF-8, not a JSON
// object, nested deeper than the observer scans (512 levels), has no
// choices[0].message, or whose fields have the wrong types is a
// *[layer.ProtocolError]. Otherwise Decode returns the assistant message
// of choices[0] with its finish reason, the model, the completion ID and
// the usage (nil when the body has none). Decode never returns both a
// completion and an error, and is safe for concurrent use.
func (c *Codec) Decode(body []byte) (*chat.Completion, error) {
	if !utf8.Valid(body) {
		return nil, protocolError("response is not valid UTF-8", nil)
	}
	if comp, ok := fastDecode(body); ok {
		return comp, nil
	}
	return decode(body)
}

// Check returns the error Decode returns for body, nil when Decode would
// succeed, without building the completion (layer.Checker): the engine
// calls it for a drop-in call whose decoded completion nobody reads. It is
// safe for concurrent use.
func (c *Codec) Check(body []byte) error {
	if !utf8.Valid(body) {
		return protocolError("response is not valid UTF-8", nil)
	}
	if fastCheck(body) {
		return nil
	}
	_, err := decode(body)
	return err
}

var _ layer.Checker = (*Codec)(nil)

// anyJSON checks syntax only: the depth check of decode.
var anyJSON = jsonscan.Compile(nil)

// decode is the reference implementation of Decode for a body that is valid
// UTF-8: it handles every body, and fastDecode returns what it returns, only
// for fewer bodies.
func decode(body []byte) (*chat.Completion, error) {
	top, err := parseObject(body, "response")
	if err != nil {
		return nil, err
	}
	// encoding/json accepts nesting far deeper than the observer scans; a
	// body the observer cannot account for is not accepted either, so that
	// everything Decode returns was also observed.
	if err := anyJSON.NewScanner().Write(body); err != nil {
		return nil, protocolError("response is nested too deeply", err)
	}
	if perr := providerError(top); perr != nil {
		return nil, perr
	}
	var choices []json.RawMessage
	if err := top.get("choices", &choices); err != nil {
		return nil, protocolError("response choices is not an array", err)
	}
	if len(choices) == 0 {
		return nil, protocolError("response has no choices", nil)
	}
	var choice object
	if err := json.Unmarshal(choices[0], &choice); err != nil {
		return nil, protocolError("response choice is not an object", err)
	}
	var msg object
	if err := choice.get("message", &msg); err != nil {
		return nil, protocolError("response message is not an object", err)
	}
	if msg == nil {
		return nil, protocolError("response has no message", nil)
	}
	comp := &chat.Completion{Message: chat.Message{Role: chat.Assistant}}
	fields := []struct {
		obj  object
		key  string
		dst  *string
		what string
	}{
		{top, "id", &comp.ID, "response id is not a string"},
		{top, "model", &comp.Model, "response model is not a string"},
		{choice, "finish_reason", &comp.FinishReason, "response finish_reason is not a string"},
		{msg, "content", &comp.Message.Content, "response content is not a string"},
		{msg, "reasoning_content", &comp.Message.Reasoning, "response reasoning_content is not a string"},
	}
	for _, f := range fields {
		if err := f.obj.get(f.key, f.dst); err != nil {
			return nil, protocolError(f.what, err)
		}
	}
	if comp.Message.Reasoning == "" {
		if err := msg.get("reasoning", &comp.Message.Reasoning); err != nil {
			return nil, protocolError("response reasoning is not a string", err)
		}
	}
	if comp.Message.ToolCalls, err = decodeToolCalls(msg); err != nil {
		return nil, err
	}
	if top.has("usage") {
		var usage object
		u := &chat.Usage{}
		if err := top.get("usage", &usage); err != nil {
			return nil, protocolError("response usage is not an object", err)
		}
		if err := usage.get("prompt_tokens", &u.InputTokens); err != nil {
			return nil, protocolError("response prompt_tokens is not an integer", err)
		}
		if err := usage.get("completion_tokens", &u.OutputTokens); err != nil {
			return nil, protocolError("response completion_tokens is not an integer", err)
		}
		comp.Usage = u
	}
	return comp, nil
}

// providerError returns the error object of top, or nil when it has none.
// Code is kept only when it is a string.
func providerError(top object) *layer.ProviderError {
	if top.has("error") {
		var e object
		if top.get("error", &e) != nil {
			// {"error":"text"}, as some compatible servers send.
			return &layer.ProviderError{Message: top.str("error")}
		}
		return &layer.ProviderError{Code: e.str("code"), Message: e.str("message")}
	}
	if top.str("object") == "error" {
		// vLLM: {"object":"error","message":…,"type":…,"code":400}.
		return &layer.ProviderError{Code: top.str("code"), Message: top.str("message")}
	}
	return nil
}

// decodeToolCalls returns the tool calls of msg, then its legacy
// function_call, if any.
func decodeToolCalls(msg object) ([]chat.ToolCall, error) {
	var raws []json.RawMessage
	if err := msg.get("tool_calls", &raws); err != nil {
		return nil, protocolError("response tool_calls is not an array", err)
	}
	var calls []chat.ToolCall
	for _, raw := range raws {
		var call, fn object
		if err := json.Unmarshal(raw, &call); err != nil || call == nil {
			return nil, protocolError("response tool call is not an object", err)
		}
		if err := call.get("function", &fn); err != nil || fn == nil {
			return nil, protocolError("response tool call has no function", err)
		}
		tc, err := decodeFunction(fn)
		if err != nil {
			return nil, err
		}
		if err := call.get("id", &tc.ID); err != nil {
			return nil, protocolError("response tool call id is not a string", err)
		}
		calls = append(calls, tc)
	}
	if msg.has("function_call") {
		var fn object
		if err := msg.get("function_call", &fn); err != nil {
			return nil, protocolError("response function_call is not an object", err)
		}
		tc, err := decodeFunction(fn)
		if err != nil {
			return nil, err
		}
		calls = append(calls, tc)
	}
	return calls, nil
}

// decodeFunction decodes {"name":…,"arguments":…}. Arguments that are a
// string holding valid JSON are kept as that JSON text; a string that is not
// valid JSON is kept as a JSON string value; a non-string value (some
// compatible servers send an object) is kept as it is.
func decodeFunction(fn object) (chat.ToolCall, error) {
	var tc chat.ToolCall
	if err := fn.get("name", &tc.Name); err != nil {
		return tc, protocolError("response tool call name is not a string", err)
	}
	raw, ok := fn["arguments"]
	if !ok || isNull(raw) {
		return tc, nil
	}
	var s string
	if json.Unmarshal(raw, &s) != nil {
		tc.Arguments = append(json.RawMessage(nil), raw...)
		return tc, nil
	}
	if json.Valid([]byte(s)) {
		tc.Arguments = json.RawMessage(s)
	} else {
		tc.Arguments, _ = json.Marshal(s) // a string always marshals
	}
	return tc, nil
}

// ErrorCode returns error.code of an error body when it is a string, or the
// top-level code of a vLLM error body ({"object":"error"}) when that is a
// string, as sent; otherwise "". It never falls back to error.type, accepts
// any bytes without panicking, and is safe for concurrent use.
func (c *Codec) ErrorCode(body []byte) string {
	var top object
	if json.Unmarshal(body, &top) != nil {
		return ""
	}
	if e := providerError(top); e != nil {
		return e.Code
	}
	return ""
}
