package gemini

import (
	"github.com/recourse-dev/recourse/codec"
	"github.com/recourse-dev/recourse/codecs/internal/bodyscan"
	"github.com/recourse-dev/recourse/codecs/internal/jsonscan"
)

// rules selects the semantic output of a GenerateContentResponse (or of the
// array of them a stream without alt=sse sends: array indices are not part
// of a path): the text of every part, thoughts included, and every
// functionCall part.
var rules = jsonscan.Compile(&jsonscan.Rules{
	Content:     [][]string{{"candidates", "content", "parts", "text"}},
	ToolObjects: [][]string{{"candidates", "content", "parts", "functionCall"}},
})

// NewObserver returns an Observer for the answer of one attempt.
//
// For an ordinary or structured request it scans the JSON answer as it
// arrives, in any split, and counts the decoded bytes of every part's text
// (a thought's too) and the functionCall parts, including what a body cut
// mid-way already holds.
//
// For a streaming request it returns a codec.StreamDecoder of the SSE
// stream (see the package documentation for its verdicts). With
// info.DropText the terminal frame's Completion has empty Content and
// Reasoning; with info.TypedFrames only error frames carry Raw.
func (c *Codec) NewObserver(info codec.RequestInfo) codec.Observer {
	if info.Operation == codec.Streaming {
		return newStreamDecoder(info)
	}
	return bodyscan.New(rules)
}
