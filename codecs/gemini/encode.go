package gemini

import (
	"bytes"
	"encoding/json"
	"math"
	"net/http"
	"strconv"
	"strings"

	"github.com/recourse-dev/recourse/chat"
	"github.com/recourse-dev/recourse/codec"
	"github.com/recourse-dev/recourse/codecs/internal/jsonscan"
	"github.com/recourse-dev/recourse/codecs/internal/request"
)

// The wire structs fix the field order of an encoded request
// (GenerateContentRequest without its model, which the path names).

type wireRequest struct {
	Contents          []wireContent `json:"contents"`
	SystemInstruction *wireContent  `json:"systemInstruction,omitempty"`
	Tools             []wireTool    `json:"tools,omitempty"`
	GenerationConfig  *wireConfig   `json:"generationConfig,omitempty"`
}

type wireContent struct {
	Role  string     `json:"role,omitempty"`
	Parts []wirePart `json:"parts"`
}

type wirePart struct {
	Text             *string           `json:"text,omitempty"`
	InlineData       *wireBlob         `json:"inlineData,omitempty"`
	FunctionCall     *wireCall         `json:"functionCall,omitempty"`
	FunctionResponse *wireFuncResponse `json:"functionResponse,omitempty"`
}

type wireBlob struct {
	MIMEType string `json:"mimeType"`
	Data     []byte `json:"data"`
}

type wireCall struct {
	ID   string          `json:"id,omitempty"`
	Name string          `json:"name"`
	Args json.RawMessage `json:"args"`
}

type wireFuncResponse struct {
	ID       string          `json:"id,omitempty"`
	Name     string          `json:"name"`
	Response json.RawMessage `json:"response"`
}

type wireTool struct {
	FunctionDeclarations []wireFunction `json:"functionDeclarations"`
}

type wireFunction struct {
	Name                 string          `json:"name"`
	Description          string          `json:"description,omitempty"`
	ParametersJSONSchema json.RawMessage `json:"parametersJsonSchema,omitempty"`
}

type wireConfig struct {
	Temperature        *float64        `json:"temperature,omitempty"`
	TopP               *float64        `json:"topP,omitempty"`
	TopK               *int            `json:"topK,omitempty"`
	MaxOutputTokens    *int            `json:"maxOutputTokens,omitempty"`
	Seed               *int            `json:"seed,omitempty"`
	StopSequences      []string        `json:"stopSequences,omitempty"`
	ResponseMIMEType   string          `json:"responseMimeType,omitempty"`
	ResponseJSONSchema json.RawMessage `json:"responseJsonSchema,omitempty"`
	ThinkingConfig     *wireThinking   `json:"thinkingConfig,omitempty"`
}

type wireThinking struct {
	IncludeThoughts bool `json:"includeThoughts,omitempty"`
	ThinkingBudget  *int `json:"thinkingBudget,omitempty"`
}

// errs makes the encoding errors, "recourse: gemini: …".
var errs = request.Errors{Provider: codec.Gemini}

// synthIDPrefix starts the tool-call IDs Decode makes up for function calls
// the API sent without an ID; Encode sends no such ID back.
const synthIDPrefix = "gemini_call_"

// jsonMIME is the responseMimeType of JSON output.
const jsonMIME = "application/json"

