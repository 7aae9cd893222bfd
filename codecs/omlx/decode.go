package omlx

import (
	"encoding/json"

	"github.com/recourse-dev/recourse/chat"
	"github.com/recourse-dev/recourse/codec"
	"github.com/recourse-dev/recourse/codecs/internal/jsonscan"
	"github.com/recourse-dev/recourse/codecs/internal/request"
)

// Describe reads an encoded /v1/chat/completions request body.
// "stream":true is streaming (an absent or false stream is not, as in the
// OpenAI API); otherwise a "response_format" of type "json_schema" or
// "json_object", or a non-null "structured_outputs" (oMLX's vLLM-style
// extension), is structured; anything else is ordinary. A body that is not a
// JSON object with a string "model" and a boolean "stream" is a
// *codec.ProtocolError.
func (c *Codec) Describe(body []byte) (codec.RequestInfo, error) {
	var d struct {
		request.Head
		ResponseFormat    json.RawMessage `json:"response_format"`
		StructuredOutputs json.RawMessage `json:"structured_outputs"`
	}
	if err := request.Decode(body, &d, "chat completions"); err != nil {
		return codec.RequestInfo{}, err
	}
	info := codec.RequestInfo{Model: d.Model, Operation: codec.Ordinary}
	switch {
	case d.Stream != nil && *d.Stream:
		info.Operation = codec.Streaming
	case isStructuredFormat(d.ResponseFormat) || isObject(d.StructuredOutputs):
		info.Operation = codec.Structured
	}
	return info, nil
}

// isStructuredFormat reports whether a response_format object asks for
// JSON: type "json_schema" or "json_object".
func isStructuredFormat(raw json.RawMessage) bool {
	if !isObject(raw) {
		return false
	}
	var f struct {
		Type string `json:"type"`
	}
	if json.Unmarshal(raw, &f) != nil {
		return false
	}
	return f.Type == "json_schema" || f.Type == "json_object"
}

// isObject reports whether the (valid) JSON value raw is an object.
func isObject(raw json.RawMessage) bool {
	t := jsonscan.TrimSpace(raw)
	return len(t) > 0 && t[0] == '{'
}

// Decode decodes the complete body of a 2xx ordinary or structured reply,
// as the OpenAI codec does (one decoder, openaiwire's Dialect.Decode), in
// oMLX's reading. Leading and trailing whitespace is accepted: oMLX sends
// spaces before the JSON while it generates; a whitespace-only body is a
// *codec.ProtocolError.
//
// A top-level "error" object is a *codec.ProviderError with its "message"
// and, when it is a string, its "code"; an "error" string is a
// *codec.ProviderError with that message; an "error" of another type is a
// *codec.ProtocolError. A body that is not valid UTF-8 or JSON, is not an
// object, is nested deeper than the observer scans (512 levels), has no
// choices or no message in the first choice, has members of the wrong
// types, or holds a tool call without a function name or whose arguments
// are not a JSON object encoded as a string is a *codec.ProtocolError.
// Keys are matched exactly after unescaping, as the observer counts them.
//
// The Completion is the assistant message of the first choice: content,
// reasoning ("reasoning_content", or "reasoning" when that is absent or
// empty), tool calls (Arguments is the decoded arguments string; an empty
// one is {}), a legacy "function_call" as one more tool call without an ID,
// the finish_reason, and the id, model and usage (prompt_tokens,
// completion_tokens) of the reply. Decode is safe for concurrent use.
func (c *Codec) Decode(body []byte) (*chat.Completion, error) { return dialect.Decode(body) }

// Check returns the error Decode returns for body, nil when Decode would
// succeed, without building the completion (codec.Checker). It is safe for
// concurrent use.
func (c *Codec) Check(body []byte) error { return dialect.Check(body) }

var _ codec.Checker = (*Codec)(nil)
