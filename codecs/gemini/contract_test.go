package gemini_test

import (
	"testing"

	"github.com/recourse-dev/recourse/chat"
	"github.com/recourse-dev/recourse/codecs/gemini"
	"github.com/recourse-dev/recourse/layer"
	"github.com/recourse-dev/recourse/layer/layertest"
)

// The codec names the model in the path: it is a layer.Router, and
// layertest.Codec checks its DescribeURL, RoutePath and WithModelURL
// (R23.1).
var _ layer.Router = gemini.New()

func TestR23_1_CodecContract(t *testing.T) {
	layertest.Codec(t, gemini.New(), &chat.Request{Model: "gemini-2.5-flash", Messages: []chat.Message{{Role: chat.User, Content: "hi"}}})
	layertest.Codec(t, gemini.New(), &chat.Request{Model: "gemini-2.5-flash", Stream: true, Messages: []chat.Message{{Role: chat.User, Content: "hi"}}})
}