// Encode encodes req as the body of a generateContent request; the model
// and the streaming choice go in the path (RoutePath), not the body. System
// messages become the systemInstruction, assistant turns role "model"
// (their reasoning is not sent), tool results functionResponse parts of a
// "user" turn (consecutive results in one turn), images inlineData parts,
// tools functionDeclarations with parametersJsonSchema, a Schema
// responseJsonSchema with responseMimeType application/json (JSONMode the
// MIME type alone), Think thinkingConfig (true: includeThoughts; false: a
// thinking budget of 0), MaxTokens maxOutputTokens and Stop stopSequences.
// A tool result's content is sent as its response when it is a JSON object
// and as {"output": content} otherwise.
//
// Encode returns an *codec.UnsupportedError for Options.ReasoningEffort,
// ContextLength and KeepAlive, and a plain error for a nil request, one
// without a model, and values the API cannot take (tool-call arguments or
// schemas that are not JSON objects, an empty image, a tool or tool call
// without a name, a tool result whose name cannot be found, a non-finite
// float). Error messages name fields and indices, never values. The result
// shares no memory with req; the same request encodes to the same bytes.
func (c *Codec) Encode(req *chat.Request) ([]byte, error) {
	if err := errs.Check(req); err != nil {
		return nil, err
	}
	o := req.Options
	switch {
	case o.ReasoningEffort != "":
		return nil, errs.Unsupported("ReasoningEffort")
	case o.ContextLength != nil:
		return nil, errs.Unsupported("ContextLength")
	case o.KeepAlive != "":
		return nil, errs.Unsupported("KeepAlive")
	}
	w := wireRequest{Contents: make([]wireContent, 0, len(req.Messages))}
	names := map[string]string{} // tool call ID → name
	for i, m := range req.Messages {
		if err := encodeMessage(&w, names, i, m); err != nil {
			return nil, err
		}
	}
	cfg, err := encodeConfig(req)
	if err != nil {
		return nil, err
	}
	w.GenerationConfig = cfg
	if len(req.Tools) > 0 {
		t := wireTool{FunctionDeclarations: make([]wireFunction, 0, len(req.Tools))}
		for i, s := range req.Tools {
			if s.Name == "" {
				return nil, errs.Plain("tool " + strconv.Itoa(i) + " has no name")
			}
			if len(s.Parameters) > 0 && !request.IsJSONObject(s.Parameters) {
				return nil, errs.Plain("tool " + strconv.Itoa(i) + " parameters are not a JSON object")
			}
			t.FunctionDeclarations = append(t.FunctionDeclarations, wireFunction{Name: s.Name, Description: s.Description, ParametersJSONSchema: s.Parameters})
		}
		w.Tools = []wireTool{t}
	}
	return errs.Marshal(w)
}

func encodeMessage(w *wireRequest, names map[string]string, i int, m chat.Message) error {
	at := "message " + strconv.Itoa(i)
	switch m.Role {
	case chat.System:
		if w.SystemInstruction == nil {
			w.SystemInstruction = &wireContent{}
		}
		w.SystemInstruction.Parts = append(w.SystemInstruction.Parts, textPart(m.Content))
		return nil
	case chat.Tool:
		name := m.ToolName
		if name == "" {
			name = names[m.ToolCallID]
		}
		if name == "" {
			return errs.Plain(at + " is a tool result without a tool name")
		}
		resp := json.RawMessage(m.Content)
		if !request.IsJSONObject(resp) {
			b, _ := json.Marshal(struct {
				Output string `json:"output"`
			}{m.Content})
			resp = b
		}
		p := wirePart{FunctionResponse: &wireFuncResponse{ID: sentID(m.ToolCallID), Name: name, Response: resp}}
		if n := len(w.Contents); n > 0 && w.Contents[n-1].Role == "user" && isResponses(w.Contents[n-1].Parts) {
			w.Contents[n-1].Parts = append(w.Contents[n-1].Parts, p)
			return nil
		}
		w.Contents = append(w.Contents, wireContent{Role: "user", Parts: []wirePart{p}})
		return nil
	case chat.User, chat.Assistant:
	default:
		return errs.Plain(at + " has an unknown role")
	}
	wc := wireContent{Role: "user"}
	if m.Role == chat.Assistant {
		wc.Role = "model"
	}
	if m.Content != "" {
		wc.Parts = append(wc.Parts, textPart(m.Content))
	}
	for j, im := range m.Images {
		if len(im.Data) == 0 {
			return errs.Plain(at + " image " + strconv.Itoa(j) + " is empty")
		}
		mt := im.MIMEType
		if mt == "" {
			mt = http.DetectContentType(im.Data)
		}
		wc.Parts = append(wc.Parts, wirePart{InlineData: &wireBlob{MIMEType: mt, Data: bytes.Clone(im.Data)}})
	}
	for j, tc := range m.ToolCalls {
		call := at + " tool call " + strconv.Itoa(j)
		if tc.Name == "" {
			return errs.Plain(call + " has no name")
		}
		args := tc.Arguments
		if len(jsonscan.TrimSpace(args)) == 0 {
			args = json.RawMessage("{}")
		}
		if !request.IsJSONObject(args) {
			return errs.Plain(call + " arguments are not a JSON object")
		}
		if tc.ID != "" {
			names[tc.ID] = tc.Name
		}
		wc.Parts = append(wc.Parts, wirePart{FunctionCall: &wireCall{ID: sentID(tc.ID), Name: tc.Name, Args: args}})
	}
	if len(wc.Parts) == 0 {
		wc.Parts = append(wc.Parts, textPart(""))
	}
	w.Contents = append(w.Contents, wc)
	return nil
}

