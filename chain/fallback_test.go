package chain_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/recourse-dev/recourse/client"
	"github.com/recourse-dev/recourse/codec"
	"github.com/recourse-dev/recourse/codecs/ollama"
	"github.com/recourse-dev/recourse/codecs/openai"
	"github.com/recourse-dev/recourse/internal/rigtest"
	"github.com/recourse-dev/recourse/layer"
	"github.com/recourse-dev/recourse/layers/fallback"
	"github.com/recourse-dev/recourse/layers/retry"
	"github.com/recourse-dev/recourse/recoursetest"
)

// nativeFallback is a native OpenAI client that falls back to an Ollama
// client (another codec, its own upstream, policy and credential).
func nativeFallback(t *testing.T, rules fallback.Rules, a, b []recoursetest.Step) (*client.Client, *rigtest.Rig, *rigtest.Rig) {
	t.Helper()
	ra := rigtest.New(t, openai.New(), retry.Policy{MaxAttempts: 2}, a...)
	rb := rigtest.New(t, ollama.New(), retry.Policy{MaxAttempts: 1}, b...)
	c, err := client.New(ra.Server.URL, ra.Chain, client.WithAPIKey(rigtest.Key),
		client.WithFallback(rules, client.FallbackTarget{Client: rb.Client, Model: "llama3"}))
	require.NoError(t, err)
	return c, ra, rb
}

var overloaded = recoursetest.JSON(503, recoursetest.OpenAIError("server_error", "server_error", "overloaded"))

// The native client falls back across codecs: the neutral request is
// encoded anew for the Ollama target, which answers.
func TestR20_9_NativeClientFallsBackAcrossCodecs(t *testing.T) {
	c, ra, rb := nativeFallback(t, fallback.Rules{},
		[]recoursetest.Step{overloaded, overloaded},
		[]recoursetest.Step{recoursetest.JSON(200, recoursetest.OllamaChat("from llama"))})
	comp, err := c.Complete(t.Context(), canaryRequest())
	require.NoError(t, err)
	assert.Equal(t, "from llama", comp.Message.Content)
	assert.Equal(t, 2, ra.Server.Count())
	require.Equal(t, 1, rb.Server.Count())
	got := rb.Server.Requests()[0]
	assert.Equal(t, "/api/chat", got.Path)
	var body struct {
		Model string `json:"model"`
	}
	require.NoError(t, json.Unmarshal(got.Body, &body))
	assert.Equal(t, "llama3", body.Model)
	// The primary's policy observer saw the walk.
	fb := rigtest.EventsOf(ra.Rec.Events(), layer.EventFallback)
	require.Len(t, fb, 1)
	assert.Equal(t, layer.Fallback{From: "gpt-4o-mini", To: "llama3", Index: 1, Outcome: layer.OutcomeExhausted, Attempts: 2}, *fb[0].Fallback)
	assert.Equal(t, codec.OpenAI, fb[0].Provider)
}

// A stream falls back while it has not opened; the typed stream of the
// target that answered is the caller's.
func TestR20_9_NativeStreamFallsBackBeforeItOpens(t *testing.T) {
	c, _, rb := nativeFallback(t, fallback.Rules{},
		[]recoursetest.Step{overloaded, overloaded},
		[]recoursetest.Step{recoursetest.NDJSON(recoursetest.OllamaStream("str", "eamed")...)})
	req := canaryRequest()
	req.Stream = true
	text, comp, err := rigtest.Collect(t, c.Stream(t.Context(), req))
	require.NoError(t, err)
	assert.Equal(t, "streamed", text)
	require.NotNil(t, comp)
	assert.Equal(t, 1, rb.Server.Count())
}

// When every target fails, the native error keeps both targets' histories
// and is returned as the one typed error.
func TestR20_9_NativeErrorKeepsEveryTarget(t *testing.T) {
	c, _, _ := nativeFallback(t, fallback.Rules{},
		[]recoursetest.Step{overloaded, overloaded},
		[]recoursetest.Step{recoursetest.JSON(503, recoursetest.OllamaError("busy"))})
	_, err := c.Complete(t.Context(), canaryRequest())
	e := rigtest.AsRecoveryError(t, err)
	require.Len(t, e.Targets, 2)
	assert.Equal(t, "gpt-4o-mini", e.Targets[0].Target)
	assert.Equal(t, "llama3", e.Targets[1].Target)
	assert.Equal(t, codec.Ollama, e.Failure.Provider)
	assert.NotContains(t, e.Error(), rigtest.Key)
	assert.NotContains(t, e.Error(), rigtest.Prompt)
}

// A cancelled native call never reaches the next target.
func TestR20_9_NativeCancelledNeverFallsBack(t *testing.T) {
	c, _, rb := nativeFallback(t, fallback.Rules{},
		[]recoursetest.Step{overloaded, overloaded},
		[]recoursetest.Step{recoursetest.JSON(200, recoursetest.OllamaChat("never"))})
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	_, err := c.Complete(ctx, canaryRequest())
	require.ErrorIs(t, err, context.Canceled)
	assert.Equal(t, 0, rb.Server.Count())
}

// Each target's credential comes from a function the caller gives
// (WithCredential): the Ollama target gets its own key, never the
// primary's, and a failing function is a safe typed error before anything
// is sent.
func TestR20_1_NativeTargetCredentialFromAFunction(t *testing.T) {
	const localKey = "sk-LOCALTARGETCANARY-3e"
	ra := rigtest.New(t, openai.New(), retry.Policy{}, overloaded)
	rb := rigtest.New(t, ollama.New(), retry.Policy{}, recoursetest.JSON(200, recoursetest.OllamaChat("ok")))
	target, err := client.New(rb.Server.URL, rb.Chain, client.WithCredential(func(_ context.Context, h http.Header) error {
		h.Set("Authorization", "Bearer "+localKey)
		return nil
	}))
	require.NoError(t, err)
	c, err := client.New(ra.Server.URL, ra.Chain, client.WithAPIKey(rigtest.Key),
		client.WithFallback(fallback.Rules{}, client.FallbackTarget{Client: target, Model: "llama3"}))
	require.NoError(t, err)
	_, err = c.Complete(t.Context(), canaryRequest())
	require.NoError(t, err)
	require.Equal(t, 1, rb.Server.Count())
	assert.Equal(t, "Bearer "+localKey, rb.Server.Requests()[0].Header.Get("Authorization"))

	failing, err := client.New(rb.Server.URL, rb.Chain, client.WithCredential(func(context.Context, http.Header) error {
		return errors.New("vault: " + localKey)
	}))
	require.NoError(t, err)
	_, err = failing.Complete(t.Context(), canaryRequest())
	var ce *fallback.CredentialError
	require.ErrorAs(t, err, &ce)
	assert.NotContains(t, err.Error(), localKey)
	assert.Equal(t, 1, rb.Server.Count(), "nothing sent")
}
