package omlx

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"github.com/recourse-dev/recourse/codecs/internal/bodyscan"
	"math"
	"strconv"
	"strings"

	"github.com/recourse-dev/recourse/chat"
	"github.com/recourse-dev/recourse/layer"
)

// The wire structs fix the field order of an encoded request.

type wireRequest struct {
	Model           string              `json:"model"`
	Messages        []wireMessage       `json:"messages"`
	Stream          bool                `json:"stream"`
	StreamOptions   *wireStreamOptions  `json:"stream_options,omitempty"`
	Temperature     *float64            `json:"temperature,omitempty"`
	TopP            *float64            `json:"top_p,omitempty"`
	TopK            *int                `json:"top_k,omitempty"`
	MaxTokens       *int                `json:"max_tokens,omitempty"`
	Stop            []string            `json:"stop,omitempty"`
	Tools           []wireTool          `json:"tools,omitempty"`
	ResponseFormat  *wireResponseFormat `json:"response_format,omitempty"`
	ReasoningEffort string              `json:"reasoning_effort,omitempty"`
}

type wireStreamOptions struct {
	IncludeUsage bool `json:"include_usage"`
}

// wireMessage.Content is a string, a []wirePart, or nil (null: an assistant
// message that only calls tools).
type wireMessage struct {
	Role       string         `json:"role"`
	Content    any            `json:"content"`
	ToolCalls  []wireToolCall `json:"tool_calls,omitempty"`
	ToolCallID string         `json:"tool_call_id,omitempty"`
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
	ID       string           `json:"id,omitempty"`
	Type     string           `json:"type"`
	Function wireFunctionCall `json:"function"`
}

type wireFunctionCall struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
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

type wireResponseFormat struct {
	Type       string          `json:"type"`
	JSONSchema *wireJSONSchema `json:"json_schema,omitempty"`
}

type wireJSONSchema struct {
	Name   string          `json:"name"`
	Schema json.RawMessage `json:"schema"`
	Strict bool            `json:"strict,omitempty"`
}

// requestError returns a safe encoding error: what names the offending part
// of the request by field name and index, never by value.
func requestError(what string) error {
	return errors.New("recourse: omlx: " + what)
}

// unsupported returns the error for a control oMLX does not support.
func unsupported(control string) error {
	return &layer.UnsupportedError{Provider: layer.OMLX, Control: control}
}

// Encode encodes req as the body of a POST /v1/chat/completions request. The
// result is a fresh slice that shares no memory with req, so later changes
// to req cannot reach it; encoding the same request twice yields identical
// bytes.
//
// Encode returns an *layer.UnsupportedError naming the control when Seed,
// ContextLength, Think or KeepAlive is set (checked in that order), and a
// plain error when req is nil, has no model, or holds a value oMLX cannot
// accept (a reasoning effort other than "low", "medium" or "high", images on
// a message that is not a user message, an empty image or an image MIME
// type that is not of the form type/subtype, tool-call arguments that are
// not a JSON object, a schema or tool parameters that are not a JSON object,
// a tool or tool call without a name, a non-finite float). Error messages
// name fields and indices, never values.
func (c *Codec) Encode(req *chat.Request) ([]byte, error) {
	if req == nil {
		return nil, requestError("request is nil")
	}
	if req.Model == "" {
		return nil, requestError("request has no model")
	}
	o := req.Options
	switch {
	case o.Seed != nil:
		return nil, unsupported("Seed")
	case o.ContextLength != nil:
		return nil, unsupported("ContextLength")
	case o.Think != nil:
		return nil, unsupported("Think")
	case o.KeepAlive != "":
		return nil, unsupported("KeepAlive")
	}
	switch o.ReasoningEffort {
	case "", "low", "medium", "high":
	default:
		return nil, requestError("Options.ReasoningEffort is not low, medium or high")
	}
	for _, f := range []struct {
		name string
		v    *float64
	}{{"Temperature", o.Temperature}, {"TopP", o.TopP}} {
		if f.v != nil && (math.IsNaN(*f.v) || math.IsInf(*f.v, 0)) {
			return nil, requestError("Options." + f.name + " is not finite")
		}
	}
	w := wireRequest{
		Model:           req.Model,
		Messages:        make([]wireMessage, 0, len(req.Messages)),
		Stream:          req.Stream,
		Temperature:     o.Temperature,
		TopP:            o.TopP,
		TopK:            o.TopK,
		MaxTokens:       o.MaxTokens,
		Stop:            o.Stop,
		ReasoningEffort: o.ReasoningEffort,
	}
	if req.Stream {
		w.StreamOptions = &wireStreamOptions{IncludeUsage: true}
	}
	for i, m := range req.Messages {
		wm, err := encodeMessage(i, m)
		if err != nil {
			return nil, err
		}
		w.Messages = append(w.Messages, wm)
	}
	for i, t := range req.Tools {
		if t.Name == "" {
			return nil, requestError("tool " + strconv.Itoa(i) + " has no name")
		}
		if len(t.Parameters) > 0 && !isJSONObject(t.Parameters) {
			return nil, requestError("tool " + strconv.Itoa(i) + " parameters are not a JSON object")
		}
		w.Tools = append(w.Tools, wireTool{
			Type:     "function",
			Function: wireFunction{Name: t.Name, Description: t.Description, Parameters: t.Parameters},
		})
	}
	switch {
	case req.Schema != nil:
		if !isJSONObject(req.Schema.Schema) {
			return nil, requestError("Schema.Schema is not a JSON object")
		}
		name := req.Schema.Name
		if name == "" {
			name = "response"
		}
		w.ResponseFormat = &wireResponseFormat{
			Type:       "json_schema",
			JSONSchema: &wireJSONSchema{Name: name, Schema: req.Schema.Schema, Strict: req.Schema.Strict},
		}
	case o.JSONMode:
		w.ResponseFormat = &wireResponseFormat{Type: "json_object"}
	}
	return marshal(w)
}

