package main

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/recourse-dev/recourse/chain"
	"github.com/recourse-dev/recourse/chat"
	"github.com/recourse-dev/recourse/examples/internal/loopback"
	"github.com/recourse-dev/recourse/layer"
	"github.com/recourse-dev/recourse/layers/capture"
	"github.com/recourse-dev/recourse/layers/progress"
	"github.com/recourse-dev/recourse/layers/redirectguard"
	"github.com/recourse-dev/recourse/layers/sender"
)

// TestMain fails the package if a test leaves a goroutine behind. No
// library goroutine needs to be ignored.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

func TestBuildChainOrder(t *testing.T) {
	c, err := buildChain(allowBusy, nil)
	require.NoError(t, err)
	assert.Equal(t, "retry > capture > progress > redirectguard > sender", c.Order())
	assert.Equal(t, layer.Ollama, c.Codec().Provider())
}

// chain.New completes a partial chain: the engine's capture and progress
// stages, a redirect guard and a sender are always installed, so a Chain
// never hands a redirect to an http.Client nor replays after output.
func TestNewInstallsTheEngineStages(t *testing.T) {
	rl, err := newRetry(nil, nil)
	require.NoError(t, err)

	c, err := chain.New(rl)
	require.NoError(t, err)
	assert.Equal(t, "retry > capture > progress > redirectguard > sender", c.Order())

	c, err = chain.New(rl, progress.New(), sender.New(nil))
	require.NoError(t, err)
	assert.Equal(t, "retry > capture > progress > redirectguard > sender", c.Order())
}

// chain.New refuses a chain out of order, with a repeated stage, or with a
// stage that needs the engine and no engine, with a *chain.CompositionError.
func TestNewRejectsWrongOrder(t *testing.T) {
	rl, err := newRetry(nil, nil)
	require.NoError(t, err)

	for _, tc := range []struct {
		name    string
		layers  []layer.Layer
		index   int
		problem string
	}{
		{"capture before retry", []layer.Layer{capture.New(), rl}, 1,
			"must come before the capture layers (order: per-call, engine, capture, progress, per-attempt, redirect guard, sender)"},
		{"sender before redirect guard", []layer.Layer{rl, sender.New(nil), redirectguard.New()}, 2,
			"must come before the sender layers (order: per-call, engine, capture, progress, per-attempt, redirect guard, sender)"},
		{"progress twice", []layer.Layer{rl, progress.New(), progress.New()}, 2, "is given twice"},
		{"capture without retry", []layer.Layer{capture.New()}, 0,
			"needs the retry engine above it (without one it has nothing to do)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := chain.New(tc.layers...)
			assert.Nil(t, c)
			var cerr *chain.CompositionError
			require.True(t, errors.As(err, &cerr), "want *chain.CompositionError, got %T: %v", err, err)
			assert.Equal(t, tc.index, cerr.Index)
			assert.Equal(t, tc.problem, cerr.Problem)
		})
	}
}

// The hand-built chain recovers a 503 through the native client: the
// admission layer's hook allows the resend, two POSTs reach the server.
func TestHandBuiltChainRecovers(t *testing.T) {
	srv := loopback.New(
		loopback.JSON(http.StatusServiceUnavailable, loopback.OllamaError(loopback.OllamaBusy)),
		loopback.JSON(http.StatusOK, loopback.OllamaChat("hand-built hello")),
	)
	t.Cleanup(srv.Close)
	var types []layer.EventType
	c, err := buildChain(allowBusy, func(ev layer.Event) error {
		types = append(types, ev.Type)
		return nil
	})
	require.NoError(t, err)
	client, err := chain.NewClient(srv.URL, c)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	comp, err := client.Complete(ctx, &chat.Request{Model: "llama3.2", Messages: []chat.Message{{Role: chat.User, Content: "hi"}}})

	require.NoError(t, err)
	assert.Equal(t, "hand-built hello", comp.Message.Content)
	assert.Equal(t, "stop", comp.FinishReason)
	reqs := srv.Requests()
	require.Len(t, reqs, 2)
	assert.Equal(t, "/api/chat", reqs[0].Path)
	assert.Equal(t, reqs[0].Body, reqs[1].Body)
	assert.Equal(t, []layer.EventType{
		layer.EventAttemptStarted, layer.EventAttemptFailed,
		layer.EventAdmissionPending, layer.EventAdmissionAllowed,
		layer.EventDelayScheduled, layer.EventRetryStarted,
		layer.EventAttemptStarted, layer.EventAttemptSucceeded,
	}, types)
}

