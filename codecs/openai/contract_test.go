package openai_test

import (
	"testing"

	"github.com/recourse-dev/recourse/chat"
	"github.com/recourse-dev/recourse/codecs/openai"
	"github.com/recourse-dev/recourse/layer"
	"github.com/recourse-dev/recourse/layer/layertest"
)

// The codec is a layer.ModelRewriter, so a fallback target of the same
// wire can take its requests; layertest.Codec checks its WithModel (R20.1).
var _ layer.ModelRewriter = openai.New()

func TestCodecContract(t *testing.T) {
	layertest.Codec(t, openai.New(), &chat.Request{Model: "m", Messages: []chat.Message{{Role: chat.User, Content: "hi"}}})
}
