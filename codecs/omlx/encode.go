package omlx

import (
	"github.com/recourse-dev/recourse/chat"
	"github.com/recourse-dev/recourse/codec"
	"github.com/recourse-dev/recourse/codecs/internal/openaiwire"
	"github.com/recourse-dev/recourse/codecs/internal/request"
)

// The wire structs fix the field order of an encoded request.

type wireRequest struct {
	Model           string                     `json:"model"`
	Messages        []wireMessage              `json:"messages"`
	Stream          bool                       `json:"stream"`
	StreamOptions   *openaiwire.StreamOptions  `json:"stream_options,omitempty"`
	Temperature     *float64                   `json:"temperature,omitempty"`
	TopP            *float64                   `json:"top_p,omitempty"`
	TopK            *int                       `json:"top_k,omitempty"`
	MaxTokens       *int                       `json:"max_tokens,omitempty"`
	Stop            []string                   `json:"stop,omitempty"`
	Tools           []openaiwire.Tool          `json:"tools,omitempty"`
	ResponseFormat  *openaiwire.ResponseFormat `json:"response_format,omitempty"`
	ReasoningEffort string                     `json:"reasoning_effort,omitempty"`
}

// wireMessage is oMLX's key order of a message: content is always sent, as
// null for a turn that only calls tools, and tool_call_id comes last.
type wireMessage struct {
	Role       chat.Role             `json:"role"`
	Content    any                   `json:"content"`
	ToolCalls  []openaiwire.ToolCall `json:"tool_calls,omitempty"`
	ToolCallID string                `json:"tool_call_id,omitempty"`
}

// dialect is what oMLX takes of the shared chat completions shapes: roles,
// tool calls and tool call IDs are sent as given, images are checked before
// they go into a data URL, tool parameters, a schema and tool-call
// arguments must be JSON objects, and "strict" is sent only when true. Of a
// reply it takes only an object or a string as "error", and tool calls
// with a name and arguments that are a JSON object.
var dialect = openaiwire.Dialect{
	Provider:    codec.OMLX,
	CheckImages: true,
	Objects:     true,
	StrictError: true,
}

// errs makes the encoding errors, "recourse: omlx: …".
var errs = request.Errors{Provider: codec.OMLX}

// Encode encodes req as the body of a POST /v1/chat/completions request. The
// result is a fresh slice that shares no memory with req, so later changes
// to req cannot reach it; encoding the same request twice yields identical
// bytes.
//
// Encode returns an *codec.UnsupportedError naming the control when Seed,
// ContextLength, Think or KeepAlive is set (checked in that order), and a
// plain error when req is nil, has no model, or holds a value oMLX cannot
// accept (a reasoning effort other than "low", "medium" or "high", images on
// a message that is not a user message, an empty image or an image MIME
// type that is not of the form type/subtype, tool-call arguments that are
// not a JSON object, a schema or tool parameters that are not a JSON object,
// a tool or tool call without a name, a non-finite float). Error messages
// name fields and indices, never values.
func (c *Codec) Encode(req *chat.Request) ([]byte, error) {
	if err := errs.Check(req); err != nil {
		return nil, err
	}
	o := req.Options
	switch {
	case o.Seed != nil:
		return nil, errs.Unsupported("Seed")
	case o.ContextLength != nil:
		return nil, errs.Unsupported("ContextLength")
	case o.Think != nil:
		return nil, errs.Unsupported("Think")
	case o.KeepAlive != "":
		return nil, errs.Unsupported("KeepAlive")
	}
	switch o.ReasoningEffort {
	case "", "low", "medium", "high":
	default:
		return nil, errs.Plain("Options.ReasoningEffort is not low, medium or high")
	}
	if err := dialect.Finite(&o); err != nil {
		return nil, err
	}
	body, err := dialect.Encode(req)
	if err != nil {
		return nil, err
	}
	w := wireRequest{
		Model:           req.Model,
		Messages:        make([]wireMessage, 0, len(body.Messages)),
		Stream:          req.Stream,
		Temperature:     o.Temperature,
		TopP:            o.TopP,
		TopK:            o.TopK,
		MaxTokens:       o.MaxTokens,
		Stop:            o.Stop,
		Tools:           body.Tools,
		ResponseFormat:  body.ResponseFormat,
		ReasoningEffort: o.ReasoningEffort,
	}
	if req.Stream {
		w.StreamOptions = &openaiwire.StreamOptions{IncludeUsage: true}
	}
	for _, m := range body.Messages {
		w.Messages = append(w.Messages, wireMessage{Role: m.Role, Content: m.Content, ToolCalls: m.ToolCalls, ToolCallID: m.ToolCallID})
	}
	b, err := openaiwire.Marshal(w)
	if err != nil {
		// Unreachable for validated input; the json error may quote values.
		return nil, errs.Plain("request cannot be encoded as JSON")
	}
	return b, nil
}
