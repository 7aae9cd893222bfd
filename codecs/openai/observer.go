package openai

import (
	"github.com/recourse-dev/recourse/codec"
	"github.com/recourse-dev/recourse/codecs/internal/openaiwire"
)

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
// For a streaming request the observer is a codec.StreamDecoder of
// chat.completion.chunk events (package codecs/internal/ssechat): it frames
// the SSE stream, decodes each event and counts its evidence. When
// info.DropText is set (a drop-in stream) it does not accumulate the text,
// so the terminal frame's Completion has empty Content and Reasoning and the
// stream holds O(1) memory; when info.TypedFrames is set (a native stream)
// only error frames carry Raw.
//
// NewObserver is safe for concurrent use; each returned Observer is used by
// one attempt and is not.
func (c *Codec) NewObserver(info codec.RequestInfo) codec.Observer {
	return openaiwire.NewObserver(info)
}
