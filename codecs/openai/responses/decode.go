package responses

import (
	"encoding/json"
	"strings"
	"unicode/utf8"

	"github.com/recourse-dev/recourse/chat"
	"github.com/recourse-dev/recourse/codec"
	"github.com/recourse-dev/recourse/codecs/internal/jsonscan"
	"github.com/recourse-dev/recourse/codecs/internal/openaiwire"
)

// Describe reads the model and operation of an encoded request body:
// streaming when "stream" is true, structured when text.format has type
// json_schema or json_object, ordinary otherwise. A body that is not a JSON
// object, or whose model, stream, text or text.format has the wrong type,
// is a *[codec.ProtocolError]. Describe is safe for concurrent use.
func (c *Codec) Describe(body []byte) (codec.RequestInfo, error) {
	o, model, stream, err := openaiwire.ParseRequest(body)
	if err != nil {
		return codec.RequestInfo{}, err
	}
	var (
		bg     bool
		text   openaiwire.Object
		format openaiwire.Object
		typ    string
	)
	if err := o.Get("background", &bg); err != nil {
		return codec.RequestInfo{}, openaiwire.ProtocolError("request background is not a boolean", err)
	}
	if err := o.Get("text", &text); err != nil {
		return codec.RequestInfo{}, openaiwire.ProtocolError("request text is not an object", err)
	}
	if err := text.Get("format", &format); err != nil {
		return codec.RequestInfo{}, openaiwire.ProtocolError("request text.format is not an object", err)
	}
	if err := format.Get("type", &typ); err != nil {
		return codec.RequestInfo{}, openaiwire.ProtocolError("request text.format type is not a string", err)
	}
	return codec.RequestInfo{Model: model, Operation: openaiwire.Operation(stream, typ), Background: bg}, nil
}