// Without a hook in the admission layer (admission.New(nil)), the default
// rule applies: the Ollama 503 is not resent and the native client returns
// the *layer.RecoveryError directly.
func TestHandBuiltChainWithoutHook(t *testing.T) {
	srv := loopback.New(
		loopback.JSON(http.StatusServiceUnavailable, loopback.OllamaError(loopback.OllamaBusy)),
		loopback.JSON(http.StatusOK, loopback.OllamaChat("must not be fetched")),
	)
	t.Cleanup(srv.Close)
	c, err := buildChain(nil, nil)
	require.NoError(t, err)
	client, err := chain.NewClient(srv.URL, c)
	require.NoError(t, err)

	_, err = client.Complete(context.Background(), &chat.Request{Model: "llama3.2", Messages: []chat.Message{{Role: chat.User, Content: "hi"}}})

	var rerr *layer.RecoveryError
	require.True(t, errors.As(err, &rerr), "got %T: %v", err, err)
	assert.Equal(t, layer.OutcomeAdmissionRequired, rerr.Outcome)
	assert.Equal(t, 1, srv.Hits())
}

func TestRunOffline(t *testing.T) {
	var out bytes.Buffer
	require.NoError(t, run(&out))
	s := out.String()
	assert.Contains(t, s, "chain: retry > capture > progress > redirectguard > sender\n")
	assert.Contains(t, s, "wrong order: chain: layer 1 (retry, engine) must come before the capture layers")
	assert.Contains(t, s, "  event admission_allowed (attempt 1)\n")
	assert.Contains(t, s, "answer (llama3.2, finish stop): Hello through a hand-built chain.\n")
}

// The native client always returns the typed error: a permanent 400 is a
// *layer.RecoveryError with outcome interrupted (it does not pass through
// as it does for the SDKs), and a cancelled call is one with outcome
// cancelled that errors.Is reports as context.Canceled.
func TestNativeClientErrors(t *testing.T) {
	t.Run("400", func(t *testing.T) {
		srv := loopback.New(loopback.JSON(http.StatusBadRequest, loopback.OllamaError("model is required")))
		t.Cleanup(srv.Close)
		c, err := buildChain(allowBusy, nil)
		require.NoError(t, err)
		client, err := chain.NewClient(srv.URL, c)
		require.NoError(t, err)

		_, err = client.Complete(context.Background(), &chat.Request{Model: "llama3.2", Messages: []chat.Message{{Role: chat.User, Content: "hi"}}})

		var rerr *layer.RecoveryError
		require.True(t, errors.As(err, &rerr), "got %T: %v", err, err)
		assert.Equal(t, layer.OutcomeInterrupted, rerr.Outcome)
		assert.Equal(t, http.StatusBadRequest, rerr.Failure.HTTPStatus)
		assert.Equal(t, layer.ReasonPermanent, rerr.Failure.Classification.Reason)
		assert.Equal(t, 1, srv.Hits())
	})
	t.Run("cancelled", func(t *testing.T) {
		srv := loopback.New(loopback.JSON(http.StatusServiceUnavailable, loopback.OllamaError(loopback.OllamaBusy)))
		t.Cleanup(srv.Close)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		c, err := buildChain(allowBusy, func(ev layer.Event) error {
			if ev.Type == layer.EventAttemptFailed {
				cancel()
			}
			return nil
		})
		require.NoError(t, err)
		client, err := chain.NewClient(srv.URL, c)
		require.NoError(t, err)

		_, err = client.Complete(ctx, &chat.Request{Model: "llama3.2", Messages: []chat.Message{{Role: chat.User, Content: "hi"}}})

		var rerr *layer.RecoveryError
		require.True(t, errors.As(err, &rerr), "got %T: %v", err, err)
		assert.Equal(t, layer.OutcomeCancelled, rerr.Outcome)
		assert.ErrorIs(t, err, context.Canceled)
		assert.Equal(t, 1, srv.Hits())
	})
}
