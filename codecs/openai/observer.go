package openai

import (
	"github.com/recourse-dev/recourse/codecs/internal/ssechat"
	"github.com/recourse-dev/recourse/internal/jsonscan"
	"github.com/recourse-dev/recourse/layer"
)

// ordinaryRules are the paths of semantic evidence in a non-streaming
// response body (R13.2, R14.2).
var ordinaryRules = jsonscan.Rules{
	Content: [][]string{{"choices", "message", "content"}},
	Reasoning: [][]string{
		{"choices", "message", "reasoning_content"},
		{"choices", "message", "reasoning"},
	},
	ToolCalls:   [][]string{{"choices", "message", "tool_calls"}},
	ToolObjects: [][]string{{"choices", "message", "function_call"}},
}

// NewObserver returns an Observer for the response body of one attempt of
// the request described by info.
//
// For an ordinary or structured request the observer scans the body as it
// arrives, also when it is cut off, and counts the decoded UTF-8 bytes of
// choices[].message.content, of reasoning_content and reasoning, each
// started and completed tool_calls element, and a legacy function_call
// object. Keys are matched after JSON unescaping, never by pattern. Counts
// never decrease, do not depend on how the body is split across writes, and
// freeze at the first byte that cannot belong to a JSON document.
//
// For a streaming request the observer is a layer.StreamDecoder of
// chat.completion.chunk events (package codecs/internal/ssechat): it frames
// the SSE stream, decodes each event and counts its evidence.
//
// NewObserver is safe for concurrent use; each returned Observer is used by
// one attempt and is not.
func (c *Codec) NewObserver(info layer.RequestInfo) layer.Observer {
	if info.Operation == layer.Streaming {
		return ssechat.New()
	}
	return &bodyObserver{s: jsonscan.NewScanner(&ordinaryRules)}
}

// bodyObserver counts evidence in an ordinary JSON response body.
type bodyObserver struct {
	s *jsonscan.Scanner
}

// Write feeds p to the scanner. A syntax error freezes the counts; it is
// reported by Decode, not here.
func (o *bodyObserver) Write(p []byte) { _ = o.s.Write(p) }

func (o *bodyObserver) Observed() layer.Counts {
	c := o.s.Counts()
	return layer.Counts{
		ReasoningBytes:     c.ReasoningBytes,
		ContentBytes:       c.ContentBytes,
		ToolFragments:      c.ToolFragments,
		CompletedToolCalls: c.CompletedToolCalls,
	}
}
