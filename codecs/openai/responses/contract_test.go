package responses_test

import (
	"testing"

	"github.com/recourse-dev/recourse/chat"
	"github.com/recourse-dev/recourse/codecs/openai/responses"
	"github.com/recourse-dev/recourse/layer/layertest"
)

func TestCodecContract(t *testing.T) {
	layertest.Codec(t, responses.New(), &chat.Request{Model: "m", Messages: []chat.Message{{Role: chat.User, Content: "hi"}}})
	layertest.Codec(t, responses.New(), &chat.Request{Model: "gpt-4.1", Stream: true, Messages: []chat.Message{{Role: chat.User, Content: "hi"}}})
}
