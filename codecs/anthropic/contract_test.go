package anthropic_test

import (
	"testing"

	"github.com/recourse-dev/recourse/chat"
	"github.com/recourse-dev/recourse/codecs/anthropic"
	"github.com/recourse-dev/recourse/layer"
	"github.com/recourse-dev/recourse/layer/layertest"
)

// The codec is a layer.ModelRewriter, so a fallback between Claude models
// can take its requests; layertest.Codec checks its WithModel (R20.1).
var _ layer.ModelRewriter = anthropic.New()

func TestCodecContract(t *testing.T) {
	n := 64
	layertest.Codec(t, anthropic.New(), &chat.Request{Model: "claude-m", Options: chat.Options{MaxTokens: &n}, Messages: []chat.Message{{Role: chat.User, Content: "hi"}}})
	layertest.Codec(t, anthropic.New(anthropic.WithDefaultMaxTokens(8)), &chat.Request{Model: "claude-m", Stream: true, Messages: []chat.Message{{Role: chat.User, Content: "hi"}}})
}
