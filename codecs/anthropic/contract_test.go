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

// R21.12: the Messages API takes its key as x-api-key: <key>, so a proxy
// holding the key sends it there, not as a bearer token.
func TestR21_12_KeyHeaderIsXAPIKey(t *testing.T) {
	var c codec.Codec = anthropic.New()
	name, prefix := codec.AuthHeader(c)
	if name != "X-Api-Key" || prefix != "" {
		t.Fatalf("AuthHeader = %q, %q; want X-Api-Key and no prefix", name, prefix)
	}
}
