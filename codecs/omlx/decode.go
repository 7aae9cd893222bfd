package omlx

import (
	"encoding/json"
	"github.com/recourse-dev/recourse/codecs/internal/bodyscan"
	"github.com/recourse-dev/recourse/codecs/internal/jsonscan"
	"unicode/utf8"

	"github.com/recourse-dev/recourse/chat"
	"github.com/recourse-dev/recourse/layer"
)

// Describe reads an encoded /v1/chat/completions request body.
// "stream":true is streaming (an absent or false stream is not, as in the
// OpenAI API); otherwise a "response_format" of type "json_schema" or
// "json_object", or a non-null "structured_outputs" (oMLX's vLLM-style
// extension), is structured; anything else is ordinary. A body that is not a
// JSON object with a string "model" and a boolean "stream" is a
// *layer.ProtocolError.
func (c *Codec) Describe(body []byte) (layer.RequestInfo, error) {
	if err := bodyscan.CheckObject(body); err != nil {
		return layer.RequestInfo{}, err
	}
	var d struct {
		Model             string          `json:"model"`
		Stream            *bool           `json:"stream"`
		ResponseFormat    json.RawMessage `json:"response_format"`
		StructuredOutputs json.RawMessage `json:"structured_outputs"`
	}
	if err := json.Unmarshal(body, &d); err != nil {
		return layer.RequestInfo{}, &layer.ProtocolError{What: "request does not match the chat completions schema", Err: err}
	}
	info := layer.RequestInfo{Model: d.Model, Operation: layer.Ordinary}
	switch {
	case d.Stream != nil && *d.Stream:
		info.Operation = layer.Streaming
	case isStructuredFormat(d.ResponseFormat) || isObject(d.StructuredOutputs):
		info.Operation = layer.Structured
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

type wireResponse struct {
	ID      string       `json:"id"`
	Model   string       `json:"model"`
	Choices []wireChoice `json:"choices"`
	Usage   *struct {
		PromptTokens     int `json:"prompt_tokens"`
		CompletionTokens int `json:"completion_tokens"`
	} `json:"usage"`
}

type wireChoice struct {
	Message      *wireReply `json:"message"`
	FinishReason *string    `json:"finish_reason"`
}

type wireReply struct {
	Role             string              `json:"role"`
	Content          *string             `json:"content"`
	ReasoningContent *string             `json:"reasoning_content"`
	Reasoning        *string             `json:"reasoning"`
	ToolCalls        []wireReplyToolCall `json:"tool_calls"`
	FunctionCall     *wireReplyFunction  `json:"function_call"`
}

type wireReplyToolCall struct {
	ID       string             `json:"id"`
	Function *wireReplyFunction `json:"function"`
}

type wireReplyFunction struct {
	Name      string  `json:"name"`
	Arguments *string `json:"arguments"`
}

// Decode decodes the complete body of a 2xx ordinary or structured reply.
// Leading and trailing whitespace is accepted: oMLX sends spaces before the
// JSON while it generates. A whitespace-only body is a *layer.ProtocolError
// ("body is empty").
//
// A top-level "error" object is a *layer.ProviderError with its "message"
// and, when it is a string, its "code"; an "error" string is a
// *layer.ProviderError with that message. A body that is not valid UTF-8 or
// JSON, is not an object, has no choices or no message in the first choice,
// or holds a tool call without a function name or whose arguments are not a
// JSON object encoded as a string is a *layer.ProtocolError.
//
// The Completion is built from the first choice: content, reasoning
// ("reasoning_content", or "reasoning" when that is absent or empty), tool
// calls (Arguments is the decoded arguments string; an empty one is {}), a
// legacy "function_call" as one more tool call without an ID, the
// finish_reason, and the id, model and usage (prompt_tokens,
// completion_tokens) of the reply.
func (c *Codec) Decode(body []byte) (*chat.Completion, error) {
	if !utf8.Valid(body) {
		return nil, &layer.ProtocolError{What: "body is not valid UTF-8"}
	}
	if err := bodyscan.CheckObject(body); err != nil {
		return nil, err
	}
	if err := providerError(body); err != nil {
		return nil, err
	}
	var r wireResponse
	if err := json.Unmarshal(body, &r); err != nil {
		return nil, &layer.ProtocolError{What: "response does not match the chat completions schema", Err: err}
	}
	if len(r.Choices) == 0 {
		return nil, &layer.ProtocolError{What: "response has no choices"}
	}
	ch := r.Choices[0]
	if ch.Message == nil {
		return nil, &layer.ProtocolError{What: "response has no message"}
	}
	m := ch.Message
	role := chat.Role(m.Role)
	if role == "" {
		role = chat.Assistant
	}
	out := &chat.Completion{
		Message: chat.Message{Role: role, Content: deref(m.Content)},
		Model:   r.Model,
		ID:      r.ID,
	}
	out.Message.Reasoning = deref(m.ReasoningContent)
	if out.Message.Reasoning == "" {
		out.Message.Reasoning = deref(m.Reasoning)
	}
	if ch.FinishReason != nil {
		out.FinishReason = *ch.FinishReason
	}
	for _, tc := range m.ToolCalls {
		call, err := toolCall(tc.ID, tc.Function)
		if err != nil {
			return nil, err
		}
		out.Message.ToolCalls = append(out.Message.ToolCalls, call)
	}
	if m.FunctionCall != nil {
		call, err := toolCall("", m.FunctionCall)
		if err != nil {
			return nil, err
		}
		out.Message.ToolCalls = append(out.Message.ToolCalls, call)
	}
	if r.Usage != nil {
		out.Usage = &chat.Usage{InputTokens: r.Usage.PromptTokens, OutputTokens: r.Usage.CompletionTokens}
	}
	return out, nil
}

func toolCall(id string, f *wireReplyFunction) (chat.ToolCall, error) {
	if f == nil || f.Name == "" {
		return chat.ToolCall{}, &layer.ProtocolError{What: "tool call has no function name"}
	}
	args := json.RawMessage("{}")
	if s := deref(f.Arguments); len(jsonscan.TrimSpace([]byte(s))) > 0 {
		if !bodyscan.IsObject([]byte(s)) {
			return chat.ToolCall{}, &layer.ProtocolError{What: "tool call arguments are not a JSON object"}
		}
		args = json.RawMessage(s)
	}
	return chat.ToolCall{ID: id, Name: f.Name, Arguments: args}, nil
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// providerError returns the *layer.ProviderError of a body with a top-level
// "error", nil when there is none (or it is null), or a *layer.ProtocolError
// when "error" is neither an object nor a string. body is a valid object.
func providerError(body []byte) error {
	var probe struct {
		Error json.RawMessage `json:"error"`
	}
	if json.Unmarshal(body, &probe) != nil {
		return nil
	}
	t := jsonscan.TrimSpace(probe.Error)
	if len(t) == 0 || string(t) == "null" {
		return nil
	}
	switch t[0] {
	case '{':
		var e struct {
			Message json.RawMessage `json:"message"`
			Code    json.RawMessage `json:"code"`
		}
		_ = json.Unmarshal(t, &e)
		var msg, code string
		_ = json.Unmarshal(e.Message, &msg)
		_ = json.Unmarshal(e.Code, &code)
		return &layer.ProviderError{Code: code, Message: msg}
	case '"':
		var msg string
		_ = json.Unmarshal(t, &msg)
		return &layer.ProviderError{Message: msg}
	}
	return &layer.ProtocolError{What: "error field is neither an object nor a string"}
}
