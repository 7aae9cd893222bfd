package chain_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/recourse-dev/recourse/chain"
	"github.com/recourse-dev/recourse/client"
	"github.com/recourse-dev/recourse/codec"
	"github.com/recourse-dev/recourse/codecs/ollama"
	"github.com/recourse-dev/recourse/codecs/openai"
	"github.com/recourse-dev/recourse/event"
	"github.com/recourse-dev/recourse/internal/rigtest"
	"github.com/recourse-dev/recourse/layers/fallback"
	"github.com/recourse-dev/recourse/layers/retry"
	"github.com/recourse-dev/recourse/layers/stall"
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
	fb := rigtest.EventsOf(ra.Rec.Events(), event.Fallback)
	require.Len(t, fb, 1)
	assert.Equal(t, event.FallbackStep{From: "gpt-4o-mini", To: "llama3", Index: 1, Outcome: event.OutcomeExhausted, Attempts: 2}, *fb[0].Fallback)
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

// Every entry point refuses a fallback status outside 400–599 with the same
// *fallback.ConfigError: a 307 is a redirect the engine refuses (R2.2), not
// a failure another target may take, so the native client must not accept
// the rule the drop-in layer and the proxy refuse.
func TestR20_2_EveryEntryPointRefusesANonFailureStatus(t *testing.T) {
	ra := rigtest.New(t, openai.New(), retry.Policy{MaxAttempts: 1})
	rb := rigtest.New(t, openai.New(), retry.Policy{MaxAttempts: 1})
	for _, st := range []int{307, 200, 399, 600} {
		rules := fallback.Rules{Statuses: []int{404, st}}
		_, nerr := client.New(ra.Server.URL, ra.Chain, client.WithFallback(rules, client.FallbackTarget{Client: rb.Client, Model: "m"}))
		var nce *fallback.ConfigError
		require.ErrorAs(t, nerr, &nce, "native client, status %d", st)
		_, derr := fallback.New(fallback.Config{Codec: openai.New(), Rules: rules, Targets: []fallback.Target{{Model: "m"}}})
		var dce *fallback.ConfigError
		require.ErrorAs(t, derr, &dce, "drop-in layer, status %d", st)
		assert.Equal(t, dce.Error(), nce.Error(), "one validation")
		assert.Equal(t, dce.Error(), rules.Validate().Error())
	}
	_, err := client.New(ra.Server.URL, ra.Chain, client.WithFallback(fallback.Rules{Statuses: []int{400, 404, 599}}, client.FallbackTarget{Client: rb.Client, Model: "m"}))
	assert.NoError(t, err)
}

// A native stream whose fallback target opened and then failed — after its
// output or before it — ends with an error that keeps every target's
// outcome and history (R20.7), as a unary fallback's does.
func TestR20_7_NativeFallbackStreamThatFailsKeepsEveryTarget(t *testing.T) {
	evs := recoursetest.OllamaStream("str", "eamed")
	afterOutput := recoursetest.NDJSON(evs...).Cut(len(evs[0]) + 1)
	beforeOutput := recoursetest.NDJSON(evs...).Cut(1)
	for name, b := range map[string][]recoursetest.Step{
		"after output":  {afterOutput},
		"before output": {beforeOutput},
	} {
		t.Run(name, func(t *testing.T) {
			c, _, rb := nativeFallback(t, fallback.Rules{}, []recoursetest.Step{overloaded, overloaded}, b)
			req := canaryRequest()
			req.Stream = true
			_, _, err := rigtest.Collect(t, c.Stream(t.Context(), req))
			e := rigtest.AsRecoveryError(t, err)
			assert.Equal(t, 1, rb.Server.Count())
			require.Len(t, e.Targets, 2)
			assert.Equal(t, "gpt-4o-mini", e.Targets[0].Target)
			assert.Equal(t, event.OutcomeExhausted, e.Targets[0].Outcome)
			assert.Len(t, e.Targets[0].History, 2)
			assert.Equal(t, "llama3", e.Targets[1].Target)
			assert.Equal(t, e.Outcome, e.Targets[1].Outcome)
			assert.Equal(t, e.History, e.Targets[1].History)
			assert.Contains(t, e.Error(), "2 fallback targets tried: gpt-4o-mini (exhausted) → llama3")
		})
	}
}

