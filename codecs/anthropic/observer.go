package anthropic

import (
	"github.com/recourse-dev/recourse/codec"
	"github.com/recourse-dev/recourse/codecs/internal/bodyscan"
	"github.com/recourse-dev/recourse/codecs/internal/jsonscan"
)

// unaryRules are the evidence paths of a message: the text of text blocks
// and the thinking of thinking blocks.
var unaryRules = jsonscan.Compile(&jsonscan.Rules{
	Content:   [][]string{{"content", "text"}},
	Reasoning: [][]string{{"content", "thinking"}},
})

// NewObserver returns an Observer for the response body of one attempt of
// the request described by info: a [*StreamDecoder] for a streaming
// request, and otherwise a scanner of the message as it arrives, also
// when it is cut off, that counts the decoded UTF-8 bytes of content[].text
// as content and of content[].thinking as reasoning. Keys are matched
// after JSON unescaping; tool_use blocks count nothing (a cut ordinary
// body is never resent whatever it holds, R4.6). NewObserver is safe for
// concurrent use; each returned Observer is used by one attempt and is not.
func (c *Codec) NewObserver(info codec.RequestInfo) codec.Observer {
	if info.Operation == codec.Streaming {
		return NewStreamDecoder(info)
	}
	return bodyscan.New(unaryRules)
}
