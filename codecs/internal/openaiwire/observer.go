package openaiwire

import (
	"github.com/recourse-dev/recourse/codec"
	"github.com/recourse-dev/recourse/codecs/internal/bodyscan"
	"github.com/recourse-dev/recourse/codecs/internal/ssechat"
)

// NewObserver returns the Observer of one attempt of an OpenAI-shaped chat
// completions request described by info: for a streaming request a
// codec.StreamDecoder of the SSE chat.completion.chunk stream (package
// codecs/internal/ssechat, configured by info.DropText and info.TypedFrames),
// and otherwise a scanner of the chat completion
// object (bodyscan.OpenAI).
func NewObserver(info codec.RequestInfo) codec.Observer {
	if info.Operation == codec.Streaming {
		return ssechat.NewFor(info)
	}
	return bodyscan.New(bodyscan.OpenAI)
}