// The native client fails over on a stall its rules name at once: a
// primary whose headers never come is left after one header timeout,
// unresent, and the fallback target answers (R20.12).
func TestR20_12_NativeStallFailsOverWithoutAResend(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		never := make(chan struct{})
		defer close(never)
		sl, err := stall.New(stall.Limits{Header: 30 * time.Second})
		require.NoError(t, err)
		ra := rigtest.NewMemoryWith(t, openai.New(), retry.Policy{MaxAttempts: 3}, []chain.Option{chain.WithPerAttempt(sl)},
			recoursetest.JSON(200, recoursetest.OpenAIChat("never sent")).Gated(-1, never))
		rb := rigtest.NewMemoryWith(t, openai.New(), retry.Policy{MaxAttempts: 1}, nil, okStep("from b"))
		c, err := client.New(ra.Server.URL, ra.Chain, client.WithFallback(fallback.Rules{Stalls: []event.StallLimit{event.StallHeader}},
			client.FallbackTarget{Client: rb.Client, Model: "b"}))
		require.NoError(t, err)
		start := time.Now()
		comp, err := c.Complete(t.Context(), canaryRequest())
		require.NoError(t, err)
		assert.Equal(t, 30*time.Second, time.Since(start))
		assert.Equal(t, "from b", comp.Message.Content)
		assert.Equal(t, 1, ra.Server.Count(), "the stalled primary was not resent")
		assert.Equal(t, 1, rb.Server.Count())
	})
}

// A native stream whose primary opened and then failed before any output
// goes on to the fallback target: the consumer reads one answer, the
// target's, and no error (R20.14); after output it never would (R20.3).
func TestR20_14_NativeStreamFallsBackBeforeOutput(t *testing.T) {
	evs := recoursetest.OpenAIStream("never", " read")
	beforeOutput := recoursetest.SSE(evs...).Cut(1)
	c, ra, rb := nativeFallback(t, fallback.Rules{},
		[]recoursetest.Step{beforeOutput, beforeOutput},
		[]recoursetest.Step{recoursetest.NDJSON(recoursetest.OllamaStream("from ", "llama")...)})
	req := canaryRequest()
	req.Stream = true
	text, comp, err := rigtest.Collect(t, c.Stream(t.Context(), req))
	require.NoError(t, err)
	assert.Equal(t, "from llama", text)
	require.NotNil(t, comp)
	assert.Equal(t, 2, ra.Server.Count())
	assert.Equal(t, 1, rb.Server.Count())

	afterOutput := recoursetest.SSE(evs...).Cut(len(evs[0]) + len(evs[1]) + 4)
	c, _, rb = nativeFallback(t, fallback.Rules{},
		[]recoursetest.Step{afterOutput},
		[]recoursetest.Step{recoursetest.NDJSON(recoursetest.OllamaStream("must not be asked")...)})
	text, _, err = rigtest.Collect(t, c.Stream(t.Context(), req))
	require.Error(t, err)
	assert.Equal(t, "never", text)
	assert.Zero(t, rb.Server.Count(), "never after output")
}

// The native client falls back on a provider code its rules name and never
// on one its never rule names, whatever the status (R20.2).
func TestR20_2_NativeFallbackByProviderCode(t *testing.T) {
	rules := fallback.Rules{Statuses: []int{400}, Codes: []string{"context_length_exceeded"}, NeverCodes: []string{"content_policy_violation"}}
	long := recoursetest.JSON(400, recoursetest.OpenAIError("invalid_request_error", "context_length_exceeded", "too long"))
	c, _, rb := nativeFallback(t, rules, []recoursetest.Step{long}, []recoursetest.Step{recoursetest.JSON(200, recoursetest.OllamaChat("from llama"))})
	comp, err := c.Complete(t.Context(), canaryRequest())
	require.NoError(t, err)
	assert.Equal(t, "from llama", comp.Message.Content)
	assert.Equal(t, 1, rb.Server.Count())

	refused := recoursetest.JSON(400, recoursetest.OpenAIError("invalid_request_error", "content_policy_violation", "refused"))
	c, ra, rb := nativeFallback(t, rules, []recoursetest.Step{refused}, []recoursetest.Step{recoursetest.JSON(200, recoursetest.OllamaChat("must not be asked"))})
	_, err = c.Complete(t.Context(), canaryRequest())
	e := rigtest.AsRecoveryError(t, err)
	assert.Equal(t, "content_policy_violation", e.Failure.ProviderCode)
	assert.Empty(t, e.Targets)
	assert.Equal(t, 1, ra.Server.Count())
	assert.Zero(t, rb.Server.Count())
}
