package ollama

import (
	"github.com/recourse-dev/recourse/internal/jsonscan"
	"github.com/recourse-dev/recourse/layer"
)

// rules selects the semantic output of an /api/chat reply object.
var rules = jsonscan.Rules{
	Content:   [][]string{{"message", "content"}},
	Reasoning: [][]string{{"message", "thinking"}},
	ToolCalls: [][]string{{"message", "tool_calls"}},
}

// NewObserver returns an Observer for the reply body of one attempt.
//
// For an ordinary or structured request it scans the single JSON reply
// object as it arrives, in any split, and counts the decoded bytes of
// message.content and message.thinking and the tool-call objects of
// message.tool_calls, including what a body cut mid-way already holds.
// Whitespace counts nothing, and after the first byte that cannot continue a
// JSON object the counts stay frozen.
//
// For a streaming request it returns a layer.StreamDecoder of the NDJSON
// stream (see streamDecoder): blank lines are keepalives, each valid line is
// a frame whose content, thinking and whole tool calls are counted.
func (c *Codec) NewObserver(info layer.RequestInfo) layer.Observer {
	if info.Operation == layer.Streaming {
		return newStreamDecoder()
	}
	return &observer{s: jsonscan.NewScanner(&rules)}
}

// observer scans one ordinary reply body.
type observer struct {
	s *jsonscan.Scanner
}

// Write scans p. A syntax error freezes the counts; reporting it is left to
// Decode.
func (o *observer) Write(p []byte) { _ = o.s.Write(p) }

// Observed returns the evidence seen so far.
func (o *observer) Observed() layer.Counts { return counts(o.s.Counts()) }

func counts(c jsonscan.Counts) layer.Counts {
	return layer.Counts{
		ReasoningBytes:     c.ReasoningBytes,
		ContentBytes:       c.ContentBytes,
		ToolFragments:      c.ToolFragments,
		CompletedToolCalls: c.CompletedToolCalls,
	}
}
