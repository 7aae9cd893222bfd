package ollama

import (
	"github.com/recourse-dev/recourse/codec"
	"github.com/recourse-dev/recourse/codecs/internal/bodyscan"
	"github.com/recourse-dev/recourse/codecs/internal/jsonscan"
)

// rules selects the semantic output of an /api/chat reply object.
var rules = jsonscan.Compile(&jsonscan.Rules{
	Content:   [][]string{{"message", "content"}},
	Reasoning: [][]string{{"message", "thinking"}},
	ToolCalls: [][]string{{"message", "tool_calls"}},
})

// NewObserver returns an Observer for the reply body of one attempt.
//
// For an ordinary or structured request it scans the single JSON reply
// object as it arrives, in any split, and counts the decoded bytes of
// message.content and message.thinking and the tool-call objects of
// message.tool_calls, including what a body cut mid-way already holds.
// Whitespace counts nothing, and after the first byte that cannot continue a
// JSON object the counts stay frozen.
//
// For a streaming request it returns a codec.StreamDecoder of the NDJSON
// stream (see streamDecoder): blank lines are keepalives, each valid line is
// a frame whose content, thinking and whole tool calls are counted. With
// info.DropText (a drop-in stream) it does not accumulate the text: the
// terminal frame's Completion has empty Content and Reasoning; with
// info.TypedFrames (a native stream) only error frames carry Raw.
func (c *Codec) NewObserver(info codec.RequestInfo) codec.Observer {
	if info.Operation == codec.Streaming {
		return newStreamDecoder(info)
	}
	return bodyscan.New(rules)
}