func encodeMessage(i int, m chat.Message) (wireMessage, error) {
	at := "message " + strconv.Itoa(i)
	wm := wireMessage{Role: string(m.Role), Content: m.Content, ToolCallID: m.ToolCallID}
	if len(m.Images) > 0 {
		if m.Role != chat.User {
			return wireMessage{}, requestError(at + " has images but is not a user message")
		}
		parts := make([]wirePart, 0, len(m.Images)+1)
		if m.Content != "" {
			parts = append(parts, wirePart{Type: "text", Text: m.Content})
		}
		for j, im := range m.Images {
			img := at + " image " + strconv.Itoa(j)
			if len(im.Data) == 0 {
				return wireMessage{}, requestError(img + " is empty")
			}
			mt := im.MIMEType
			if mt == "" {
				mt = "image/png"
			}
			if !validMediaType(mt) {
				return wireMessage{}, requestError(img + " MIME type is not of the form type/subtype")
			}
			url := "data:" + mt + ";base64," + base64.StdEncoding.EncodeToString(im.Data)
			parts = append(parts, wirePart{Type: "image_url", ImageURL: &wireImageURL{URL: url}})
		}
		wm.Content = parts
	}
	for j, tc := range m.ToolCalls {
		call := at + " tool call " + strconv.Itoa(j)
		if tc.Name == "" {
			return wireMessage{}, requestError(call + " has no name")
		}
		if !isJSONObject(tc.Arguments) {
			return wireMessage{}, requestError(call + " arguments are not a JSON object")
		}
		wm.ToolCalls = append(wm.ToolCalls, wireToolCall{
			ID:       tc.ID,
			Type:     "function",
			Function: wireFunctionCall{Name: tc.Name, Arguments: string(tc.Arguments)},
		})
	}
	if len(wm.ToolCalls) > 0 && m.Content == "" && len(m.Images) == 0 {
		wm.Content = nil // OpenAI's shape: a tool-calling turn without text has null content
	}
	return wm, nil
}

// validMediaType reports whether mt is type/subtype made of token characters
// (RFC 9110), so that it cannot break the data URL it is put in.
func validMediaType(mt string) bool {
	typ, sub, ok := strings.Cut(mt, "/")
	return ok && isToken(typ) && isToken(sub)
}

func isToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0:
		default:
			return false
		}
	}
	return true
}

// isJSONObject reports whether raw is valid JSON whose value is an object.
func isJSONObject(raw []byte) bool {
	t := bodyscan.TrimSpace(raw)
	return len(t) > 0 && t[0] == '{' && json.Valid(t)
}

// marshal encodes v without HTML escaping, so that text such as "<think>"
// travels as written. encoding/json compacts embedded raw JSON.
func marshal(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		// Unreachable for validated input; the json error may quote values.
		return nil, requestError("request cannot be encoded as JSON")
	}
	return bytes.TrimSuffix(b.Bytes(), []byte{'\n'}), nil
}
