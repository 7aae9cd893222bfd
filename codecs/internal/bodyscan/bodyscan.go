// Package bodyscan counts semantic evidence in an ordinary (non-streaming)
// JSON response body as it arrives, also in a body that is cut before it is
// complete (R4.4, R13.2). The codecs share it.
package bodyscan

import (
	"github.com/recourse-dev/recourse/internal/jsonscan"
	"github.com/recourse-dev/recourse/layer"
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

// Observer is a layer.Observer over one body. Keys are matched after JSON
// unescaping, never by pattern; counts never decrease, do not depend on how
// the body is split, and freeze at the first byte that cannot belong to a
// JSON document (Decode reports that). It is not safe for concurrent use.
type Observer struct{ s *jsonscan.Scanner }

// New returns an Observer for rules compiled once per process.
func New(rules *jsonscan.Compiled) *Observer { return &Observer{s: rules.NewScanner()} }

// Write scans p.
func (o *Observer) Write(p []byte) { _ = o.s.Write(p) }

// Observed returns the evidence seen so far.
func (o *Observer) Observed() layer.Counts {
	c := o.s.Counts()
	return layer.Counts{
		ReasoningBytes:     c.ReasoningBytes,
		ContentBytes:       c.ContentBytes,
		ToolFragments:      c.ToolFragments,
		CompletedToolCalls: c.CompletedToolCalls,
	}
}
