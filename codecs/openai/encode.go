package openai

import (
	"errors"
	"fmt"

	"github.com/recourse-dev/recourse/chat"
	"github.com/recourse-dev/recourse/codec"
	"github.com/recourse-dev/recourse/codecs/internal/openaiwire"
)

// wireRequest is the request body. Field order is the encoding order.
type wireRequest struct {
	Model               string                     `json:"model"`
	Messages            []openaiwire.Message       `json:"messages"`
	Tools               []openaiwire.Tool          `json:"tools,omitempty"`
	ResponseFormat      *openaiwire.ResponseFormat `json:"response_format,omitempty"`
	ReasoningEffort     string                     `json:"reasoning_effort,omitempty"`
	MaxCompletionTokens *int                       `json:"max_completion_tokens,omitempty"`
	MaxTokens           *int                       `json:"max_tokens,omitempty"`
	Temperature         *float64                   `json:"temperature,omitempty"`
	TopP                *float64                   `json:"top_p,omitempty"`
	Seed                *int                       `json:"seed,omitempty"`
	Stop                []string                   `json:"stop,omitempty"`
	Stream              bool                       `json:"stream,omitempty"`
	StreamOptions       *openaiwire.StreamOptions  `json:"stream_options,omitempty"`
}

// dialect is what OpenAI takes of the shared chat completions shapes: the
// documented roles, tool calls only on assistant messages and always with an
// ID, a tool call ID on every tool message, any valid JSON as tool
// parameters, schema and arguments, and "strict" always sent. Of a reply it
// reads vLLM's error body too, and keeps tool-call arguments as sent.
var dialect = openaiwire.Dialect{
	Provider:           codec.OpenAI,
	KnownRoles:         true,
	AssistantToolCalls: true,
	ToolCallIDs:        true,
	ExclusiveFormats:   true,
	StrictFalse:        true,
	VLLMError:          true,
}

// Encode encodes req to the OpenAI request body. It returns an
// *[codec.UnsupportedError] for a control that OpenAI, or the requested
// model family, does not take (see the package documentation), and a plain
// error for a request that cannot be encoded: a nil request, an empty model,
// an unknown role, images or tool calls on a role that cannot carry them, a
// tool call without an ID or name, a tool message without a tool call ID, a
// tool without a name, invalid JSON in tool parameters, tool-call arguments
// or the schema, both Schema and JSONMode, or a Temperature or TopP that is
// not finite. No error text quotes request content. The result does not
// alias req. Encode is safe for concurrent use.
func (c *Codec) Encode(req *chat.Request) ([]byte, error) {
	if req == nil {
		return nil, errors.New("recourse: openai: nil request")
	}
	if req.Model == "" {
		return nil, errors.New("recourse: openai: empty model")
	}
	w := wireRequest{Model: req.Model}
	if err := c.encodeOptions(&w, req); err != nil {
		return nil, err
	}
	body, err := dialect.Encode(req)
	if err != nil {
		return nil, err
	}
	w.Messages, w.Tools, w.ResponseFormat = body.Messages, body.Tools, body.ResponseFormat
	if req.Stream {
		w.Stream = true
		w.StreamOptions = &openaiwire.StreamOptions{IncludeUsage: true}
	}
	b, err := openaiwire.Marshal(w)
	if err != nil {
		return nil, fmt.Errorf("recourse: openai: encode request: %w", err)
	}
	return b, nil
}

// encodeOptions adapts the sampling controls to the model family (R14.1).
func (c *Codec) encodeOptions(w *wireRequest, req *chat.Request) error {
	o := &req.Options
	reasoning, err := dialect.CheckSampling(o, c.reasoning, req.Model)
	if err != nil {
		return err
	}
	if reasoning {
		w.ReasoningEffort = o.ReasoningEffort
		w.MaxCompletionTokens = openaiwire.CopyPtr(o.MaxTokens)
	} else {
		w.MaxTokens = openaiwire.CopyPtr(o.MaxTokens)
		w.Temperature = openaiwire.CopyPtr(o.Temperature)
		w.TopP = openaiwire.CopyPtr(o.TopP)
	}
	w.Seed = openaiwire.CopyPtr(o.Seed)
	if len(o.Stop) > 0 {
		w.Stop = append([]string(nil), o.Stop...)
	}
	return nil
}
