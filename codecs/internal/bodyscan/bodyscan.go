// Package bodyscan holds what the codecs share about ordinary (non-streaming)
// JSON response bodies: counting semantic evidence as the body arrives, also
// in a body that is cut before it is complete (R4.4, R13.2), and checking
// that a body is one JSON object.
package bodyscan

import (
	"encoding/json"

	"github.com/recourse-dev/recourse/codec"
	"github.com/recourse-dev/recourse/codecs/internal/jsonscan"
)

// OpenAI are the evidence paths of an OpenAI-shaped chat completion object
// (OpenAI, oMLX): message content, reasoning_content and reasoning, the
// tool_calls elements and a legacy function_call object.
var OpenAI = jsonscan.Compile(&jsonscan.Rules{
	Content: [][]string{{"choices", "message", "content"}},
	Reasoning: [][]string{
		{"choices", "message", "reasoning_content"},
		{"choices", "message", "reasoning"},
	},
	ToolCalls:   [][]string{{"choices", "message", "tool_calls"}},
	ToolObjects: [][]string{{"choices", "message", "function_call"}},
})

// Observer is a codec.Observer over one body. Keys are matched after JSON
// unescaping, never by pattern; counts never decrease, do not depend on how
// the body is split, and freeze at the first byte that cannot belong to a
// JSON document (Decode reports that). It is not safe for concurrent use.
type Observer struct{ s jsonscan.Scanner }

// New returns an Observer for rules compiled once per process.
func New(rules *jsonscan.Compiled) *Observer {
	o := new(Observer)
	rules.Init(&o.s)
	return o
}

// Write scans p.
func (o *Observer) Write(p []byte) { _ = o.s.Write(p) }

// Observed returns the evidence seen so far.
func (o *Observer) Observed() codec.Counts {
	c := o.s.Counts()
	return codec.Counts{
		ReasoningBytes:     c.ReasoningBytes,
		ContentBytes:       c.ContentBytes,
		ToolFragments:      c.ToolFragments,
		CompletedToolCalls: c.CompletedToolCalls,
	}
}

// IsObject reports whether raw is valid JSON whose value is an object,
// optionally surrounded by whitespace.
func IsObject(raw []byte) bool {
	t := jsonscan.TrimSpace(raw)
	return len(t) > 0 && t[0] == '{' && json.Valid(t)
}

// CheckObject returns a *codec.ProtocolError unless body is one JSON object,
// optionally surrounded by whitespace. It does not check UTF-8: encoding/json
// replaces invalid UTF-8 in strings, as the providers' servers do.
func CheckObject(body []byte) error {
	t := jsonscan.TrimSpace(body)
	if len(t) == 0 {
		return &codec.ProtocolError{What: "body is empty"}
	}
	if !json.Valid(t) {
		var v any
		return &codec.ProtocolError{What: "body is not valid JSON", Err: json.Unmarshal(t, &v)}
	}
	if t[0] != '{' {
		return &codec.ProtocolError{What: "body is not a JSON object"}
	}
	return nil
}
