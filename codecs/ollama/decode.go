package ollama

import (
	"encoding/json"
	"time"
	"unicode/utf8"

	"github.com/recourse-dev/recourse/chat"
	"github.com/recourse-dev/recourse/codec"
	"github.com/recourse-dev/recourse/codecs/internal/bodyscan"
	"github.com/recourse-dev/recourse/codecs/internal/jsonscan"
	"github.com/recourse-dev/recourse/codecs/internal/request"
)

// Describe reads an encoded /api/chat request body. A body without "stream"
// (or with "stream":null) is streaming, because that is Ollama's default; a
// body with "stream":false and a "format" that is the string "json" or an
// object is structured; anything else is ordinary. A body that is not a JSON
// object with a string "model" and a boolean "stream" is a
// *codec.ProtocolError.
func (c *Codec) Describe(body []byte) (codec.RequestInfo, error) {
	var d struct {
		request.Head
		Format json.RawMessage `json:"format"`
	}
	if err := request.Decode(body, &d, "/api/chat"); err != nil {
		return codec.RequestInfo{}, err
	}
	info := codec.RequestInfo{Model: d.Model, Operation: codec.Ordinary}
	switch {
	case d.Stream == nil || *d.Stream:
		info.Operation = codec.Streaming
	case isStructuredFormat(d.Format):
		info.Operation = codec.Structured
	}
	return info, nil
}

// isStructuredFormat reports whether a "format" value asks for JSON output:
// the string "json" or a schema object. An absent or null format, the empty
// string (Ollama's "no format") and other values do not.
func isStructuredFormat(raw json.RawMessage) bool {
	t := jsonscan.TrimSpace(raw)
	if len(t) == 0 {
		return false
	}
	switch t[0] {
	case '{':
		return true
	case '"':
		var s string
		return json.Unmarshal(t, &s) == nil && s == "json"
	}
	return false
}

type wireResponse struct {
	Model           string     `json:"model"`
	Message         *wireReply `json:"message"`
	Done            *bool      `json:"done"`
	DoneReason      string     `json:"done_reason"`
	PromptEvalCount *int       `json:"prompt_eval_count"`
	EvalCount       *int       `json:"eval_count"`
}

// usage returns the token counts of a final reply or stream line, or nil
// when it carries neither count.
func (r *wireResponse) usage() *chat.Usage {
	if r.PromptEvalCount == nil && r.EvalCount == nil {
		return nil
	}
	u := &chat.Usage{}
	if r.PromptEvalCount != nil {
		u.InputTokens = *r.PromptEvalCount
	}
	if r.EvalCount != nil {
		u.OutputTokens = *r.EvalCount
	}
	return u
}

type wireReply struct {
	Role      string              `json:"role"`
	Content   string              `json:"content"`
	Thinking  string              `json:"thinking"`
	ToolCalls []wireReplyToolCall `json:"tool_calls"`
}

type wireReplyToolCall struct {
	ID       string `json:"id"`
	Function *struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	} `json:"function"`
}

