package responses

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"math"
	"strconv"

	"github.com/recourse-dev/recourse/chat"
	"github.com/recourse-dev/recourse/codecs/internal/openaiwire"
	"github.com/recourse-dev/recourse/layer"
)

// wireRequest is the request body. Field order is the encoding order.
type wireRequest struct {
	Model           string      `json:"model"`
	Input           []any       `json:"input"`
	Tools           []wireTool  `json:"tools,omitempty"`
	Text            *wireText   `json:"text,omitempty"`
	Reasoning       *wireEffort `json:"reasoning,omitempty"`
	MaxOutputTokens *int        `json:"max_output_tokens,omitempty"`
	Temperature     *float64    `json:"temperature,omitempty"`
	TopP            *float64    `json:"top_p,omitempty"`
	Stream          bool        `json:"stream,omitempty"`
	Background      bool        `json:"background,omitempty"`
	Store           *bool       `json:"store,omitempty"`
}

// inputMessage is a message input item. Content is a *string (the text,
// referenced while the body is marshalled) or a []inputPart.
type inputMessage struct {
	Type    string `json:"type"`
	Role    string `json:"role"`
	Content any    `json:"content"`
}

// inputPart is one content part of a user message with images.
type inputPart struct {
	Type     string `json:"type"`
	Text     string `json:"text,omitempty"`
	ImageURL string `json:"image_url,omitempty"`
}

