package anthropic

import (
	"encoding/json"
	"strings"
	"unicode/utf8"

	"github.com/recourse-dev/recourse/chat"
	"github.com/recourse-dev/recourse/codec"
	"github.com/recourse-dev/recourse/codecs/internal/jsonscan"
	"github.com/recourse-dev/recourse/codecs/internal/openaiwire"
)

// errorStatuses maps the error types of Anthropic's error documentation to
// their HTTP statuses: the status an in-band error event stands for
// (R22.2).
var errorStatuses = map[string]int{
	"invalid_request_error": 400,
	"authentication_error":  401,
	"billing_error":         402,
	"permission_error":      403,
	"not_found_error":       404,
	"request_too_large":     413,
	"rate_limit_error":      429,
	"api_error":             500,
	"timeout_error":         504,
	"overloaded_error":      OverloadStatus,
}

// ErrorStatus returns the HTTP status Anthropic documents for an error of
// type typ (overloaded_error 529, rate_limit_error 429, api_error 500, …),
// or 0 for a type it does not document.
func ErrorStatus(typ string) int { return errorStatuses[typ] }

// Finish reasons of the chat model for Anthropic's stop reasons.
const (
	finishStop      = "stop"
	finishLength    = "length"
	finishToolCalls = "tool_calls"
)

// FinishReason returns the chat finish reason of an Anthropic stop_reason:
// end_turn and stop_sequence finish "stop", tool_use "tool_calls",
// max_tokens and model_context_window_exceeded "length" (the output was
// cut); pause_turn, refusal and any other value are kept as sent.
func FinishReason(stop string) string {
	switch stop {
	case "end_turn", "stop_sequence":
		return finishStop
	case "tool_use":
		return finishToolCalls
	case "max_tokens", "model_context_window_exceeded":
		return finishLength
	}
	return stop
}

// incomplete reports whether a stop reason says the output was cut (the
// length finish, R22.4).
func incomplete(stop string) bool { return FinishReason(stop) == finishLength }

// providerError returns the *codec.ProviderError of an error document or
// event {"type":"error","error":{"type","message"}}, or nil when top is
// not one.
func providerError(top openaiwire.Object) *codec.ProviderError {
	var e openaiwire.Object
	if top.Get("error", &e) != nil || e == nil {
		if top.Str("type") == "error" {
			return &codec.ProviderError{}
		}
		return nil
	}
	typ := e.Str("type")
	return &codec.ProviderError{Code: typ, Message: e.Str("message"), Status: errorStatuses[typ]}
}

// ErrorCode returns the error type of an error body
// ({"type":"error","error":{"type":…}}) as sent, or "".
func (c *Codec) ErrorCode(body []byte) string {
	top, err := openaiwire.ParseObject(body, "error body")
	if err != nil {
		return ""
	}
	if pe := providerError(top); pe != nil {
		return pe.Code
	}
	return ""
}

// Check returns exactly the error Decode returns for body (codec.Checker).
func (c *Codec) Check(body []byte) error {
	_, err := c.Decode(body)
	return err
}

// message is what a response message decodes into.
type message struct {
	id, model, stop string
	content, reason strings.Builder
	thinking        int
	signature       string
	calls           []chat.ToolCall
	usage           *chat.Usage
}

// Decode decodes a complete 2xx Messages API response (R22.4): its text
// blocks are the content, its thinking blocks the reasoning (with the
// signature of a single thinking block), its tool_use blocks the tool
// calls with their input as arguments; model, ID, usage (input tokens
// counting cache reads and writes) and the finish reason of
// [FinishReason]. An error document is a *codec.ProviderError; anything
// else that is not a message a *codec.ProtocolError.
func (c *Codec) Decode(body []byte) (*chat.Completion, error) {
	if !utf8.Valid(body) {
		return nil, openaiwire.ProtocolError("response is not valid UTF-8", nil)
	}
	if !jsonscan.Valid(body) {
		return nil, openaiwire.ProtocolError("response is not valid JSON or nests too deep", nil)
	}
	top, err := openaiwire.ParseDocument(body, "response")
	if err != nil {
		return nil, err
	}
	if pe := providerError(top); pe != nil {
		return nil, pe
	}
	if typ := top.Str("type"); typ != "message" {
		return nil, openaiwire.ProtocolError("response is not a message", nil)
	}
	var m message
	if err := m.head(top); err != nil {
		return nil, err
	}
	var blocks []openaiwire.Object
	if err := top.Get("content", &blocks); err != nil || blocks == nil {
		return nil, openaiwire.ProtocolError("response content is not an array of blocks", err)
	}
	for _, b := range blocks {
		if err := m.block(b); err != nil {
			return nil, err
		}
	}
	if m.stop == "" {
		return nil, openaiwire.ProtocolError("response has no stop_reason", nil)
	}
	return m.completion(), nil
}

