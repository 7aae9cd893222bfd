// Package openaiwire is the OpenAI chat completions wire format that the
// OpenAI and oMLX codecs share: the wire structs of messages, content
// parts, tool calls, tools, response_format and stream_options, the
// encoding of a chat.Request's messages, tools and response format into
// them, and the one decoder of a chat completion reply (Dialect.Decode).
// The Responses API codec takes its checks, argument text and format from
// the same Dialect, and reads its bodies, as the OpenAI codec reads a
// request, through [Object].
//
// What the servers take differently of those shapes is a [Dialect]. Which
// sampling controls a server takes, and the key order of the request body,
// stay with each codec, which declares its own request struct from these
// parts.
package openaiwire

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"math"
	"strconv"
	"strings"

	"github.com/recourse-dev/recourse/chat"
	"github.com/recourse-dev/recourse/codec"
	"github.com/recourse-dev/recourse/codecs/internal/bodyscan"
)

// Message is one element of "messages", in OpenAI's key order. Content is
// nil (left out), a *string (the text, referenced while the body is
// marshalled), or a []Part.
type Message struct {
	Role       chat.Role  `json:"role"`
	ToolCallID string     `json:"tool_call_id,omitempty"`
	Content    any        `json:"content,omitempty"`
	ToolCalls  []ToolCall `json:"tool_calls,omitempty"`
}

// Part is one content part of a user message with images.
type Part struct {
	Type     string    `json:"type"`
	Text     string    `json:"text,omitempty"`
	ImageURL *ImageURL `json:"image_url,omitempty"`
}

// ImageURL is the image_url of an image part: a base64 data URL.
type ImageURL struct {
	URL string `json:"url"`
}

// ToolCall is one tool call of an assistant message. An empty ID is left
// out.
type ToolCall struct {
	ID       string       `json:"id,omitempty"`
	Type     string       `json:"type"`
	Function FunctionCall `json:"function"`
}

// FunctionCall is the function of a tool call; Arguments is the text of the
// arguments' JSON.
type FunctionCall struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// Tool is one element of "tools".
type Tool struct {
	Type     string   `json:"type"`
	Function Function `json:"function"`
}

// Function describes the function of a tool.
type Function struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters,omitempty"`
}

// ResponseFormat is "response_format": "json_schema" with a JSONSchema, or
// "json_object".
type ResponseFormat struct {
	Type       string      `json:"type"`
	JSONSchema *JSONSchema `json:"json_schema,omitempty"`
}

// JSONSchema is the json_schema of a "json_schema" response format. A nil
// Strict is left out.
type JSONSchema struct {
	Name   string          `json:"name"`
	Schema json.RawMessage `json:"schema"`
	Strict *bool           `json:"strict,omitempty"`
}

// StreamOptions is "stream_options"; a streaming request asks for usage.
type StreamOptions struct {
	IncludeUsage bool `json:"include_usage"`
}

// Dialect is what one server takes of the shapes above. Each field is a
// check or an encoding that only some servers want; the zero value of a
// field is the lenient choice.
type Dialect struct {
	// Provider names the provider in error texts: "recourse: <Provider>: …",
	// unless Name is set.
	Provider codec.Provider
	// Name, when set, names the codec in error texts instead of Provider:
	// "recourse: <Name>: …". The default is "" (Provider's name).
	Name string
	// KnownRoles rejects a role other than system, user, assistant and
	// tool; without it a message's role is sent as it is.
	KnownRoles bool
	// AssistantToolCalls rejects tool calls on a message that is not an
	// assistant message; without it they are sent on any message.
	AssistantToolCalls bool
	// ToolCallIDs rejects a tool call without an ID and a tool message
	// without a tool call ID, and sends tool_call_id on tool messages only.
	// Without it each is sent when it is set.
	ToolCallIDs bool
	// CheckImages rejects an empty image and a MIME type that is not
	// type/subtype made of token characters (RFC 9110), which could break
	// the data URL it is put in.
	CheckImages bool
	// Objects requires tool parameters, a schema and tool-call arguments to
	// be JSON objects, and sends arguments as their text. Without it any
	// valid JSON value is taken, empty arguments are sent as "{}", and
	// arguments that are a JSON string are sent as that string's text
	// (which is how a decoded reply keeps arguments that were not valid
	// JSON, so decoded history round-trips). In a decoded reply, Objects
	// requires every tool call to name its function and to carry its
	// arguments as a string holding a JSON object; absent, null or blank
	// arguments decode as {}. Without it a tool call may have an empty name
	// and its arguments are kept as Decode describes.
	Objects bool
	// StrictError makes a decoded top-level "error" that is neither null,
	// an object nor a string a *codec.ProtocolError; without it that body is
	// a *codec.ProviderError with no code and no message.
	StrictError bool
	// VLLMError decodes vLLM's error body, {"object":"error"} with a
	// top-level "code" and "message", as a *codec.ProviderError; without it
	// such a body is read as a reply (and so has no choices).
	VLLMError bool
	// ExclusiveFormats rejects a Schema together with JSONMode; without it
	// the schema wins.
	ExclusiveFormats bool
	// StrictFalse sends "strict":false for a schema that is not strict;
	// without it "strict" is sent only when true.
	StrictFalse bool
}

