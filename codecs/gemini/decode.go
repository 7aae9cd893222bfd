package gemini

import (
	"encoding/json"
	"strconv"
	"unicode/utf8"

	"github.com/recourse-dev/recourse/chat"
	"github.com/recourse-dev/recourse/codec"
	"github.com/recourse-dev/recourse/codecs/internal/jsonscan"
)

// wireResponse is a GenerateContentResponse, or an error object in its place.
type wireResponse struct {
	Candidates     []wireCandidate `json:"candidates"`
	PromptFeedback *struct {
		BlockReason string `json:"blockReason"`
	} `json:"promptFeedback"`
	UsageMetadata *wireUsage `json:"usageMetadata"`
	ModelVersion  string     `json:"modelVersion"`
	ResponseID    string     `json:"responseId"`
	Error         *status    `json:"error"`
}

type wireCandidate struct {
	Content *struct {
		Parts []wireReplyPart `json:"parts"`
	} `json:"content"`
	FinishReason      string `json:"finishReason"`
	ContinuationToken string `json:"continuationToken"`
}

type wireReplyPart struct {
	Text         *string `json:"text"`
	Thought      bool    `json:"thought"`
	FunctionCall *struct {
		ID   string          `json:"id"`
		Name string          `json:"name"`
		Args json.RawMessage `json:"args"`
	} `json:"functionCall"`
}

type wireUsage struct {
	PromptTokenCount     int `json:"promptTokenCount"`
	CandidatesTokenCount int `json:"candidatesTokenCount"`
	ThoughtsTokenCount   int `json:"thoughtsTokenCount"`
}

// The finish reasons the codec names in the neutral vocabulary; every
// other one is kept as sent.
const (
	finishStop         = "STOP"
	finishMaxTokens    = "MAX_TOKENS"
	finishContinuation = "CONTINUATION"
)

// neutralFinish returns the finish reason a Completion carries: "stop" for
// STOP, "length" for MAX_TOKENS (the names the rest of recourse reads), and
// any other reason as sent (SAFETY, RECITATION, CONTINUATION, …).
func neutralFinish(r string) string {
	switch r {
	case finishStop:
		return "stop"
	case finishMaxTokens:
		return "length"
	}
	return r
}

// statusError is the *codec.ProviderError of a google.rpc.Status: its
// status (or ErrorInfo reason) as Code and its HTTP status as Status when
// that is an HTTP error status.
func statusError(st *status) *codec.ProviderError {
	pe := &codec.ProviderError{Code: st.Status, Message: st.Message}
	if pe.Code == "" {
		pe.Code = st.reason()
	}
	if st.Code >= 400 && st.Code <= 599 {
		pe.Status = st.Code
	}
	return pe
}

