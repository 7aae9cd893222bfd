package openai

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"

	"github.com/recourse-dev/recourse/chat"
	"github.com/recourse-dev/recourse/layer"
)

// wireRequest is the request body. Field order is the encoding order.
type wireRequest struct {
	Model               string              `json:"model"`
	Messages            []wireMessage       `json:"messages"`
	Tools               []wireTool          `json:"tools,omitempty"`
	ResponseFormat      *wireResponseFormat `json:"response_format,omitempty"`
	ReasoningEffort     string              `json:"reasoning_effort,omitempty"`
	MaxCompletionTokens *int                `json:"max_completion_tokens,omitempty"`
	MaxTokens           *int                `json:"max_tokens,omitempty"`
	Temperature         *float64            `json:"temperature,omitempty"`
	TopP                *float64            `json:"top_p,omitempty"`
	Seed                *int                `json:"seed,omitempty"`
	Stop                []string            `json:"stop,omitempty"`
	Stream              bool                `json:"stream,omitempty"`
	StreamOptions       *wireStreamOptions  `json:"stream_options,omitempty"`
}

// wireMessage is one message. Content is nil (left out), a string, or a
// []wirePart.
type wireMessage struct {
	Role       chat.Role      `json:"role"`
	ToolCallID string         `json:"tool_call_id,omitempty"`
	Content    any            `json:"content,omitempty"`
	ToolCalls  []wireToolCall `json:"tool_calls,omitempty"`
}

type wirePart struct {
	Type     string        `json:"type"`
	Text     string        `json:"text,omitempty"`
	ImageURL *wireImageURL `json:"image_url,omitempty"`
}

type wireImageURL struct {
	URL string `json:"url"`
}

type wireToolCall struct {
	ID       string       `json:"id"`
	Type     string       `json:"type"`
	Function wireFunction `json:"function"`
}

type wireFunction struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

type wireTool struct {
	Type     string           `json:"type"`
	Function wireToolFunction `json:"function"`
}

type wireToolFunction struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters,omitempty"`
}

type wireResponseFormat struct {
	Type       string          `json:"type"`
	JSONSchema *wireJSONSchema `json:"json_schema,omitempty"`
}

type wireJSONSchema struct {
	Name   string          `json:"name"`
	Schema json.RawMessage `json:"schema"`
	Strict bool            `json:"strict"`
}

type wireStreamOptions struct {
	IncludeUsage bool `json:"include_usage"`
}

// Encode encodes req to the OpenAI request body. It returns an
// *[layer.UnsupportedError] for a control that OpenAI, or the requested
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
	msgs, err := encodeMessages(req.Messages)
	if err != nil {
		return nil, err
	}
	w.Messages = msgs
	if w.Tools, err = encodeTools(req.Tools); err != nil {
		return nil, err
	}
	if w.ResponseFormat, err = encodeFormat(req); err != nil {
		return nil, err
	}
	if req.Stream {
		w.Stream = true
		w.StreamOptions = &wireStreamOptions{IncludeUsage: true}
	}
	return marshal(w)
}

// unsupported returns the R14.1 error for control.
func unsupported(control string) error {
	return &layer.UnsupportedError{Provider: layer.OpenAI, Control: control}
}

// encodeOptions adapts the sampling controls to the model family (R14.1).
func (c *Codec) encodeOptions(w *wireRequest, req *chat.Request) error {
	o := &req.Options
	switch {
	case o.TopK != nil:
		return unsupported("TopK")
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
			return errors.New("recourse: openai: " + f.name + " is not a finite number")
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
		case "", "low", "medium", "high":
		default:
			return unsupported("ReasoningEffort other than low, medium or high")
		}
		w.ReasoningEffort = o.ReasoningEffort
		w.MaxCompletionTokens = copyPtr(o.MaxTokens)
	} else {
		if o.ReasoningEffort != "" {
			return unsupported("ReasoningEffort with non-reasoning models")
		}
		w.MaxTokens = copyPtr(o.MaxTokens)
		w.Temperature = copyPtr(o.Temperature)
		w.TopP = copyPtr(o.TopP)
	}
	w.Seed = copyPtr(o.Seed)
	if len(o.Stop) > 0 {
		w.Stop = append([]string(nil), o.Stop...)
	}
	return nil
}

func copyPtr[T any](p *T) *T {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}