// Body is the part of a request that Encode makes from a chat.Request.
type Body struct {
	// Messages is never nil, so that no messages encode as [].
	Messages []Message
	// Tools is nil when the request has no tools.
	Tools []Tool
	// ResponseFormat is nil when the request asks for none.
	ResponseFormat *ResponseFormat
}

// Encode encodes the messages, the tools and the response format of req, in
// that order. Reasoning is never sent, and an assistant message that holds
// only reasoning (ReasoningOnly) is left out. Encode returns a plain error for the first part that d does not
// take or that cannot be encoded: images on a message that is not a user
// message, a tool call or tool without a name, JSON that is not what d
// takes, and whatever d's checks reject. Error texts name parts by field and
// index, never by value. req must not be nil.
func (d *Dialect) Encode(req *chat.Request) (Body, error) {
	var b Body
	b.Messages = make([]Message, 0, len(req.Messages))
	for i := range req.Messages {
		if ReasoningOnly(&req.Messages[i]) {
			// Chat completions take no reasoning back: the message would
			// reach the server as an empty assistant turn (R14.1).
			continue
		}
		w, err := d.message(&req.Messages[i])
		if err != nil {
			return Body{}, d.errorf("message " + strconv.Itoa(i) + ": " + err.Error())
		}
		b.Messages = append(b.Messages, w)
	}
	for i, t := range req.Tools {
		if err := d.CheckTool(i, &req.Tools[i]); err != nil {
			return Body{}, err
		}
		b.Tools = append(b.Tools, Tool{Type: "function", Function: Function{
			Name:        t.Name,
			Description: t.Description,
			Parameters:  t.Parameters,
		}})
	}
	var err error
	if b.ResponseFormat, err = d.ResponseFormat(req); err != nil {
		return Body{}, err
	}
	return b, nil
}

// ReasoningOnly reports whether m is an assistant message that holds
// reasoning and nothing else: no content, images, tool calls, tool call ID
// or tool name. Encode leaves such a message out, since chat completions
// take no reasoning back; the broker commits one when a stream broke after
// a closed reasoning block (R17.3).
func ReasoningOnly(m *chat.Message) bool {
	return m.Role == chat.Assistant && m.Reasoning != "" && m.Content == "" && len(m.Images) == 0 &&
		len(m.ToolCalls) == 0 && m.ToolCallID == "" && m.ToolName == ""
}

// Finite returns a plain error naming Temperature or TopP, in that order,
// when it is set and is not a finite number, and nil otherwise.
func (d *Dialect) Finite(o *chat.Options) error {
	for _, f := range []struct {
		name string
		v    *float64
	}{{"Temperature", o.Temperature}, {"TopP", o.TopP}} {
		if f.v != nil && (math.IsNaN(*f.v) || math.IsInf(*f.v, 0)) {
			return d.errorf(f.name + " is not a finite number")
		}
	}
	return nil
}

