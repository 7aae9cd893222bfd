package anthropic_test

import (
	"testing"

	"github.com/recourse-dev/recourse/chat"
	"github.com/recourse-dev/recourse/codec"
	"github.com/recourse-dev/recourse/codec/codectest"
	"github.com/recourse-dev/recourse/codecs/anthropic"
)

// The codec is a codec.ModelRewriter, so a fallback between Claude models
// can take its requests; codectest.Codec checks its WithModel (R20.1).
var _ codec.ModelRewriter = anthropic.New()

func TestCodecContract(t *testing.T) {
	n := 64
	codectest.Codec(t, anthropic.New(), &chat.Request{Model: "claude-m", Options: chat.Options{MaxTokens: &n}, Messages: []chat.Message{{Role: chat.User, Content: "hi"}}})
	codectest.Codec(t, anthropic.New(anthropic.WithDefaultMaxTokens(8)), &chat.Request{Model: "claude-m", Stream: true, Messages: []chat.Message{{Role: chat.User, Content: "hi"}}})
}
