package main

import (
	"bytes"
	"errors"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/recourse-dev/recourse/chain"
	"github.com/recourse-dev/recourse/chat"
	"github.com/recourse-dev/recourse/layer"
	"github.com/recourse-dev/recourse/layers/sender"
	"github.com/recourse-dev/recourse/recoursetest"
)

// TestMain fails the package if a test leaves a goroutine behind. No
// library goroutine needs to be ignored.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// prompt is the user message of the tests: a canary that must never reach
// a log.
const prompt = "canary-prompt: the launch code is 7-7-3"

func helloRequest() *chat.Request {
	return &chat.Request{Model: "gpt-4o-mini", Messages: []chat.Message{{Role: chat.User, Content: prompt}}}
}

// busyThenHello is the script of most tests: a 503, then an answer.
func busyThenHello() []recoursetest.Step {
	return []recoursetest.Step{
		recoursetest.JSON(http.StatusServiceUnavailable, recoursetest.OpenAIError("server_error", "", "upstream overloaded")),
		recoursetest.JSON(http.StatusOK, recoursetest.OpenAIChat("hello")),
	}
}

// The whole program, offline: the order line, the refused composition, the
// events of the two attempts, both attempts accepted by the gateway and the
// answer.
func TestRunOffline(t *testing.T) {
	var out bytes.Buffer
	require.NoError(t, run(&out))
	s := out.String()
	assert.Contains(t, s, "chain: requestlog > retry > capture > progress > signer > redirectguard > sender\n")
	assert.Contains(t, s, "refused: chain: layer 1 (retry, engine) must come before the per-attempt layers")
	assert.Contains(t, s, "  event attempt_failed (attempt 1, HTTP 503)\n")
	assert.Contains(t, s, "  event attempt_succeeded (attempt 2, HTTP 200)\n")
	assert.Regexp(t, `level=INFO msg=completion method=POST path=/openai/v1/chat status=200 logical_request_id=[0-9a-f-]{36} wire_attempts=2 duration=`, s)
	assert.Regexp(t, `gateway: request 1, attempt [0-9a-f]{8}…, signature ok, answered 503\n`, s)
	assert.Regexp(t, `gateway: request 2, attempt [0-9a-f]{8}…, signature ok, answered 200\n`, s)
	assert.Contains(t, s, "answer (gpt-4o-mini-2024-07-18, finish stop): Hello through a custom chain.\n")
	for _, secret := range []string{demoAPIKey, demoSigningKey, "Say hello."} {
		assert.NotContains(t, s, secret)
	}
}

// chain.New places each of the example's layers by its position and
// refuses, with a *chain.CompositionError, the compositions that would put
// one in the wrong place.
func TestComposition(t *testing.T) {
	key := []byte("k")
	engine, err := newEngine(NewGatewayCodec(), nil)
	require.NoError(t, err)

	ch, err := chain.New(NewRequestLog(nil), engine, NewSigner(key), sender.New(nil))
	require.NoError(t, err)
	assert.Equal(t, "requestlog > retry > capture > progress > signer > redirectguard > sender", ch.Order())
	assert.Equal(t, Gateway, ch.Codec().Provider())

	// Without an engine the two user layers still compose: a plain POST.
	ch, err = chain.New(NewRequestLog(nil), NewSigner(key))
	require.NoError(t, err)
	assert.Equal(t, "requestlog > signer > redirectguard > sender", ch.Order())

	for _, tc := range []struct {
		name    string
		layers  []layer.Layer
		index   int
		problem string
	}{
		{"signer outside the engine", []layer.Layer{NewSigner(key), engine}, 1,
			"must come before the per-attempt layers (order: per-call, engine, capture, progress, per-attempt, redirect guard, sender)"},
		{"request log inside the engine", []layer.Layer{engine, NewRequestLog(nil)}, 1,
			"must come before the engine layers (order: per-call, engine, capture, progress, per-attempt, redirect guard, sender)"},
		{"signer below the sender", []layer.Layer{engine, sender.New(nil), NewSigner(key)}, 2,
			"must come before the sender layers (order: per-call, engine, capture, progress, per-attempt, redirect guard, sender)"},
		{"a nil layer", []layer.Layer{NewRequestLog(nil), nil, engine}, 1, "is nil"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ch, err := chain.New(tc.layers...)
			assert.Nil(t, ch)
			var cerr *chain.CompositionError
			require.True(t, errors.As(err, &cerr), "want *chain.CompositionError, got %T: %v", err, err)
			assert.Equal(t, tc.index, cerr.Index)
			assert.Equal(t, tc.problem, cerr.Problem)
		})
	}
}

// chain.Default takes the same layers through its options.
func TestDefaultWithTheExampleLayers(t *testing.T) {
	ch, err := chain.Default(NewGatewayCodec(),
		chain.WithPerCall(NewRequestLog(nil)),
		chain.WithPerAttempt(NewSigner([]byte("k"))))
	require.NoError(t, err)
	assert.Equal(t, "requestlog > retry > capture > progress > signer > redirectguard > sender", ch.Order())

	_, err = chain.Default(NewGatewayCodec(), chain.WithPerCall(NewSigner([]byte("k"))))
	var cerr *chain.CompositionError
	require.True(t, errors.As(err, &cerr), "got %T: %v", err, err)
	assert.Equal(t, "signer", cerr.Name)
}