// Marshal encodes v without HTML escaping, so that text such as "<think>"
// travels as written, and without a trailing newline. encoding/json
// compacts embedded raw JSON (tool parameters, a schema). The error, if
// any, is encoding/json's and may quote values.
func Marshal(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// errorf returns the plain error "recourse: <name>: what".
func (d *Dialect) errorf(what string) error {
	name := d.Name
	if name == "" {
		name = string(d.Provider)
	}
	return errors.New("recourse: " + name + ": " + what)
}

// CheckTool returns the plain error "recourse: <name>: tool <i>: …" when
// t, the i-th tool of a request, has no name or parameters that are not
// JSON that d takes, and nil otherwise. The text never quotes the tool.
func (d *Dialect) CheckTool(i int, t *chat.ToolSpec) error {
	where := "tool " + strconv.Itoa(i)
	if t.Name == "" {
		return d.errorf(where + ": empty name")
	}
	if len(t.Parameters) > 0 && !d.validJSON(t.Parameters) {
		return d.errorf(where + ": parameters are not " + d.jsonKind())
	}
	return nil
}

// message encodes one message. The error text is relative to the message.
// A text content is referenced, not copied: a *string in Content costs no
// allocation (a string would be boxed), and the body is marshalled before
// Encode's caller returns.
func (d *Dialect) message(m *chat.Message) (Message, error) {
	if err := d.CheckRole(m); err != nil {
		return Message{}, err
	}
	w := Message{Role: m.Role, Content: &m.Content}
	if len(m.Images) > 0 {
		parts := make([]Part, 0, len(m.Images)+1)
		if m.Content != "" {
			parts = append(parts, Part{Type: "text", Text: m.Content})
		}
		for j, im := range m.Images {
			url, err := d.DataURL(im)
			if err != nil {
				return Message{}, errors.New("image " + strconv.Itoa(j) + ": " + err.Error())
			}
			parts = append(parts, Part{Type: "image_url", ImageURL: &ImageURL{URL: url}})
		}
		w.Content = parts
	}
	for j, tc := range m.ToolCalls {
		call, err := d.toolCall(tc)
		if err != nil {
			return Message{}, errors.New("tool call " + strconv.Itoa(j) + ": " + err.Error())
		}
		w.ToolCalls = append(w.ToolCalls, call)
	}
	if len(w.ToolCalls) > 0 && m.Content == "" && len(m.Images) == 0 {
		w.Content = nil // a turn that only calls tools has no content
	}
	switch {
	case !d.ToolCallIDs:
		w.ToolCallID = m.ToolCallID
	case m.Role == chat.Tool:
		if m.ToolCallID == "" {
			return Message{}, errors.New("tool message has no tool call ID")
		}
		w.ToolCallID = m.ToolCallID
	}
	return w, nil
}

// CheckRole returns a plain error, relative to the message and never
// quoting it, when m carries what its role cannot: a role other than
// system, user, assistant and tool (with d.KnownRoles), images on a message
// that is not a user message, or tool calls on one that is not an assistant
// message (with d.AssistantToolCalls). It returns nil otherwise.
func (d *Dialect) CheckRole(m *chat.Message) error {
	if d.KnownRoles {
		switch m.Role {
		case chat.System, chat.User, chat.Assistant, chat.Tool:
		default:
			return errors.New("unknown role")
		}
	}
	if len(m.Images) > 0 && m.Role != chat.User {
		return errors.New("images are only sent on user messages")
	}
	if d.AssistantToolCalls && len(m.ToolCalls) > 0 && m.Role != chat.Assistant {
		return errors.New("tool calls are only sent on assistant messages")
	}
	return nil
}

// DataURL returns the base64 data URL of im; an empty MIME type is
// "image/png". With d.CheckImages, empty data or a MIME type that is not
// type/subtype is a plain error relative to the image.
func (d *Dialect) DataURL(im chat.Image) (string, error) {
	mime := im.MIMEType
	if mime == "" {
		mime = "image/png"
	}
	if d.CheckImages {
		if len(im.Data) == 0 {
			return "", errors.New("empty")
		}
		if !validMediaType(mime) {
			return "", errors.New("MIME type is not of the form type/subtype")
		}
	}
	return "data:" + mime + ";base64," + base64.StdEncoding.EncodeToString(im.Data), nil
}

// toolCall encodes one tool call. The error text never quotes the
// arguments.
func (d *Dialect) toolCall(tc chat.ToolCall) (ToolCall, error) {
	args, err := d.CallArguments(&tc)
	if err != nil {
		return ToolCall{}, err
	}
	return ToolCall{ID: tc.ID, Type: "function", Function: FunctionCall{Name: tc.Name, Arguments: args}}, nil
}

// CallArguments checks a tool call of an assistant message, an ID (with
// d.ToolCallIDs) and a name, and returns the text that carries its
// arguments (Arguments). Its errors are plain, relative to the tool call
// and never quote it: "no ID", "no name", "arguments are not …".
func (d *Dialect) CallArguments(tc *chat.ToolCall) (string, error) {
	if d.ToolCallIDs && tc.ID == "" {
		return "", errors.New("no ID")
	}
	if tc.Name == "" {
		return "", errors.New("no name")
	}
	return d.Arguments(tc.Arguments)
}

// Arguments returns the text that carries the arguments of a tool call
// in a request: the arguments as sent, except that without d.Objects empty
// arguments are "{}" and arguments that are a JSON string are that
// string's text (how a decoded reply keeps arguments that were not valid
// JSON, so decoded history round-trips). Arguments that are not JSON that
// d takes are the plain error "arguments are not …", relative to the tool
// call and never quoting them.
func (d *Dialect) Arguments(raw json.RawMessage) (string, error) {
	switch {
	case len(raw) == 0 && !d.Objects:
		return "{}", nil
	case !d.validJSON(raw):
		return "", errors.New("arguments are not " + d.jsonKind())
	}
	var s string
	if !d.Objects && json.Unmarshal(raw, &s) == nil {
		return s, nil
	}
	return string(raw), nil
}

// ResponseFormat encodes Schema or JSONMode of req as response_format; nil
// when neither is set. A schema that is not JSON d takes, or (with
// d.ExclusiveFormats) both set, is a plain error; a schema without a name
// is named "response". The result refers to req's schema bytes.
func (d *Dialect) ResponseFormat(req *chat.Request) (*ResponseFormat, error) {
	if d.ExclusiveFormats && req.Schema != nil && req.Options.JSONMode {
		return nil, d.errorf("Schema and JSONMode are mutually exclusive")
	}
	switch {
	case req.Schema != nil:
		if !d.validJSON(req.Schema.Schema) {
			return nil, d.errorf("schema is not " + d.jsonKind())
		}
		js := &JSONSchema{Name: req.Schema.Name, Schema: req.Schema.Schema}
		if js.Name == "" {
			js.Name = "response"
		}
		if strict := req.Schema.Strict; strict || d.StrictFalse {
			js.Strict = &strict
		}
		return &ResponseFormat{Type: "json_schema", JSONSchema: js}, nil
	case req.Options.JSONMode:
		return &ResponseFormat{Type: "json_object"}, nil
	}
	return nil, nil
}

// validJSON reports whether raw is JSON that d takes: a JSON object when
// d.Objects is set, any valid JSON otherwise.
func (d *Dialect) validJSON(raw []byte) bool {
	if d.Objects {
		return bodyscan.IsObject(raw)
	}
	return json.Valid(raw)
}

// jsonKind names what validJSON takes, for error texts.
func (d *Dialect) jsonKind() string {
	if d.Objects {
		return "a JSON object"
	}
	return "valid JSON"
}

// validMediaType reports whether mt is type/subtype made of token
// characters (RFC 9110).
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

// ErrorFrame returns the SSE event of an OpenAI in-band stream error
// carrying message safe: data: {"error":{"message":…,"type":"recourse_error"}}.
// openai-go (ssestream) and go-openai turn it into an error.
func ErrorFrame(safe string) []byte {
	b := []byte(`data: {"error":{"message":`)
	b = AppendJSONString(b, safe)
	return append(b, `,"type":"recourse_error"}}`+"\n\n"...)
}

// ErrorFrameCode returns ErrorFrame's event with a "code" member as well:
// data: {"error":{"message":…,"type":"recourse_error","code":…}} and a
// blank line.
func ErrorFrameCode(code, safe string) []byte {
	b := []byte(`data: {"error":{"message":`)
	b = AppendJSONString(b, safe)
	b = append(b, `,"type":"recourse_error","code":`...)
	b = AppendJSONString(b, code)
	return append(b, "}}\n\n"...)
}

// ErrorDocument returns OpenAI's error response body carrying the code and
// message safe, {"error":{"message":…,"type":"recourse_error","param":null,"code":…}}
// and a newline: the shape openai-go and go-openai parse into an API error.
func ErrorDocument(code, safe string) []byte {
	b := []byte(`{"error":{"message":`)
	b = AppendJSONString(b, safe)
	b = append(b, `,"type":"recourse_error","param":null,"code":`...)
	b = AppendJSONString(b, code)
	return append(b, "}}\n"...)
}

// AppendJSONString appends s to b as a JSON string, HTML characters
// unescaped.
func AppendJSONString(b []byte, s string) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s)
	return append(b, bytes.TrimSuffix(buf.Bytes(), []byte("\n"))...)
}
