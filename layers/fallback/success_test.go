package fallback_test

import (
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/recourse-dev/recourse/chat"
	"github.com/recourse-dev/recourse/codecs/openai"
	"github.com/recourse-dev/recourse/internal/rigtest"
	"github.com/recourse-dev/recourse/layers/fallback"
	"github.com/recourse-dev/recourse/layers/retry"
	"github.com/recourse-dev/recourse/recoursetest"
)

// countingCodec is the OpenAI codec counting how the engine judges 2xx
// bodies: decoded in full or only checked.
type countingCodec struct {
	*openai.Codec
	decodes, checks atomic.Int32
}

func (c *countingCodec) Decode(b []byte) (*chat.Completion, error) {
	c.decodes.Add(1)
	return c.Codec.Decode(b)
}

func (c *countingCodec) Check(b []byte) error {
	c.checks.Add(1)
	return c.Codec.Check(b)
}

// A drop-in call through the fallback layer whose first target answers is
// judged as without the layer: nobody reads its completion, so the engine
// only checks the body (layer.Checker) and the SDK gets it as sent.
func TestR20_11_DropInSuccessIsOnlyChecked(t *testing.T) {
	codec := &countingCodec{Codec: openai.New()}
	answer := recoursetest.OpenAIChat("first target")
	f := newFixture(t, codec, retry.Policy{MaxAttempts: 2},
		fallback.Config{Targets: []fallback.Target{{Model: "gpt-4o-mini"}}},
		recoursetest.JSON(200, answer))
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, f.Server.URL+"/v1/chat/completions", strings.NewReader(chatBody("gpt-4o", false)))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+rigtest.Key)
	resp, err := f.HTTP.Do(req)
	require.NoError(t, err)
	assert.Equal(t, 200, resp.StatusCode)
	assert.Equal(t, answer, readBody(t, resp))
	assert.Equal(t, int32(0), codec.decodes.Load(), "the completion is decoded though nobody reads it")
	assert.Equal(t, int32(1), codec.checks.Load())
	assert.Equal(t, []string{"gpt-4o"}, models(t, f.Server))
}

// A caller that places its own *layer.Call reads the completion: the
// fallback layer leaves the engine decoding it.
func TestR20_11_CallersCallStillDecoded(t *testing.T) {
	codec := &countingCodec{Codec: openai.New()}
	f := newFixture(t, codec, retry.Policy{MaxAttempts: 2},
		fallback.Config{Targets: []fallback.Target{{Model: "gpt-4o-mini"}}},
		recoursetest.JSON(200, recoursetest.OpenAIChat("first target")))
	resp, lc, err := f.post(t, "/v1/chat/completions", chatBody("gpt-4o", false))
	require.NoError(t, err)
	assert.Contains(t, readBody(t, resp), "first target")
	assert.Equal(t, int32(1), codec.decodes.Load())
	require.NotNil(t, lc.Result.Completion)
	assert.Equal(t, "first target", lc.Result.Completion.Message.Content)
	assert.False(t, lc.OutcomeOnly)
}