// Decode decodes the complete body of a 2xx generateContent answer: one
// GenerateContentResponse, or the JSON array of them that
// :streamGenerateContent sends without alt=sse, whose parts are joined in
// order (the last finish reason, model version and usage win). The first
// candidate is the answer: its text parts are the content, its thought
// parts the reasoning, its functionCall parts the tool calls (an ID the
// API did not send is made up, "gemini_call_<n>", and never sent back by
// Encode). The finish reason is "stop" for STOP, "length" for MAX_TOKENS,
// and as sent otherwise; a prompt blocked before any candidate has its
// blockReason as finish reason. Usage counts candidates and thoughts as
// output tokens.
//
// An "error" object is a *codec.ProviderError (its status as Code). A body
// that is not valid UTF-8 or JSON, nests deeper than the observer scans, is
// not an object (or an array of objects), or has neither a candidate nor a
// blocked prompt, and a function call without a name or with arguments that
// are not an object, is a *codec.ProtocolError.
func (c *Codec) Decode(body []byte) (*chat.Completion, error) {
	rs, err := parseResponses(body)
	if err != nil {
		return nil, err
	}
	out := &chat.Completion{Message: chat.Message{Role: chat.Assistant}}
	var content, reasoning []byte
	answered := false
	for i := range rs {
		r := &rs[i]
		if r.Error != nil {
			return nil, statusError(r.Error)
		}
		if r.ModelVersion != "" {
			out.Model = r.ModelVersion
		}
		if r.ResponseID != "" {
			out.ID = r.ResponseID
		}
		if u := r.UsageMetadata; u != nil {
			out.Usage = &chat.Usage{InputTokens: u.PromptTokenCount, OutputTokens: u.CandidatesTokenCount + u.ThoughtsTokenCount}
		}
		if len(r.Candidates) == 0 {
			if pf := r.PromptFeedback; pf != nil && pf.BlockReason != "" {
				out.FinishReason, answered = pf.BlockReason, true
			}
			continue
		}
		answered = true
		cand := &r.Candidates[0]
		if cand.FinishReason != "" {
			out.FinishReason = neutralFinish(cand.FinishReason)
		}
		if cand.Content == nil {
			continue
		}
		for _, p := range cand.Content.Parts {
			switch {
			case p.FunctionCall != nil:
				tc, err := toolCall(p.FunctionCall.ID, p.FunctionCall.Name, p.FunctionCall.Args, len(out.Message.ToolCalls))
				if err != nil {
					return nil, err
				}
				out.Message.ToolCalls = append(out.Message.ToolCalls, tc)
			case p.Text != nil && p.Thought:
				reasoning = append(reasoning, *p.Text...)
			case p.Text != nil:
				content = append(content, *p.Text...)
			}
		}
	}
	if !answered {
		return nil, &codec.ProtocolError{What: "response has no candidate"}
	}
	out.Message.Content, out.Message.Reasoning = string(content), string(reasoning)
	return out, nil
}

// Check returns exactly the error Decode returns for body, without building
// the completion (codec.Checker).
func (c *Codec) Check(body []byte) error {
	_, err := c.Decode(body)
	return err
}

// toolCall returns the chat tool call of a functionCall part, the n-th of
// its answer.
func toolCall(id, name string, args json.RawMessage, n int) (chat.ToolCall, error) {
	if name == "" {
		return chat.ToolCall{}, &codec.ProtocolError{What: "function call has no name"}
	}
	if t := jsonscan.TrimSpace(args); len(t) == 0 || string(t) == "null" {
		args = json.RawMessage("{}")
	} else if t[0] != '{' {
		return chat.ToolCall{}, &codec.ProtocolError{What: "function call arguments are not a JSON object"}
	}
	if id == "" {
		id = synthIDPrefix + strconv.Itoa(n)
	}
	return chat.ToolCall{ID: id, Name: name, Arguments: args}, nil
}

// parseResponses reads a unary body: one response object or an array of
// them.
func parseResponses(body []byte) ([]wireResponse, error) {
	if !utf8.Valid(body) {
		return nil, &codec.ProtocolError{What: "body is not valid UTF-8"}
	}
	t := jsonscan.TrimSpace(body)
	if len(t) == 0 {
		return nil, &codec.ProtocolError{What: "body is empty"}
	}
	if !json.Valid(t) {
		var v any
		return nil, &codec.ProtocolError{What: "body is not valid JSON", Err: json.Unmarshal(t, &v)}
	}
	// encoding/json accepts nesting far deeper than the observer scans; a
	// body the observer cannot account for is not accepted either, so that
	// everything Decode returns was also observed (R13.2).
	if !jsonscan.Valid(t) {
		return nil, &codec.ProtocolError{What: "response is nested too deeply"}
	}
	switch t[0] {
	case '{':
		var r wireResponse
		if err := json.Unmarshal(t, &r); err != nil {
			return nil, &codec.ProtocolError{What: "response does not match the GenerateContentResponse schema", Err: err}
		}
		return []wireResponse{r}, nil
	case '[':
		var rs []wireResponse
		if err := json.Unmarshal(t, &rs); err != nil {
			return nil, &codec.ProtocolError{What: "response does not match the GenerateContentResponse schema", Err: err}
		}
		return rs, nil
	}
	return nil, &codec.ProtocolError{What: "body is not a JSON object"}
}