// functionCall is a function_call input item: a tool call of an earlier
// assistant turn.
type functionCall struct {
	Type      string `json:"type"`
	CallID    string `json:"call_id"`
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// functionCallOutput is a function_call_output input item: a tool result.
type functionCallOutput struct {
	Type   string  `json:"type"`
	CallID string  `json:"call_id"`
	Output *string `json:"output"`
}

// wireTool is a function tool; unlike chat completions its fields are flat.
type wireTool struct {
	Type        string          `json:"type"`
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters,omitempty"`
	Strict      bool            `json:"strict"`
}

// wireText is the "text" configuration: the output format.
type wireText struct {
	Format wireFormat `json:"format"`
}

// wireFormat is text.format: "json_schema" with its flat name, schema and
// strict, or "json_object".
type wireFormat struct {
	Type   string          `json:"type"`
	Name   string          `json:"name,omitempty"`
	Schema json.RawMessage `json:"schema,omitempty"`
	Strict *bool           `json:"strict,omitempty"`
}

// wireEffort is the "reasoning" configuration.
type wireEffort struct {
	Effort string `json:"effort"`
}

// Encode encodes req to the Responses API request body (see the package
// documentation for the mapping). It returns an *[layer.UnsupportedError]
// for a control that the endpoint, or the requested model family, does not
// take, and a plain error for a request that cannot be encoded: a nil
// request, an empty model, an unknown role, images or tool calls on a role
// that cannot carry them, a tool call without an ID or name, a tool message
// without a tool call ID, a tool without a name, invalid JSON in tool
// parameters, tool-call arguments or the schema, both Schema and JSONMode,
// or a Temperature or TopP that is not finite. No error text quotes request
// content. The result does not alias req. Encode is safe for concurrent
// use.
func (c *Codec) Encode(req *chat.Request) ([]byte, error) {
	if req == nil {
		return nil, errors.New("recourse: openai responses: nil request")
	}
	if req.Model == "" {
		return nil, errors.New("recourse: openai responses: empty model")
	}
	w := wireRequest{Model: req.Model, Stream: req.Stream}
	if c.background && req.Stream {
		// A background response must be stored to be read again (R19.9).
		store := true
		w.Background, w.Store = true, &store
	}
	if err := c.encodeOptions(&w, req); err != nil {
		return nil, err
	}
	w.Input = make([]any, 0, len(req.Messages))
	for i := range req.Messages {
		if reasoningOnly(&req.Messages[i]) {
			// The endpoint takes no reasoning text back: the message would
			// reach it as an empty assistant turn (R19.2).
			continue
		}
		items, err := inputItems(&req.Messages[i])
		if err != nil {
			return nil, encodeError("message " + strconv.Itoa(i) + ": " + err.Error())
		}
		w.Input = append(w.Input, items...)
	}
	for i, t := range req.Tools {
		where := "tool " + strconv.Itoa(i)
		if t.Name == "" {
			return nil, encodeError(where + ": empty name")
		}
		if len(t.Parameters) > 0 && !json.Valid(t.Parameters) {
			return nil, encodeError(where + ": parameters are not valid JSON")
		}
		w.Tools = append(w.Tools, wireTool{Type: "function", Name: t.Name, Description: t.Description, Parameters: t.Parameters})
	}
	if err := encodeFormat(&w, req); err != nil {
		return nil, err
	}
	b, err := openaiwire.Marshal(w)
	if err != nil {
		// encoding/json's error may quote request values: not in the text.
		return nil, encodeError("request cannot be encoded")
	}
	return b, nil
}

// encodeError returns the plain error "recourse: openai responses: what".
func encodeError(what string) error { return errors.New("recourse: openai responses: " + what) }

// unsupported returns the R14.1 error for control.
func unsupported(control string) error {
	return &layer.UnsupportedError{Provider: layer.OpenAI, Control: control}
}

// encodeOptions adapts the generation controls to the endpoint and the
// model family (R14.1, R19.2).
func (c *Codec) encodeOptions(w *wireRequest, req *chat.Request) error {
	o := &req.Options
	switch {
	case o.TopK != nil:
		return unsupported("TopK")
	case o.Seed != nil:
		return unsupported("Seed")
	case len(o.Stop) > 0:
		return unsupported("Stop")
	case o.ContextLength != nil:
		return unsupported("ContextLength")
	case o.Think != nil:
		return unsupported("Think")
	case o.KeepAlive != "":
		return unsupported("KeepAlive")
	}
	for _, f := range []struct {
		name string
		v    *float64
	}{{"Temperature", o.Temperature}, {"TopP", o.TopP}} {
		if f.v != nil && (math.IsNaN(*f.v) || math.IsInf(*f.v, 0)) {
			return encodeError(f.name + " is not a finite number")
		}
	}
	if c.reasoning(req.Model) {
		switch {
		case o.Temperature != nil:
			return unsupported("Temperature with reasoning models")
		case o.TopP != nil:
			return unsupported("TopP with reasoning models")
		}
		switch o.ReasoningEffort {
		case "":
		case "low", "medium", "high":
			w.Reasoning = &wireEffort{Effort: o.ReasoningEffort}
		default:
			return unsupported("ReasoningEffort other than low, medium or high")
		}
	} else {
		if o.ReasoningEffort != "" {
			return unsupported("ReasoningEffort with non-reasoning models")
		}
		w.Temperature = copyPtr(o.Temperature)
		w.TopP = copyPtr(o.TopP)
	}
	w.MaxOutputTokens = copyPtr(o.MaxTokens)
	return nil
}

// encodeFormat encodes Schema or JSONMode as text.format.
func encodeFormat(w *wireRequest, req *chat.Request) error {
	switch {
	case req.Schema != nil && req.Options.JSONMode:
		return encodeError("Schema and JSONMode are mutually exclusive")
	case req.Schema != nil:
		if !json.Valid(req.Schema.Schema) {
			return encodeError("schema is not valid JSON")
		}
		name := req.Schema.Name
		if name == "" {
			name = "response"
		}
		strict := req.Schema.Strict
		w.Text = &wireText{Format: wireFormat{Type: "json_schema", Name: name, Schema: req.Schema.Schema, Strict: &strict}}
	case req.Options.JSONMode:
		w.Text = &wireText{Format: wireFormat{Type: "json_object"}}
	}
	return nil
}

// inputItems encodes one message as its input items. The error text is
// relative to the message and never quotes content.
func inputItems(m *chat.Message) ([]any, error) {
	switch m.Role {
	case chat.System, chat.User, chat.Assistant, chat.Tool:
	default:
		return nil, errors.New("unknown role")
	}
	if len(m.Images) > 0 && m.Role != chat.User {
		return nil, errors.New("images are only sent on user messages")
	}
	if len(m.ToolCalls) > 0 && m.Role != chat.Assistant {
		return nil, errors.New("tool calls are only sent on assistant messages")
	}
	switch m.Role {
	case chat.Tool:
		if m.ToolCallID == "" {
			return nil, errors.New("tool message has no tool call ID")
		}
		return []any{functionCallOutput{Type: "function_call_output", CallID: m.ToolCallID, Output: &m.Content}}, nil
	case chat.User:
		if len(m.Images) > 0 {
			parts := make([]inputPart, 0, len(m.Images)+1)
			if m.Content != "" {
				parts = append(parts, inputPart{Type: "input_text", Text: m.Content})
			}
			for _, im := range m.Images {
				mime := im.MIMEType
				if mime == "" {
					mime = "image/png"
				}
				parts = append(parts, inputPart{Type: "input_image", ImageURL: "data:" + mime + ";base64," + base64.StdEncoding.EncodeToString(im.Data)})
			}
			return []any{inputMessage{Type: "message", Role: "user", Content: parts}}, nil
		}
	}
	var items []any
	if m.Content != "" || len(m.ToolCalls) == 0 {
		items = append(items, inputMessage{Type: "message", Role: string(m.Role), Content: &m.Content})
	}
	for j, tc := range m.ToolCalls {
		call, err := encodeCall(tc)
		if err != nil {
			return nil, errors.New("tool call " + strconv.Itoa(j) + ": " + err.Error())
		}
		items = append(items, call)
	}
	return items, nil
}

// reasoningOnly reports whether m is an assistant message that holds
// reasoning and nothing else: no content, images, tool calls, tool call ID
// or tool name.
func reasoningOnly(m *chat.Message) bool {
	return m.Role == chat.Assistant && m.Reasoning != "" && m.Content == "" && len(m.Images) == 0 &&
		len(m.ToolCalls) == 0 && m.ToolCallID == "" && m.ToolName == ""
}

// encodeCall encodes one tool call of an assistant message as a
// function_call item. Arguments that are a JSON string are sent as that
// string's text (how Decode keeps arguments that were not valid JSON), and
// empty arguments as "{}". The error text never quotes the arguments.
func encodeCall(tc chat.ToolCall) (functionCall, error) {
	if tc.ID == "" {
		return functionCall{}, errors.New("no ID")
	}
	if tc.Name == "" {
		return functionCall{}, errors.New("no name")
	}
	args := "{}"
	if len(tc.Arguments) > 0 {
		if !json.Valid(tc.Arguments) {
			return functionCall{}, errors.New("arguments are not valid JSON")
		}
		args = string(tc.Arguments)
		var s string
		if json.Unmarshal(tc.Arguments, &s) == nil {
			args = s
		}
	}
	return functionCall{Type: "function_call", CallID: tc.ID, Name: tc.Name, Arguments: args}, nil
}

func copyPtr[T any](p *T) *T {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}