// Decode decodes a complete 2xx response body, a Responses API response
// object (see the package documentation for the mapping). A body with an
// error object (a top-level "error" other than null), a status of "failed"
// or "cancelled" is a *[codec.ProviderError]. A body that is not valid
// UTF-8, not a JSON object, nested deeper than the observer scans (512
// levels), whose status is not terminal (queued, in_progress — except in
// the answer to a background create, "background":true, which is its
// acceptance: a Completion with the ID, the model, no message and the
// status as its finish reason, R19.14) or unknown,
// or whose fields have the wrong types is a *[codec.ProtocolError].
// Otherwise Decode returns the assistant message of the output items with
// its finish reason, the model, the response ID and the usage (nil when the
// body has none). Decode never returns both a completion and an error, and
// is safe for concurrent use.
func (c *Codec) Decode(body []byte) (*chat.Completion, error) {
	if !utf8.Valid(body) {
		return nil, openaiwire.ProtocolError("response is not valid UTF-8", nil)
	}
	top, err := openaiwire.ParseDocument(body, "response")
	if err != nil {
		return nil, err
	}
	// encoding/json accepts nesting far deeper than the observer scans; a
	// body the observer cannot account for is not accepted either.
	if !jsonscan.Valid(body) {
		return nil, openaiwire.ProtocolError("response is nested too deeply", nil)
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
func accepted(top openaiwire.Object) (*chat.Completion, bool) {
	var bg bool
	if top.Get("background", &bg) != nil || !bg {
		return nil, false
	}
	status := top.Str("status")
	if status != "queued" && status != "in_progress" {
		return nil, false
	}
	if providerError(top) != nil {
		return nil, false
	}
	comp := &chat.Completion{Message: chat.Message{Role: chat.Assistant}, FinishReason: status}
	if top.Get("id", &comp.ID) != nil || top.Get("model", &comp.Model) != nil {
		return nil, false
	}
	return comp, true
}

// decodeResponse decodes a response object: a unary body, or the response
// of a terminal stream event.
// It is one function of more than 80 lines because its checks follow the
// response's members in reading order (error, status, id and model, output,
// usage), each early return naming the first malformed member.
func decodeResponse(top openaiwire.Object) (*chat.Completion, error) {
	if perr := providerError(top); perr != nil {
		return nil, perr
	}
	var status string
	if err := top.Get("status", &status); err != nil {
		return nil, openaiwire.ProtocolError("response status is not a string", err)
	}
	comp := &chat.Completion{Message: chat.Message{Role: chat.Assistant}}
	for _, f := range []struct {
		key, what string
		dst       *string
	}{
		{"id", "response id is not a string", &comp.ID},
		{"model", "response model is not a string", &comp.Model},
	} {
		if err := top.Get(f.key, f.dst); err != nil {
			return nil, openaiwire.ProtocolError(f.what, err)
		}
	}
	switch status {
	case "completed":
	case "incomplete":
		var details openaiwire.Object
		if err := top.Get("incomplete_details", &details); err != nil {
			return nil, openaiwire.ProtocolError("response incomplete_details is not an object", err)
		}
		comp.FinishReason = incompleteFinish(details.Str("reason"))
	case "failed":
		return nil, &codec.ProviderError{}
	case "cancelled":
		return nil, &codec.ProviderError{Code: "cancelled"}
	case "":
		if !top.Has("output") {
			return nil, openaiwire.ProtocolError("response has no status and no output", nil)
		}
	case "queued", "in_progress":
		return nil, openaiwire.ProtocolError("response is not finished", nil)
	default:
		return nil, openaiwire.ProtocolError("response status is unknown", nil)
	}
	var items []json.RawMessage
	if err := top.Get("output", &items); err != nil {
		return nil, openaiwire.ProtocolError("response output is not an array", err)
	}
	var content, reasoning strings.Builder
	refused := false
	for _, raw := range items {
		var item openaiwire.Object
		if err := json.Unmarshal(raw, &item); err != nil || item == nil {
			return nil, openaiwire.ProtocolError("response output item is not an object", err)
		}
		switch item.Str("type") {
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
	if top.Has("usage") {
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
func messageText(item openaiwire.Object, b *strings.Builder) (refused bool, err error) {
	var parts []openaiwire.Object
	if err := item.Get("content", &parts); err != nil {
		return false, openaiwire.ProtocolError("response message content is not an array of objects", err)
	}
	for _, p := range parts {
		key := ""
		switch p.Str("type") {
		case "output_text":
			key = "text"
		case "refusal":
			key, refused = "refusal", true
		default:
			continue
		}
		var s string
		if err := p.Get(key, &s); err != nil {
			return false, openaiwire.ProtocolError("response message "+key+" is not a string", err)
		}
		b.WriteString(s)
	}
	return refused, nil
}

// reasoningText appends the summary_text parts and the reasoning_text
// content parts of a reasoning item to b.
func reasoningText(item openaiwire.Object, b *strings.Builder) error {
	for _, f := range []struct{ key, typ string }{{"summary", "summary_text"}, {"content", "reasoning_text"}} {
		var parts []openaiwire.Object
		if err := item.Get(f.key, &parts); err != nil {
			return openaiwire.ProtocolError("response reasoning "+f.key+" is not an array of objects", err)
		}
		for _, p := range parts {
			if p.Str("type") != f.typ {
				continue
			}
			var s string
			if err := p.Get("text", &s); err != nil {
				return openaiwire.ProtocolError("response reasoning text is not a string", err)
			}
			b.WriteString(s)
		}
	}
	return nil
}

// decodeCall decodes a function_call item: its call_id (the ID a tool
// result answers), name and arguments.
func decodeCall(item openaiwire.Object) (chat.ToolCall, error) {
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
		if err := item.Get(f.key, f.dst); err != nil {
			return tc, openaiwire.ProtocolError(f.what, err)
		}
	}
	if item.Has("arguments") {
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
func decodeUsage(top openaiwire.Object) (*chat.Usage, error) {
	var usage openaiwire.Object
	if err := top.Get("usage", &usage); err != nil {
		return nil, openaiwire.ProtocolError("response usage is not an object", err)
	}
	u := &chat.Usage{}
	if err := usage.Get("input_tokens", &u.InputTokens); err != nil {
		return nil, openaiwire.ProtocolError("response input_tokens is not an integer", err)
	}
	if err := usage.Get("output_tokens", &u.OutputTokens); err != nil {
		return nil, openaiwire.ProtocolError("response output_tokens is not an integer", err)
	}
	return u, nil
}

// providerError returns the error object of top, or nil when it has none:
// {"error":{"code","message"}} (a response's error, or an error body), or
// {"error":"text"}. Code is kept only when it is a string.
func providerError(top openaiwire.Object) *codec.ProviderError {
	if !top.Has("error") {
		return nil
	}
	var e openaiwire.Object
	if top.Get("error", &e) != nil {
		return &codec.ProviderError{Message: top.Str("error")}
	}
	return &codec.ProviderError{Code: e.Str("code"), Message: e.Str("message")}
}

// failedError is the provider error of response.failed: the code and
// message of its response.error.
func failedError(resp openaiwire.Object) *codec.ProviderError {
	if pe := providerError(resp); pe != nil {
		return pe
	}
	return &codec.ProviderError{}
}

// ErrorCode returns error.code of an error body when it is a string, as
// sent; otherwise "". It never falls back to error.type, accepts any bytes
// without panicking, and is safe for concurrent use.
func (c *Codec) ErrorCode(body []byte) string {
	var top openaiwire.Object
	if json.Unmarshal(body, &top) != nil {
		return ""
	}
	if e := providerError(top); e != nil {
		return e.Code
	}
	return ""
}