// head reads a message's id, model, stop reason and usage.
func (m *message) head(top openaiwire.Object) error {
	for _, f := range []struct {
		key string
		v   *string
	}{{"id", &m.id}, {"model", &m.model}, {"stop_reason", &m.stop}} {
		if err := top.Get(f.key, f.v); err != nil {
			return openaiwire.ProtocolError("message "+f.key+" is not a string", err)
		}
	}
	if top.Has("usage") {
		u, err := usageOf(top, nil)
		if err != nil {
			return err
		}
		m.usage = u
	}
	return nil
}

// usageOf reads top's usage into a copy of prev (nil: none yet): input
// tokens are input_tokens plus cache_creation_input_tokens plus
// cache_read_input_tokens, output tokens output_tokens; a member that is
// absent keeps prev's value.
func usageOf(top openaiwire.Object, prev *chat.Usage) (*chat.Usage, error) {
	var u openaiwire.Object
	if err := top.Get("usage", &u); err != nil {
		return nil, openaiwire.ProtocolError("usage is not an object", err)
	}
	out := &chat.Usage{}
	if prev != nil {
		*out = *prev
	}
	in, hasIn := 0, false
	for _, k := range []string{"input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens"} {
		var n int
		if err := u.Get(k, &n); err != nil || n < 0 {
			return nil, openaiwire.ProtocolError("usage "+k+" is not a non-negative integer", err)
		}
		if u.Has(k) {
			in, hasIn = in+n, true
		}
	}
	if hasIn {
		out.InputTokens = in
	}
	if u.Has("output_tokens") {
		var n int
		if err := u.Get("output_tokens", &n); err != nil || n < 0 {
			return nil, openaiwire.ProtocolError("usage output_tokens is not a non-negative integer", err)
		}
		out.OutputTokens = n
	}
	return out, nil
}

// block reads one content block of a unary message. Block types other
// than text, thinking and tool_use (redacted thinking, server tools and
// their results) have no place in a chat.Message and are skipped.
func (m *message) block(b openaiwire.Object) error {
	switch b.Str("type") {
	case "text":
		var s string
		if err := b.Get("text", &s); err != nil {
			return openaiwire.ProtocolError("text block text is not a string", err)
		}
		m.content.WriteString(s)
	case "thinking":
		var s, sig string
		if err := b.Get("thinking", &s); err != nil {
			return openaiwire.ProtocolError("thinking block text is not a string", err)
		}
		if err := b.Get("signature", &sig); err != nil {
			return openaiwire.ProtocolError("thinking block signature is not a string", err)
		}
		m.reason.WriteString(s)
		m.thinking++
		m.signature = sig
	case "tool_use":
		var tc chat.ToolCall
		if err := b.Get("id", &tc.ID); err != nil {
			return openaiwire.ProtocolError("tool_use id is not a string", err)
		}
		if err := b.Get("name", &tc.Name); err != nil || tc.Name == "" {
			return openaiwire.ProtocolError("tool_use has no name", err)
		}
		in := b["input"]
		switch {
		case openaiwire.IsNull(in) || len(in) == 0:
			tc.Arguments = json.RawMessage(`{}`)
		case in[0] == '{':
			tc.Arguments = append(json.RawMessage(nil), in...)
		default:
			return openaiwire.ProtocolError("tool_use input is not an object", nil)
		}
		m.calls = append(m.calls, tc)
	case "":
		return openaiwire.ProtocolError("content block has no type", nil)
	}
	return nil
}

// completion builds the decoded completion. The signature is kept only
// for a single thinking block: several blocks' texts are joined, and no
// one signature covers the joined text.
func (m *message) completion() *chat.Completion {
	msg := chat.Message{Role: chat.Assistant, Content: m.content.String(), Reasoning: m.reason.String(), ToolCalls: m.calls}
	if m.thinking == 1 {
		msg.ReasoningSignature = m.signature
	}
	return &chat.Completion{Message: msg, FinishReason: FinishReason(m.stop), Model: m.model, ID: m.id, Usage: m.usage}
}
