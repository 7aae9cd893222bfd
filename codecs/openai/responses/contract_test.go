package responses_test

import (
	"testing"

	"github.com/recourse-dev/recourse/chat"
	"github.com/recourse-dev/recourse/codec"
	"github.com/recourse-dev/recourse/codec/codectest"
	"github.com/recourse-dev/recourse/codecs/openai/responses"
)

// The codec is a codec.ModelRewriter, so a fallback target of the same
// wire can take its requests; codectest.Codec checks its WithModel (R20.1).
var _ codec.ModelRewriter = responses.New()

func TestCodecContract(t *testing.T) {
	codectest.Codec(t, responses.New(), &chat.Request{Model: "m", Messages: []chat.Message{{Role: chat.User, Content: "hi"}}})
	codectest.Codec(t, responses.New(), &chat.Request{Model: "gpt-4.1", Stream: true, Messages: []chat.Message{{Role: chat.User, Content: "hi"}}})
}
