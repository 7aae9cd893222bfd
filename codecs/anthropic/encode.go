package anthropic

import (
	"encoding/base64"
	"encoding/json"
	"math"
	"strconv"

	"github.com/recourse-dev/recourse/chat"
	"github.com/recourse-dev/recourse/codec"
	"github.com/recourse-dev/recourse/codecs/internal/jsonscan"
	"github.com/recourse-dev/recourse/codecs/internal/openaiwire"
	"github.com/recourse-dev/recourse/codecs/internal/request"
)

var errs = request.Errors{Provider: codec.Anthropic}

// wireRequest is the request body of POST /v1/messages, members in the
// order they are written.
type wireRequest struct {
	Model         string          `json:"model"`
	MaxTokens     int             `json:"max_tokens"`
	System        []textBlock     `json:"system,omitempty"`
	Messages      []wireMessage   `json:"messages"`
	Tools         []wireTool      `json:"tools,omitempty"`
	StopSequences []string        `json:"stop_sequences,omitempty"`
	Temperature   *float64        `json:"temperature,omitempty"`
	TopP          *float64        `json:"top_p,omitempty"`
	TopK          *int            `json:"top_k,omitempty"`
	Thinking      *thinkingConfig `json:"thinking,omitempty"`
	Stream        bool            `json:"stream,omitempty"`
}

type thinkingConfig struct {
	Type         string `json:"type"`
	BudgetTokens int    `json:"budget_tokens"`
}

type wireMessage struct {
	Role    string `json:"role"`
	Content []any  `json:"content"`
}

type textBlock struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

type imageSource struct {
	Type      string `json:"type"`
	MediaType string `json:"media_type"`
	Data      string `json:"data"`
}

type imageBlock struct {
	Type   string      `json:"type"`
	Source imageSource `json:"source"`
}

type thinkingBlock struct {
	Type      string `json:"type"`
	Thinking  string `json:"thinking"`
	Signature string `json:"signature"`
}

type toolUseBlock struct {
	Type  string          `json:"type"`
	ID    string          `json:"id"`
	Name  string          `json:"name"`
	Input json.RawMessage `json:"input"`
}

type toolResultBlock struct {
	Type      string `json:"type"`
	ToolUseID string `json:"tool_use_id"`
	Content   string `json:"content"`
}

type wireTool struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	InputSchema json.RawMessage `json:"input_schema"`
}

// emptyObject is the input of a tool call without arguments and the input
// schema of a tool without parameters.
var emptyObject = json.RawMessage(`{}`)

// Encode encodes req as a Messages API request body (R22.3). System
// messages become the top-level system text blocks, in order; user
// messages their images (base64 sources) then their text; an assistant
// message its thinking block (only when it has both Reasoning and
// ReasoningSignature), its text and its tool_use blocks; consecutive tool
// messages one user message of tool_result blocks. An assistant message
// left with no block is left out. MaxTokens is required (see
// [WithDefaultMaxTokens]); Temperature, TopP, TopK, Stop, tools and Think
// (see [WithThinkingBudget]) are sent; Seed, ContextLength,
// ReasoningEffort, KeepAlive, JSONMode and Schema have no field on this
// endpoint and are each a *codec.UnsupportedError. Other errors name the
// offending part by index, never by value.
func (c *Codec) Encode(req *chat.Request) ([]byte, error) {
	if err := errs.Check(req); err != nil {
		return nil, err
	}
	w := wireRequest{Model: req.Model, Stream: req.Stream, Messages: []wireMessage{}}
	if err := c.options(&w, &req.Options); err != nil {
		return nil, err
	}
	if req.Schema != nil {
		return nil, errs.Unsupported("Schema")
	}
	for i := range req.Messages {
		if err := encodeMessage(&w, i, &req.Messages[i]); err != nil {
			return nil, err
		}
	}
	for i := range req.Tools {
		t, err := encodeTool(i, &req.Tools[i])
		if err != nil {
			return nil, err
		}
		w.Tools = append(w.Tools, t)
	}
	return openaiwire.Marshal(&w)
}

