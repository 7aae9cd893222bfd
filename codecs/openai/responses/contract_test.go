package responses_test

import (
	"testing"

	"github.com/recourse-dev/recourse/chat"
	"github.com/recourse-dev/recourse/codecs/openai/responses"
	"github.com/recourse-dev/recourse/layer"
	"github.com/recourse-dev/recourse/layer/layertest"
)

// The codec is a layer.ModelRewriter, so a fallback target of the same
// wire can take its requests; layertest.Codec checks its WithModel (R20.1).
var _ layer.ModelRewriter = responses.New()

func TestCodecContract(t *testing.T) {
	layertest.Codec(t, responses.New(), &chat.Request{Model: "m", Messages: []chat.Message{{Role: chat.User, Content: "hi"}}})
	layertest.Codec(t, responses.New(), &chat.Request{Model: "gpt-4.1", Stream: true, Messages: []chat.Message{{Role: chat.User, Content: "hi"}}})
}
