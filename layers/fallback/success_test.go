package fallback_test

import (
	"errors"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/recourse-dev/recourse/chain"
	"github.com/recourse-dev/recourse/chat"
	"github.com/recourse-dev/recourse/codecs/openai"
	"github.com/recourse-dev/recourse/event"
	"github.com/recourse-dev/recourse/internal/rigtest"
	"github.com/recourse-dev/recourse/layer"
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
// only checks the body (codec.Checker) and the SDK gets it as sent.
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

// quietFixture is a rig whose chain has a fallback layer nobody watches:
// no OnEvent, no observer, so the first target's body is left to the
// engine (R20.11).
func quietFixture(t *testing.T, cfg fallback.Config, steps ...recoursetest.Step) *rigtest.Rig {
	t.Helper()
	cfg.Codec = openai.New()
	l, err := fallback.New(cfg)
	require.NoError(t, err)
	return rigtest.NewWith(t, cfg.Codec, retry.Policy{MaxAttempts: 2}, []chain.Option{chain.WithPerCall(l)}, steps...)
}

// onceBody is a request body without GetBody (a proxy's incoming body),
// or, with getBody, one whose GetBody fails.
type onceBody struct{ io.Reader }

func (onceBody) Close() error { return nil }

// A call nobody watches still falls back: the first target's body, left to
// the engine, is had again from the request's GetBody, and the next target
// gets the same bytes with only the model changed.
func TestR20_11_UnwatchedCallFallsBackFromGetBody(t *testing.T) {
	r := quietFixture(t, fallback.Config{Targets: []fallback.Target{{Model: "gpt-4o-mini"}}},
		unavailable(), unavailable(), recoursetest.JSON(200, recoursetest.OpenAIChat("from mini")))
	resp, err := r.HTTP.Post(r.Server.URL+"/v1/chat/completions", "application/json", strings.NewReader(chatBody("gpt-4o", false)))
	require.NoError(t, err)
	assert.Equal(t, 200, resp.StatusCode)
	assert.Contains(t, readBody(t, resp), "from mini")
	reqs := r.Server.Requests()
	require.Len(t, reqs, 3)
	assert.JSONEq(t, chatBody("gpt-4o", false), string(reqs[0].Body))
	assert.JSONEq(t, chatBody("gpt-4o", false), string(reqs[1].Body))
	assert.JSONEq(t, chatBody("gpt-4o-mini", false), string(reqs[2].Body))
}

// A body without GetBody is taken by the layer before the first target,
// so that it can be sent again.
func TestR20_11_BodyWithoutGetBodyIsKeptForTheFallback(t *testing.T) {
	r := quietFixture(t, fallback.Config{Targets: []fallback.Target{{Model: "gpt-4o-mini"}}},
		unavailable(), unavailable(), recoursetest.JSON(200, recoursetest.OpenAIChat("from mini")))
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, r.Server.URL+"/v1/chat/completions", onceBody{strings.NewReader(chatBody("gpt-4o", false))})
	require.NoError(t, err)
	require.Nil(t, req.GetBody)
	resp, err := r.HTTP.Do(req)
	require.NoError(t, err)
	assert.Contains(t, readBody(t, resp), "from mini")
	assert.Equal(t, []string{"gpt-4o", "gpt-4o", "gpt-4o-mini"}, models(t, r.Server))
}

// A body whose GetBody fails cannot be sent again: the call ends with the
// first target's outcome, as without the layer, and nothing more is sent.
func TestR20_11_FailingGetBodyEndsWithTheFirstOutcome(t *testing.T) {
	r := quietFixture(t, fallback.Config{Targets: []fallback.Target{{Model: "gpt-4o-mini"}}},
		unavailable(), unavailable(), recoursetest.JSON(200, recoursetest.OpenAIChat("from mini")))
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, r.Server.URL+"/v1/chat/completions", strings.NewReader(chatBody("gpt-4o", false)))
	require.NoError(t, err)
	req.GetBody = func() (io.ReadCloser, error) { return nil, errors.New("gone") }
	lc := &layer.Call{}
	resp, err := r.HTTP.Do(req.WithContext(layer.WithCall(t.Context(), lc)))
	require.NoError(t, err)
	assert.Equal(t, 503, resp.StatusCode)
	readBody(t, resp)
	assert.Equal(t, []string{"gpt-4o", "gpt-4o"}, models(t, r.Server))
	require.NotNil(t, lc.Result.Err)
	assert.Equal(t, event.OutcomeExhausted, lc.Result.Err.Outcome)
	assert.Empty(t, lc.Result.Err.Targets)
}
