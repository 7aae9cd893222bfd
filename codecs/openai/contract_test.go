package openai_test

import (
	"testing"

	"github.com/recourse-dev/recourse/chat"
	"github.com/recourse-dev/recourse/codec"
	"github.com/recourse-dev/recourse/codec/codectest"
	"github.com/recourse-dev/recourse/codecs/openai"
)

// The codec is a codec.ModelRewriter, so a fallback target of the same
// wire can take its requests; codectest.Codec checks its WithModel (R20.1).
var _ codec.ModelRewriter = openai.New()

func TestCodecContract(t *testing.T) {
	codectest.Codec(t, openai.New(), &chat.Request{Model: "m", Messages: []chat.Message{{Role: chat.User, Content: "hi"}}})
}
