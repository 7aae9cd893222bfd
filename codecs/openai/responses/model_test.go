package responses_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/recourse-dev/recourse/chat"
	"github.com/recourse-dev/recourse/codecs/openai/responses"
	"github.com/recourse-dev/recourse/layer"
)

// The codec names another model in a body it encoded, every other byte
// kept, so a fallback target of the same wire can take a Responses
// request (R20.1).
func TestR20_1_ResponsesWithModelSwapsOnlyTheModel(t *testing.T) {
	var c layer.Codec = responses.New()
	rw, ok := c.(layer.ModelRewriter)
	require.True(t, ok, "the codec is a layer.ModelRewriter")
	body, err := c.Encode(&chat.Request{Model: "first", Messages: []chat.Message{{Role: chat.User, Content: "model first"}}})
	require.NoError(t, err)
	out, err := rw.WithModel(body, "second")
	require.NoError(t, err)
	info, err := c.Describe(out)
	require.NoError(t, err)
	assert.Equal(t, "second", info.Model)
	assert.Contains(t, string(out), "model first", "the input is untouched")
	assert.Len(t, out, len(body)+1, "one byte longer: only the model changed")
	_, err = rw.WithModel([]byte("[]"), "x")
	assert.Error(t, err)
}