// options sets the request's controls on w.
func (c *Codec) options(w *wireRequest, o *chat.Options) error {
	switch {
	case o.Seed != nil:
		return errs.Unsupported("Seed")
	case o.ContextLength != nil:
		return errs.Unsupported("ContextLength")
	case o.ReasoningEffort != "":
		return errs.Unsupported("ReasoningEffort")
	case o.KeepAlive != "":
		return errs.Unsupported("KeepAlive")
	case o.JSONMode:
		return errs.Unsupported("JSONMode")
	}
	for _, f := range []*float64{o.Temperature, o.TopP} {
		if f != nil && (math.IsNaN(*f) || math.IsInf(*f, 0)) {
			return errs.Plain("a sampling control is not a finite number")
		}
	}
	switch {
	case o.MaxTokens != nil && *o.MaxTokens > 0:
		w.MaxTokens = *o.MaxTokens
	case o.MaxTokens != nil:
		return errs.Plain("MaxTokens is not positive")
	case c.maxTokens > 0:
		w.MaxTokens = c.maxTokens
	default:
		return errs.Unsupported("MaxTokens unset (the Messages API requires it; see anthropic.WithDefaultMaxTokens)")
	}
	if o.Think != nil && *o.Think {
		if c.budget == 0 {
			return errs.Unsupported("Think without a thinking budget (see anthropic.WithThinkingBudget)")
		}
		w.Thinking = &thinkingConfig{Type: "enabled", BudgetTokens: c.budget}
	}
	w.Temperature, w.TopP, w.TopK = o.Temperature, o.TopP, o.TopK
	w.StopSequences = o.Stop
	return nil
}

// encodeMessage appends message i, m, to w.
func encodeMessage(w *wireRequest, i int, m *chat.Message) error {
	at := "message " + strconv.Itoa(i) + ": "
	switch m.Role {
	case chat.System:
		if m.Content == "" {
			return errs.Plain(at + "system message has no text")
		}
		if len(m.Images) > 0 || len(m.ToolCalls) > 0 {
			return errs.Plain(at + "system message holds more than text")
		}
		w.System = append(w.System, textBlock{Type: "text", Text: m.Content})
	case chat.User:
		var blocks []any
		for j, im := range m.Images {
			b, err := imageOf(at, j, im)
			if err != nil {
				return err
			}
			blocks = append(blocks, b)
		}
		if m.Content != "" {
			blocks = append(blocks, textBlock{Type: "text", Text: m.Content})
		}
		if len(blocks) == 0 {
			return errs.Plain(at + "user message is empty")
		}
		w.Messages = append(w.Messages, wireMessage{Role: "user", Content: blocks})
	case chat.Assistant:
		var blocks []any
		if m.Reasoning != "" && m.ReasoningSignature != "" {
			blocks = append(blocks, thinkingBlock{Type: "thinking", Thinking: m.Reasoning, Signature: m.ReasoningSignature})
		}
		if m.Content != "" {
			blocks = append(blocks, textBlock{Type: "text", Text: m.Content})
		}
		for j, tc := range m.ToolCalls {
			b, err := toolUseOf(at, j, tc)
			if err != nil {
				return err
			}
			blocks = append(blocks, b)
		}
		if len(blocks) > 0 {
			w.Messages = append(w.Messages, wireMessage{Role: "assistant", Content: blocks})
		}
	case chat.Tool:
		if m.ToolCallID == "" {
			return errs.Plain(at + "tool message has no ToolCallID")
		}
		b := toolResultBlock{Type: "tool_result", ToolUseID: m.ToolCallID, Content: m.Content}
		if n := len(w.Messages); n > 0 && w.Messages[n-1].Role == "user" && isToolResults(w.Messages[n-1].Content) {
			w.Messages[n-1].Content = append(w.Messages[n-1].Content, b)
		} else {
			w.Messages = append(w.Messages, wireMessage{Role: "user", Content: []any{b}})
		}
	default:
		return errs.Plain(at + "role is not system, user, assistant or tool")
	}
	return nil
}