// sentID is the ID a function call or response carries on the wire: none
// for an ID Decode made up.
func sentID(id string) string {
	if strings.HasPrefix(id, synthIDPrefix) {
		return ""
	}
	return id
}

// isResponses reports whether parts are all function responses.
func isResponses(parts []wirePart) bool {
	for _, p := range parts {
		if p.FunctionResponse == nil {
			return false
		}
	}
	return len(parts) > 0
}

func textPart(s string) wirePart { return wirePart{Text: &s} }

func encodeConfig(req *chat.Request) (*wireConfig, error) {
	o := req.Options
	for _, f := range []struct {
		name string
		v    *float64
	}{{"Temperature", o.Temperature}, {"TopP", o.TopP}} {
		if f.v != nil && (math.IsNaN(*f.v) || math.IsInf(*f.v, 0)) {
			return nil, errs.Plain("Options." + f.name + " is not finite")
		}
	}
	cfg := wireConfig{
		Temperature: o.Temperature, TopP: o.TopP, TopK: o.TopK,
		MaxOutputTokens: o.MaxTokens, Seed: o.Seed, StopSequences: o.Stop,
	}
	switch {
	case req.Schema != nil:
		if !request.IsJSONObject(req.Schema.Schema) {
			return nil, errs.Plain("Schema.Schema is not a JSON object")
		}
		cfg.ResponseMIMEType, cfg.ResponseJSONSchema = jsonMIME, req.Schema.Schema
	case o.JSONMode:
		cfg.ResponseMIMEType = jsonMIME
	}
	if o.Think != nil {
		if *o.Think {
			cfg.ThinkingConfig = &wireThinking{IncludeThoughts: true}
		} else {
			zero := 0
			cfg.ThinkingConfig = &wireThinking{ThinkingBudget: &zero}
		}
	}
	if cfg.Temperature == nil && cfg.TopP == nil && cfg.TopK == nil && cfg.MaxOutputTokens == nil && cfg.Seed == nil &&
		len(cfg.StopSequences) == 0 && cfg.ResponseMIMEType == "" && cfg.ThinkingConfig == nil {
		return nil, nil
	}
	return &cfg, nil
}

// describedRequest is what Describe reads of a request body.
type describedRequest struct {
	GenerationConfig *struct {
		ResponseMIMEType   string          `json:"responseMimeType"`
		ResponseSchema     json.RawMessage `json:"responseSchema"`
		ResponseJSONSchema json.RawMessage `json:"responseJsonSchema"`
	} `json:"generationConfig"`
}

// Describe reads an encoded request body: an ordinary request, or a
// structured one when its generationConfig asks for JSON output (a
// responseMimeType of application/json, a responseSchema or a
// responseJsonSchema). The body names no model and no streaming choice:
// DescribeURL reads those from the path, and every stage of recourse calls
// it through codec.DescribeRequest. A body that is not one JSON object is a
// *codec.ProtocolError.
func (c *Codec) Describe(body []byte) (codec.RequestInfo, error) {
	var r describedRequest
	if err := request.Decode(body, &r, "Gemini GenerateContentRequest"); err != nil {
		return codec.RequestInfo{Operation: codec.Ordinary}, err
	}
	info := codec.RequestInfo{Operation: codec.Ordinary}
	if g := r.GenerationConfig; g != nil && (strings.HasPrefix(g.ResponseMIMEType, jsonMIME) || present(g.ResponseSchema) || present(g.ResponseJSONSchema)) {
		info.Operation = codec.Structured
	}
	return info, nil
}

// present reports whether a raw member was sent with a value other than null.
func present(v json.RawMessage) bool { return len(v) > 0 && string(v) != "null" }
