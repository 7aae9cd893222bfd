package responses

import (
	"github.com/recourse-dev/recourse/codec"
	"github.com/recourse-dev/recourse/codecs/internal/bodyscan"
	"github.com/recourse-dev/recourse/codecs/internal/jsonscan"
)

// unaryRules are the evidence paths of a response object: the text and
// refusal of message content parts, and the text of reasoning summaries.
var unaryRules = jsonscan.Compile(&jsonscan.Rules{
	Content: [][]string{
		{"output", "content", "text"},
		{"output", "content", "refusal"},
	},
	Reasoning: [][]string{{"output", "summary", "text"}},
})

// NewObserver returns an Observer for the response body of one attempt of
// the request described by info.
//
// For a streaming request it is a [*StreamDecoder] (see
// [NewStreamDecoder]). For an ordinary or structured request it scans the
// response object as it arrives, also when it is cut off, and counts the
// decoded UTF-8 bytes of output[].content[].text and .refusal as content
// and of output[].summary[].text as reasoning. Keys are matched after JSON
// unescaping, never by pattern; counts never decrease, do not depend on how
// the body is split, and freeze at the first byte that cannot belong to a
// JSON document. Paths cannot see an item's type, so the reasoning_text
// content parts of a reasoning item count as content, and function_call
// items count nothing: a cut ordinary body is never resent whatever it
// holds (R4.6), so these counts only describe it.
//
// NewObserver is safe for concurrent use; each returned Observer is used by
// one attempt and is not.
func (c *Codec) NewObserver(info codec.RequestInfo) codec.Observer {
	if info.Operation == codec.Streaming {
		return NewStreamDecoder(info)
	}
	return bodyscan.New(unaryRules)
}
