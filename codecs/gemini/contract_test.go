package gemini_test

import (
	"testing"

	"github.com/recourse-dev/recourse/chat"
	"github.com/recourse-dev/recourse/codec"
	"github.com/recourse-dev/recourse/codec/codectest"
	"github.com/recourse-dev/recourse/codecs/gemini"
)

// The codec names the model in the path: it is a codec.Router, and
// codectest.Codec checks its DescribeURL, RoutePath and WithModelURL
// (R23.1).
var _ codec.Router = gemini.New()

func TestR23_1_CodecContract(t *testing.T) {
	codectest.Codec(t, gemini.New(), &chat.Request{Model: "gemini-2.5-flash", Messages: []chat.Message{{Role: chat.User, Content: "hi"}}})
	codectest.Codec(t, gemini.New(), &chat.Request{Model: "gemini-2.5-flash", Stream: true, Messages: []chat.Message{{Role: chat.User, Content: "hi"}}})
}

// R21.12: the Gemini API takes its key as x-goog-api-key: <key>, under
// either API version, so a proxy holding the key sends it there.
func TestR21_12_KeyHeaderIsXGoogAPIKey(t *testing.T) {
	for _, c := range []codec.Codec{gemini.New(), gemini.New(gemini.WithAPIVersion("v1"))} {
		name, prefix := codec.AuthHeader(c)
		if name != "X-Goog-Api-Key" || prefix != "" {
			t.Fatalf("AuthHeader = %q, %q; want X-Goog-Api-Key and no prefix", name, prefix)
		}
	}
}
