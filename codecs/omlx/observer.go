package omlx

import (
	"github.com/recourse-dev/recourse/codec"
	"github.com/recourse-dev/recourse/codecs/internal/openaiwire"
)

// NewObserver returns an Observer for the reply body of one attempt.
//
// For an ordinary or structured request it scans the chat completion object
// as it arrives, in any split, and counts the decoded bytes of
// choices.message.content, choices.message.reasoning_content and
// choices.message.reasoning, the tool-call objects of
// choices.message.tool_calls and a legacy choices.message.function_call,
// including what a body cut mid-way already holds. The whitespace oMLX sends
// before the JSON counts nothing, and after the first byte that cannot
// continue a JSON document the counts stay frozen.
//
// For a streaming request it returns a codec.StreamDecoder of the SSE
// chat.completion.chunk stream (package codecs/internal/ssechat): ": keep-alive"
// comments and {"model":"keepalive"}-style chunks are keepalives, and an
// error chunk ends the stream even when [DONE] follows.
func (c *Codec) NewObserver(info codec.RequestInfo) codec.Observer {
	return openaiwire.NewObserver(info)
}