// isToolResults reports whether every block is a tool_result: a message
// that consecutive tool messages share.
func isToolResults(blocks []any) bool {
	for _, b := range blocks {
		if _, ok := b.(toolResultBlock); !ok {
			return false
		}
	}
	return true
}

// mediaTypes are the image media types the Messages API takes.
var mediaTypes = map[string]bool{"image/jpeg": true, "image/png": true, "image/gif": true, "image/webp": true}

func imageOf(at string, j int, im chat.Image) (imageBlock, error) {
	mt := im.MIMEType
	if mt == "" {
		mt = "image/png"
	}
	if !mediaTypes[mt] {
		return imageBlock{}, errs.Plain(at + "image " + strconv.Itoa(j) + " has a media type the Messages API does not take")
	}
	if len(im.Data) == 0 {
		return imageBlock{}, errs.Plain(at + "image " + strconv.Itoa(j) + " is empty")
	}
	return imageBlock{Type: "image", Source: imageSource{Type: "base64", MediaType: mt, Data: base64.StdEncoding.EncodeToString(im.Data)}}, nil
}

func toolUseOf(at string, j int, tc chat.ToolCall) (toolUseBlock, error) {
	where := at + "tool call " + strconv.Itoa(j) + " "
	switch {
	case tc.ID == "":
		return toolUseBlock{}, errs.Plain(where + "has no ID")
	case tc.Name == "":
		return toolUseBlock{}, errs.Plain(where + "has no name")
	}
	in := tc.Arguments
	if len(jsonscan.TrimSpace(in)) == 0 {
		in = emptyObject
	} else if !isObject(in) {
		return toolUseBlock{}, errs.Plain(where + "arguments are not a JSON object")
	}
	return toolUseBlock{Type: "tool_use", ID: tc.ID, Name: tc.Name, Input: in}, nil
}

func encodeTool(i int, t *chat.ToolSpec) (wireTool, error) {
	at := "tool " + strconv.Itoa(i) + " "
	if t.Name == "" {
		return wireTool{}, errs.Plain(at + "has no name")
	}
	schema := t.Parameters
	if len(jsonscan.TrimSpace(schema)) == 0 {
		schema = json.RawMessage(`{"type":"object"}`)
	} else if !isObject(schema) {
		return wireTool{}, errs.Plain(at + "parameters are not a JSON object")
	}
	return wireTool{Name: t.Name, Description: t.Description, InputSchema: schema}, nil
}

// isObject reports whether raw is one valid JSON object the scanners can
// read (at most jsonscan.MaxDepth deep).
func isObject(raw []byte) bool {
	t := jsonscan.TrimSpace(raw)
	return len(t) > 0 && t[0] == '{' && jsonscan.Valid(t)
}

// Describe reads an encoded request body: its model, and its operation —
// streaming when "stream" is true, structured when it asks for an output
// format ("output_format", or "output_config" with a "format"), ordinary
// otherwise. A body that is not a JSON object, or whose model or stream
// has the wrong type, is a *codec.ProtocolError.
func (c *Codec) Describe(body []byte) (codec.RequestInfo, error) {
	o, model, stream, err := openaiwire.ParseRequest(body)
	if err != nil {
		return codec.RequestInfo{}, err
	}
	info := codec.RequestInfo{Model: model, Operation: codec.Ordinary}
	var cfg openaiwire.Object
	_ = o.Get("output_config", &cfg) // not an object: no format
	switch {
	case stream:
		info.Operation = codec.Streaming
	case o.Has("output_format") || cfg.Has("format"):
		info.Operation = codec.Structured
	}
	return info, nil
}