func encodeMessages(in []chat.Message) ([]wireMessage, error) {
	out := make([]wireMessage, 0, len(in))
	for i, m := range in {
		where := "recourse: openai: message " + strconv.Itoa(i)
		switch m.Role {
		case chat.System, chat.User, chat.Assistant, chat.Tool:
		default:
			return nil, errors.New(where + ": unknown role")
		}
		if len(m.Images) > 0 && m.Role != chat.User {
			return nil, errors.New(where + ": images are only sent on user messages")
		}
		if len(m.ToolCalls) > 0 && m.Role != chat.Assistant {
			return nil, errors.New(where + ": tool calls are only sent on assistant messages")
		}
		w := wireMessage{Role: m.Role}
		switch m.Role {
		case chat.System:
			w.Content = m.Content
		case chat.User:
			if len(m.Images) == 0 {
				w.Content = m.Content
				break
			}
			parts := make([]wirePart, 0, len(m.Images)+1)
			if m.Content != "" {
				parts = append(parts, wirePart{Type: "text", Text: m.Content})
			}
			for _, im := range m.Images {
				parts = append(parts, wirePart{Type: "image_url", ImageURL: &wireImageURL{URL: dataURL(im)}})
			}
			w.Content = parts
		case chat.Assistant:
			if m.Content != "" || len(m.ToolCalls) == 0 {
				w.Content = m.Content
			}
			for j, tc := range m.ToolCalls {
				call, err := encodeToolCall(tc)
				if err != nil {
					return nil, errors.New(where + ": tool call " + strconv.Itoa(j) + ": " + err.Error())
				}
				w.ToolCalls = append(w.ToolCalls, call)
			}
		case chat.Tool:
			if m.ToolCallID == "" {
				return nil, errors.New(where + ": tool message has no tool call ID")
			}
			w.Content = m.Content
			w.ToolCallID = m.ToolCallID
		}
		out = append(out, w)
	}
	return out, nil
}

func dataURL(im chat.Image) string {
	mime := im.MIMEType
	if mime == "" {
		mime = "image/png"
	}
	return "data:" + mime + ";base64," + base64.StdEncoding.EncodeToString(im.Data)
}

// encodeToolCall returns the wire form of an assistant tool call. The error
// text never quotes the arguments.
func encodeToolCall(tc chat.ToolCall) (wireToolCall, error) {
	if tc.ID == "" {
		return wireToolCall{}, errors.New("no ID")
	}
	if tc.Name == "" {
		return wireToolCall{}, errors.New("no name")
	}
	args := "{}"
	if len(tc.Arguments) > 0 {
		if !json.Valid(tc.Arguments) {
			return wireToolCall{}, errors.New("arguments are not valid JSON")
		}
		args = string(tc.Arguments)
		// A JSON string value is how Decode keeps arguments that were not
		// valid JSON: send its text, so decoded history round-trips.
		var s string
		if json.Unmarshal(tc.Arguments, &s) == nil {
			args = s
		}
	}
	return wireToolCall{ID: tc.ID, Type: "function", Function: wireFunction{Name: tc.Name, Arguments: args}}, nil
}

func encodeTools(in []chat.ToolSpec) ([]wireTool, error) {
	if len(in) == 0 {
		return nil, nil
	}
	out := make([]wireTool, 0, len(in))
	for i, t := range in {
		where := "recourse: openai: tool " + strconv.Itoa(i)
		if t.Name == "" {
			return nil, errors.New(where + ": empty name")
		}
		if len(t.Parameters) > 0 && !json.Valid(t.Parameters) {
			return nil, errors.New(where + ": parameters are not valid JSON")
		}
		out = append(out, wireTool{Type: "function", Function: wireToolFunction{
			Name:        t.Name,
			Description: t.Description,
			Parameters:  t.Parameters,
		}})
	}
	return out, nil
}

func encodeFormat(req *chat.Request) (*wireResponseFormat, error) {
	switch {
	case req.Schema != nil && req.Options.JSONMode:
		return nil, errors.New("recourse: openai: Schema and JSONMode are mutually exclusive")
	case req.Schema != nil:
		if len(req.Schema.Schema) == 0 || !json.Valid(req.Schema.Schema) {
			return nil, errors.New("recourse: openai: schema is not valid JSON")
		}
		name := req.Schema.Name
		if name == "" {
			name = "response"
		}
		return &wireResponseFormat{Type: "json_schema", JSONSchema: &wireJSONSchema{
			Name:   name,
			Schema: req.Schema.Schema,
			Strict: req.Schema.Strict,
		}}, nil
	case req.Options.JSONMode:
		return &wireResponseFormat{Type: "json_object"}, nil
	}
	return nil, nil
}

// marshal encodes v without HTML escaping and without a trailing newline.
// Raw JSON (tool parameters, schema) is validated and compacted on the way.
func marshal(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, fmt.Errorf("recourse: openai: encode request: %w", err)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}
