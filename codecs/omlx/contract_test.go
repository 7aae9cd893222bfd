package omlx_test

import (
	"testing"

	"github.com/recourse-dev/recourse/chat"
	"github.com/recourse-dev/recourse/codecs/omlx"
	"github.com/recourse-dev/recourse/layer"
	"github.com/recourse-dev/recourse/layer/layertest"
)

// The codec is a layer.ModelRewriter, so a fallback target of the same
// wire can take its requests; layertest.Codec checks its WithModel (R20.1).
var _ layer.ModelRewriter = omlx.New()

func TestCodecContract(t *testing.T) {
	layertest.Codec(t, omlx.New(), &chat.Request{Model: "m", Messages: []chat.Message{{Role: chat.User, Content: "hi"}}})
}
