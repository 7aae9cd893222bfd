package responses

import (
	"encoding/json"
	"errors"
	"strings"
	"unicode/utf8"

	"github.com/recourse-dev/recourse/chat"
	"github.com/recourse-dev/recourse/codecs/internal/jsonscan"
	"github.com/recourse-dev/recourse/layer"
)

// object is a decoded JSON object whose keys are matched exactly, after
// unescaping. Decoding into structs would also match keys case-insensitively
// ("Output" for "output"), which the observers do not count.
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

// parseObject decodes b as one JSON object. A null b yields a nil object
// and no error.
func parseObject(b []byte, noun string) (object, error) {
	var o object
	if err := json.Unmarshal(b, &o); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return nil, protocolError(noun+" is not a JSON object", err)
		}
		return nil, protocolError(noun+" is not valid JSON", err)
	}
	return o, nil
}

// Describe reads the model and operation of an encoded request body:
// streaming when "stream" is true, structured when text.format has type
// json_schema or json_object, ordinary otherwise. A body that is not a JSON
// object, or whose model, stream, text or text.format has the wrong type,
// is a *[layer.ProtocolError]. Describe is safe for concurrent use.
func (c *Codec) Describe(body []byte) (layer.RequestInfo, error) {
	o, err := parseObject(body, "request")
	if err != nil {
		return layer.RequestInfo{}, err
	}
	if o == nil {
		return layer.RequestInfo{}, protocolError("request is not a JSON object", nil)
	}
	var (
		info   layer.RequestInfo
		stream bool
		bg     bool
		text   object
		format object
		typ    string
	)
	if err := o.get("model", &info.Model); err != nil {
		return layer.RequestInfo{}, protocolError("request model is not a string", err)
	}
	if err := o.get("stream", &stream); err != nil {
		return layer.RequestInfo{}, protocolError("request stream is not a boolean", err)
	}
	if err := o.get("background", &bg); err != nil {
		return layer.RequestInfo{}, protocolError("request background is not a boolean", err)
	}
	info.Background = bg
	if err := o.get("text", &text); err != nil {
		return layer.RequestInfo{}, protocolError("request text is not an object", err)
	}
	if err := text.get("format", &format); err != nil {
		return layer.RequestInfo{}, protocolError("request text.format is not an object", err)
	}
	if err := format.get("type", &typ); err != nil {
		return layer.RequestInfo{}, protocolError("request text.format type is not a string", err)
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

// Decode decodes a complete 2xx response body, a Responses API response
// object (see the package documentation for the mapping). A body with an
// error object (a top-level "error" other than null), a status of "failed"
// or "cancelled" is a *[layer.ProviderError]. A body that is not valid
// UTF-8, not a JSON object, nested deeper than the observer scans (512
// levels), whose status is not terminal (queued, in_progress — except in
// the answer to a background create, "background":true, which is its
// acceptance: a Completion with the ID, the model, no message and the
// status as its finish reason, R19.14) or unknown,
// or whose fields have the wrong types is a *[layer.ProtocolError].
// Otherwise Decode returns the assistant message of the output items with
// its finish reason, the model, the response ID and the usage (nil when the
// body has none). Decode never returns both a completion and an error, and
// is safe for concurrent use.
func (c *Codec) Decode(body []byte) (*chat.Completion, error) {
	if !utf8.Valid(body) {
		return nil, protocolError("response is not valid UTF-8", nil)
	}
	top, err := parseObject(body, "response")
	if err != nil {
		return nil, err
	}
	if top == nil {
		return nil, protocolError("response is not a JSON object", nil)
	}
	// encoding/json accepts nesting far deeper than the observer scans; a
	// body the observer cannot account for is not accepted either.
	if !jsonscan.Valid(body) {
		return nil, protocolError("response is nested too deeply", nil)
	}
	if comp, ok := accepted(top); ok {
		return comp, nil
	}
	return decodeResponse(top)
}

// accepted returns the completion of a background response's answer to
// its create, a response object with "background":true whose status is
// queued or in_progress (R19.14): the acceptance, with the response's ID
// and model, no message, and the status as its finish reason. ok is false
// for any other body.
func accepted(top object) (*chat.Completion, bool) {
	var bg bool
	if top.get("background", &bg) != nil || !bg {
		return nil, false
	}
	status := top.str("status")
	if status != "queued" && status != "in_progress" {
		return nil, false
	}
	if providerError(top) != nil {
		return nil, false
	}
	comp := &chat.Completion{Message: chat.Message{Role: chat.Assistant}, FinishReason: status}
	if top.get("id", &comp.ID) != nil || top.get("model", &comp.Model) != nil {
		return nil, false
	}
	return comp, true
}

// decodeResponse decodes a response object: a unary body, or the response
// of a terminal stream event.
func decodeResponse(top object) (*chat.Completion, error) {
	if perr := providerError(top); perr != nil {
		return nil, perr
	}
	var status string
	if err := top.get("status", &status); err != nil {
		return nil, protocolError("response status is not a string", err)
	}
	comp := &chat.Completion{Message: chat.Message{Role: chat.Assistant}}
	for _, f := range []struct {
		key, what string
		dst       *string
	}{
		{"id", "response id is not a string", &comp.ID},
		{"model", "response model is not a string", &comp.Model},
	} {
		if err := top.get(f.key, f.dst); err != nil {
			return nil, protocolError(f.what, err)
		}
	}
	switch status {
	case "completed":
	case "incomplete":
		var details object
		if err := top.get("incomplete_details", &details); err != nil {
			return nil, protocolError("response incomplete_details is not an object", err)
		}
		comp.FinishReason = incompleteFinish(details.str("reason"))
	case "failed":
		return nil, &layer.ProviderError{}
	case "cancelled":
		return nil, &layer.ProviderError{Code: "cancelled"}
	case "":
		if !top.has("output") {
			return nil, protocolError("response has no status and no output", nil)
		}
	case "queued", "in_progress":
		return nil, protocolError("response is not finished", nil)
	default:
		return nil, protocolError("response status is unknown", nil)
	}
	var items []json.RawMessage
	if err := top.get("output", &items); err != nil {
		return nil, protocolError("response output is not an array", err)
	}
	var content, reasoning strings.Builder
	refused := false
	for _, raw := range items {
		var item object
		if err := json.Unmarshal(raw, &item); err != nil || item == nil {
			return nil, protocolError("response output item is not an object", err)
		}
		switch item.str("type") {
		case "message":
			r, err := messageText(item, &content)
			if err != nil {
				return nil, err
			}
			refused = refused || r
		case "reasoning":
			if err := reasoningText(item, &reasoning); err != nil {
				return nil, err
			}
		case "function_call":
			tc, err := decodeCall(item)
			if err != nil {
				return nil, err
			}
			comp.Message.ToolCalls = append(comp.Message.ToolCalls, tc)
		}
	}
	comp.Message.Content, comp.Message.Reasoning = content.String(), reasoning.String()
	if comp.FinishReason == "" {
		comp.FinishReason = completedFinish(len(comp.Message.ToolCalls) > 0, refused)
	}
	if top.has("usage") {
		u, err := decodeUsage(top)
		if err != nil {
			return nil, err
		}
		comp.Usage = u
	}
	return comp, nil
}

// completedFinish is the finish reason of a completed response: tool_calls
// when it calls a tool, refusal when the model refused, stop otherwise.
func completedFinish(calls, refused bool) string {
	switch {
	case calls:
		return "tool_calls"
	case refused:
		return "refusal"
	}
	return "stop"
}

// incompleteFinish maps incomplete_details.reason to a finish reason:
// max_output_tokens is "length", content_filter is "content_filter", any
// other reason is kept as sent, and none is "incomplete".
func incompleteFinish(reason string) string {
	switch reason {
	case "max_output_tokens":
		return "length"
	case "":
		return "incomplete"
	}
	return reason
}

// messageText appends the output_text and refusal parts of a message item
// to b and reports whether it held a refusal.
func messageText(item object, b *strings.Builder) (refused bool, err error) {
	var parts []object
	if err := item.get("content", &parts); err != nil {
		return false, protocolError("response message content is not an array of objects", err)
	}
	for _, p := range parts {
		key := ""
		switch p.str("type") {
		case "output_text":
			key = "text"
		case "refusal":
			key, refused = "refusal", true
		default:
			continue
		}
		var s string
		if err := p.get(key, &s); err != nil {
			return false, protocolError("response message "+key+" is not a string", err)
		}
		b.WriteString(s)
	}
	return refused, nil
}

// reasoningText appends the summary_text parts and the reasoning_text
// content parts of a reasoning item to b.
func reasoningText(item object, b *strings.Builder) error {
	for _, f := range []struct{ key, typ string }{{"summary", "summary_text"}, {"content", "reasoning_text"}} {
		var parts []object
		if err := item.get(f.key, &parts); err != nil {
			return protocolError("response reasoning "+f.key+" is not an array of objects", err)
		}
		for _, p := range parts {
			if p.str("type") != f.typ {
				continue
			}
			var s string
			if err := p.get("text", &s); err != nil {
				return protocolError("response reasoning text is not a string", err)
			}
			b.WriteString(s)
		}
	}
	return nil
}

// decodeCall decodes a function_call item: its call_id (the ID a tool
// result answers), name and arguments.
func decodeCall(item object) (chat.ToolCall, error) {
	var tc chat.ToolCall
	var args string
	for _, f := range []struct {
		key, what string
		dst       *string
	}{
		{"call_id", "response function_call call_id is not a string", &tc.ID},
		{"name", "response function_call name is not a string", &tc.Name},
		{"arguments", "response function_call arguments is not a string", &args},
	} {
		if err := item.get(f.key, f.dst); err != nil {
			return tc, protocolError(f.what, err)
		}
	}
	if item.has("arguments") {
		tc.Arguments = arguments(args)
	}
	return tc, nil
}

// arguments keeps argument text that is valid JSON as that JSON, and other
// text (a model can produce it, for example at the token cap) as a JSON
// string value holding it, so that Encode sends it back unchanged.
func arguments(s string) json.RawMessage {
	if json.Valid([]byte(s)) {
		return json.RawMessage(s)
	}
	b, _ := json.Marshal(s) // a string always marshals
	return b
}

// decodeUsage decodes usage.input_tokens and usage.output_tokens.
func decodeUsage(top object) (*chat.Usage, error) {
	var usage object
	if err := top.get("usage", &usage); err != nil {
		return nil, protocolError("response usage is not an object", err)
	}
	u := &chat.Usage{}
	if err := usage.get("input_tokens", &u.InputTokens); err != nil {
		return nil, protocolError("response input_tokens is not an integer", err)
	}
	if err := usage.get("output_tokens", &u.OutputTokens); err != nil {
		return nil, protocolError("response output_tokens is not an integer", err)
	}
	return u, nil
}

// providerError returns the error object of top, or nil when it has none:
// {"error":{"code","message"}} (a response's error, or an error body), or
// {"error":"text"}. Code is kept only when it is a string.
func providerError(top object) *layer.ProviderError {
	if !top.has("error") {
		return nil
	}
	var e object
	if top.get("error", &e) != nil {
		return &layer.ProviderError{Message: top.str("error")}
	}
	return &layer.ProviderError{Code: e.str("code"), Message: e.str("message")}
}

// ErrorCode returns error.code of an error body when it is a string, as
// sent; otherwise "". It never falls back to error.type, accepts any bytes
// without panicking, and is safe for concurrent use.
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