// Decode decodes the complete body of a 2xx reply to a "stream":false
// request. Leading and trailing whitespace is accepted.
//
// A top-level "error" that is a string is returned as a *codec.ProviderError
// with that Message and an empty Code (Ollama has no codes); an "error"
// object (as a proxy may send) gives the object's "message". A body that is
// not valid UTF-8 or JSON, nests more than 512 objects and arrays deep
// (deeper than its observer scans), is not an object, has no "message",
// does not say "done":true, or holds a tool call without a function name or with
// arguments that are not a JSON object is a *codec.ProtocolError.
//
// The Completion carries the content, the reasoning ("thinking"), the tool
// calls (Arguments is the argument object as sent; an absent or null one is
// {}), the done_reason as FinishReason, the model, and Usage from
// prompt_eval_count and eval_count when either is present.
func (c *Codec) Decode(body []byte) (*chat.Completion, error) {
	if err := checkObject(body); err != nil {
		return nil, err
	}
	// encoding/json accepts nesting far deeper than the observer scans; a
	// body the observer cannot account for is not accepted either, so that
	// everything Decode returns was also observed (R13.2).
	if !jsonscan.Valid(body) {
		return nil, &codec.ProtocolError{What: "response is nested too deeply"}
	}
	if err := providerError(body); err != nil {
		return nil, err
	}
	var r wireResponse
	if err := json.Unmarshal(body, &r); err != nil {
		return nil, &codec.ProtocolError{What: "response does not match the /api/chat schema", Err: err}
	}
	if r.Message == nil {
		return nil, &codec.ProtocolError{What: "response has no message"}
	}
	if r.Done == nil || !*r.Done {
		return nil, &codec.ProtocolError{What: "response is not done"}
	}
	role := chat.Role(r.Message.Role)
	if role == "" {
		role = chat.Assistant
	}
	out := &chat.Completion{
		Message: chat.Message{
			Role:      role,
			Content:   r.Message.Content,
			Reasoning: r.Message.Thinking,
		},
		FinishReason: r.DoneReason,
		Model:        r.Model,
	}
	for _, tc := range r.Message.ToolCalls {
		if tc.Function == nil || tc.Function.Name == "" {
			return nil, &codec.ProtocolError{What: "tool call has no function name"}
		}
		args := tc.Function.Arguments
		if t := jsonscan.TrimSpace(args); len(t) == 0 || string(t) == "null" {
			args = json.RawMessage("{}")
		} else if t[0] != '{' {
			return nil, &codec.ProtocolError{What: "tool call arguments are not a JSON object"}
		}
		out.Message.ToolCalls = append(out.Message.ToolCalls, chat.ToolCall{ID: tc.ID, Name: tc.Function.Name, Arguments: args})
	}
	out.Usage = r.usage()
	return out, nil
}

// checkObject returns a *codec.ProtocolError unless body is valid UTF-8 and
// one JSON object, optionally surrounded by whitespace.
func checkObject(body []byte) error {
	if !utf8.Valid(body) {
		return &codec.ProtocolError{What: "body is not valid UTF-8"}
	}
	return bodyscan.CheckObject(body)
}

// providerError returns the *codec.ProviderError of a body with a top-level
// "error", nil when there is none (or it is null), or a *codec.ProtocolError
// when "error" is neither a string nor an object. body is a valid object.
func providerError(body []byte) error {
	var probe struct {
		Error json.RawMessage `json:"error"`
	}
	if json.Unmarshal(body, &probe) != nil {
		return nil
	}
	t := jsonscan.TrimSpace(probe.Error)
	if len(t) == 0 || string(t) == "null" {
		return nil
	}
	switch t[0] {
	case '"':
		var msg string
		_ = json.Unmarshal(t, &msg)
		return &codec.ProviderError{Message: msg}
	case '{':
		var obj struct {
			Message json.RawMessage `json:"message"`
		}
		_ = json.Unmarshal(t, &obj)
		var msg string
		_ = json.Unmarshal(obj.Message, &msg)
		return &codec.ProviderError{Message: msg}
	}
	return &codec.ProtocolError{What: "error field is neither a string nor an object"}
}

// DecodeMetrics reads the durations and token counts of an Ollama done
// object (the final NDJSON line of a stream, or a "stream":false reply):
// total_duration, load_duration, prompt_eval_count, prompt_eval_duration,
// eval_count and eval_duration. Durations are nanoseconds on the wire.
// Ollama leaves zero values out, so an absent field is zero. DecodeMetrics
// does not check "done"; it returns a *codec.ProtocolError for a body that is
// not valid UTF-8, not one JSON object, or holds a field that is not an
// integer.
func DecodeMetrics(body []byte) (*codec.Metrics, error) {
	if err := checkObject(body); err != nil {
		return nil, err
	}
	var m struct {
		TotalDuration      int64 `json:"total_duration"`
		LoadDuration       int64 `json:"load_duration"`
		PromptEvalCount    int   `json:"prompt_eval_count"`
		PromptEvalDuration int64 `json:"prompt_eval_duration"`
		EvalCount          int   `json:"eval_count"`
		EvalDuration       int64 `json:"eval_duration"`
	}
	if err := json.Unmarshal(body, &m); err != nil {
		return nil, &codec.ProtocolError{What: "metrics are not integers", Err: err}
	}
	return &codec.Metrics{
		TotalDuration:      time.Duration(m.TotalDuration),
		LoadDuration:       time.Duration(m.LoadDuration),
		PromptEvalCount:    m.PromptEvalCount,
		PromptEvalDuration: time.Duration(m.PromptEvalDuration),
		EvalCount:          m.EvalCount,
		EvalDuration:       time.Duration(m.EvalDuration),
	}, nil
}
