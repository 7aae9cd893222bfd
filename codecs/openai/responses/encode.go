package responses

import (
	"encoding/json"
	"errors"
	"strconv"

	"github.com/recourse-dev/recourse/chat"
	"github.com/recourse-dev/recourse/codec"
	"github.com/recourse-dev/recourse/codecs/internal/openaiwire"
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
// documentation for the mapping). It returns an *[codec.UnsupportedError]
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
		if openaiwire.ReasoningOnly(&req.Messages[i]) {
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
		if err := dialect.CheckTool(i, &req.Tools[i]); err != nil {
			return nil, err
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

// dialect is what the Responses API takes of the checks and encodings it
// shares with chat completions: the documented roles, tool calls only on
// assistant messages and always with an ID, any valid JSON as tool
// parameters, schema and arguments, a schema and JSON mode exclusive, and
// "strict" always sent. Its errors name the codec, as encodeError does.
var dialect = openaiwire.Dialect{
	Provider:           codec.OpenAI,
	Name:               "openai responses",
	KnownRoles:         true,
	AssistantToolCalls: true,
	ToolCallIDs:        true,
	ExclusiveFormats:   true,
	StrictFalse:        true,
}

// encodeOptions adapts the generation controls to the endpoint and the
// model family (R14.1, R19.2).
func (c *Codec) encodeOptions(w *wireRequest, req *chat.Request) error {
	o := &req.Options
	reasoning, err := dialect.CheckSampling(o, c.reasoning, req.Model,
		openaiwire.Control{Name: "Seed", Set: o.Seed != nil}, openaiwire.Control{Name: "Stop", Set: len(o.Stop) > 0})
	if err != nil {
		return err
	}
	switch {
	case !reasoning:
		w.Temperature = openaiwire.CopyPtr(o.Temperature)
		w.TopP = openaiwire.CopyPtr(o.TopP)
	case o.ReasoningEffort != "":
		w.Reasoning = &wireEffort{Effort: o.ReasoningEffort}
	}
	w.MaxOutputTokens = openaiwire.CopyPtr(o.MaxTokens)
	return nil
}

// encodeFormat encodes Schema or JSONMode as text.format: the
// response_format of chat completions with the schema's members flat.
func encodeFormat(w *wireRequest, req *chat.Request) error {
	rf, err := dialect.ResponseFormat(req)
	if rf == nil || err != nil {
		return err
	}
	f := wireFormat{Type: rf.Type}
	if js := rf.JSONSchema; js != nil {
		f.Name, f.Schema, f.Strict = js.Name, js.Schema, js.Strict
	}
	w.Text = &wireText{Format: f}
	return nil
}

// inputItems encodes one message as its input items. The error text is
// relative to the message and never quotes content.
func inputItems(m *chat.Message) ([]any, error) {
	if err := dialect.CheckRole(m); err != nil {
		return nil, err
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
				url, _ := dialect.DataURL(im) // dialect checks no images
				parts = append(parts, inputPart{Type: "input_image", ImageURL: url})
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

// encodeCall encodes one tool call of an assistant message as a
// function_call item. Arguments that are a JSON string are sent as that
// string's text (how Decode keeps arguments that were not valid JSON), and
// empty arguments as "{}". The error text never quotes the arguments.
func encodeCall(tc chat.ToolCall) (functionCall, error) {
	args, err := dialect.CallArguments(&tc)
	if err != nil {
		return functionCall{}, err
	}
	return functionCall{Type: "function_call", CallID: tc.ID, Name: tc.Name, Arguments: args}, nil
}
