package ollama

import (
	"encoding/base64"
	"encoding/json"
	"math"
	"strconv"

	"github.com/recourse-dev/recourse/chat"
	"github.com/recourse-dev/recourse/codec"
	"github.com/recourse-dev/recourse/codecs/internal/request"
)

// The wire structs fix the field order of an encoded request.

type wireRequest struct {
	Model     string          `json:"model"`
	Messages  []wireMessage   `json:"messages"`
	Stream    bool            `json:"stream"`
	Format    json.RawMessage `json:"format,omitempty"`
	Options   *wireOptions    `json:"options,omitempty"`
	Tools     []wireTool      `json:"tools,omitempty"`
	Think     *bool           `json:"think,omitempty"`
	KeepAlive string          `json:"keep_alive,omitempty"`
}

type wireMessage struct {
	Role       string         `json:"role"`
	Content    string         `json:"content"`
	Thinking   string         `json:"thinking,omitempty"`
	Images     []string       `json:"images,omitempty"`
	ToolCalls  []wireToolCall `json:"tool_calls,omitempty"`
	ToolName   string         `json:"tool_name,omitempty"`
	ToolCallID string         `json:"tool_call_id,omitempty"`
}

type wireToolCall struct {
	ID       string           `json:"id,omitempty"`
	Function wireFunctionCall `json:"function"`
}

type wireFunctionCall struct {
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
}

type wireOptions struct {
	Temperature *float64 `json:"temperature,omitempty"`
	TopP        *float64 `json:"top_p,omitempty"`
	TopK        *int     `json:"top_k,omitempty"`
	NumCtx      *int     `json:"num_ctx,omitempty"`
	NumPredict  *int     `json:"num_predict,omitempty"`
	Stop        []string `json:"stop,omitempty"`
	Seed        *int     `json:"seed,omitempty"`
}

type wireTool struct {
	Type     string       `json:"type"`
	Function wireFunction `json:"function"`
}

type wireFunction struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters,omitempty"`
}

// jsonFormat is the "format" value of JSON mode.
var jsonFormat = json.RawMessage(`"json"`)

// errs makes the encoding errors, "recourse: ollama: …".
var errs = request.Errors{Provider: codec.Ollama}

// Encode encodes req as the body of a POST /api/chat request. An assistant
// message's Reasoning is sent as its "thinking"; the reasoning of other
// messages is not sent. The result is
// a fresh slice that shares no memory with req, so later changes to req
// cannot reach it; encoding the same request twice yields identical bytes.
//
// Encode returns an *codec.UnsupportedError naming the control when
// Options.ReasoningEffort is set, and a plain error when req is nil, has no
// model, or holds a value Ollama cannot accept (tool-call arguments that are
// not a JSON object, an empty image, a schema or tool parameters that are
// not a JSON object, a tool or tool call without a name, a non-finite
// float). Error messages name fields and indices, never values.
func (c *Codec) Encode(req *chat.Request) ([]byte, error) {
	if err := errs.Check(req); err != nil {
		return nil, err
	}
	o := req.Options
	if o.ReasoningEffort != "" {
		return nil, errs.Unsupported("ReasoningEffort")
	}
	w := wireRequest{
		Model:     req.Model,
		Messages:  make([]wireMessage, 0, len(req.Messages)),
		Stream:    req.Stream,
		Think:     o.Think,
		KeepAlive: o.KeepAlive,
	}
	for i, m := range req.Messages {
		wm, err := encodeMessage(i, m)
		if err != nil {
			return nil, err
		}
		w.Messages = append(w.Messages, wm)
	}
	switch {
	case req.Schema != nil:
		if !request.IsJSONObject(req.Schema.Schema) {
			return nil, errs.Plain("Schema.Schema is not a JSON object")
		}
		w.Format = req.Schema.Schema
	case o.JSONMode:
		w.Format = jsonFormat
	}
	opts, err := encodeOptions(o)
	if err != nil {
		return nil, err
	}
	w.Options = opts
	for i, t := range req.Tools {
		if t.Name == "" {
			return nil, errs.Plain("tool " + strconv.Itoa(i) + " has no name")
		}
		if len(t.Parameters) > 0 && !request.IsJSONObject(t.Parameters) {
			return nil, errs.Plain("tool " + strconv.Itoa(i) + " parameters are not a JSON object")
		}
		w.Tools = append(w.Tools, wireTool{
			Type:     "function",
			Function: wireFunction{Name: t.Name, Description: t.Description, Parameters: t.Parameters},
		})
	}
	return errs.Marshal(w)
}

func encodeMessage(i int, m chat.Message) (wireMessage, error) {
	at := "message " + strconv.Itoa(i)
	wm := wireMessage{
		Role:       string(m.Role),
		Content:    m.Content,
		ToolName:   m.ToolName,
		ToolCallID: m.ToolCallID,
	}
	if m.Role == chat.Assistant {
		// Ollama takes an assistant turn's reasoning back as its thinking,
		// so a turn of reasoning alone is not empty (R14.1, R17.3).
		wm.Thinking = m.Reasoning
	}
	for j, im := range m.Images {
		if len(im.Data) == 0 {
			return wireMessage{}, errs.Plain(at + " image " + strconv.Itoa(j) + " is empty")
		}
		wm.Images = append(wm.Images, base64.StdEncoding.EncodeToString(im.Data))
	}
	for j, tc := range m.ToolCalls {
		call := at + " tool call " + strconv.Itoa(j)
		if tc.Name == "" {
			return wireMessage{}, errs.Plain(call + " has no name")
		}
		if !request.IsJSONObject(tc.Arguments) {
			return wireMessage{}, errs.Plain(call + " arguments are not a JSON object")
		}
		wm.ToolCalls = append(wm.ToolCalls, wireToolCall{
			ID:       tc.ID,
			Function: wireFunctionCall{Name: tc.Name, Arguments: tc.Arguments},
		})
	}
	return wm, nil
}

func encodeOptions(o chat.Options) (*wireOptions, error) {
	for _, f := range []struct {
		name string
		v    *float64
	}{{"Temperature", o.Temperature}, {"TopP", o.TopP}} {
		if f.v != nil && (math.IsNaN(*f.v) || math.IsInf(*f.v, 0)) {
			return nil, errs.Plain("Options." + f.name + " is not finite")
		}
	}
	if o.Temperature == nil && o.TopP == nil && o.TopK == nil && o.ContextLength == nil &&
		o.MaxTokens == nil && len(o.Stop) == 0 && o.Seed == nil {
		return nil, nil
	}
	return &wireOptions{
		Temperature: o.Temperature,
		TopP:        o.TopP,
		TopK:        o.TopK,
		NumCtx:      o.ContextLength,
		NumPredict:  o.MaxTokens,
		Stop:        o.Stop,
		Seed:        o.Seed,
	}, nil
}
