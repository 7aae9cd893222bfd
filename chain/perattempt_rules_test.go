package chain_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/recourse-dev/recourse/chain"
	"github.com/recourse-dev/recourse/client"
	"github.com/recourse-dev/recourse/codec"
	"github.com/recourse-dev/recourse/codecs/ollama"
	"github.com/recourse-dev/recourse/codecs/openai"
	"github.com/recourse-dev/recourse/event"
	"github.com/recourse-dev/recourse/internal/rigtest"
	"github.com/recourse-dev/recourse/layer"
	"github.com/recourse-dev/recourse/layers/retry"
	"github.com/recourse-dev/recourse/recoursetest"
)

// errRefused is the error of a per-attempt layer that refuses to pass an
// attempt on (a request signer without a key, say).
var errRefused = errors.New("signer: no key for this request")

// refusing is a per-attempt layer that answers its first n attempts with
// errRefused, without calling next, and passes the others on.
func refusing(n int64, calls *atomic.Int64) layer.Layer {
	return layer.NewPerAttempt("refusing", func(next http.RoundTripper) http.RoundTripper {
		return layer.RoundTripperFunc(func(r *http.Request) (*http.Response, error) {
			if calls.Add(1) <= n {
				if r.Body != nil {
					r.Body.Close()
				}
				return nil, errRefused
			}
			return next.RoundTrip(r)
		})
	})
}

// R10.7: an attempt that a per-attempt layer answers without passing it on
// sent nothing, yet it is a wire attempt: it has an attempt ID and the next
// WireAttempt number, its events, a History entry, and it uses one of
// MaxAttempts.
func TestR10_7_AnAttemptRefusedByAPerAttemptLayerIsNumberedAndCounted(t *testing.T) {
	var calls atomic.Int64
	rec := &rigtest.Recorder{}
	s := startServer(t, okStep("never"))
	ch, err := chain.Default(openai.New(), chain.WithTransport(newTransport(t)), chain.WithPerAttempt(refusing(10, &calls)),
		chain.WithPolicy(retry.Policy{MaxAttempts: 3, Jitter: zeroJitter, OnEvent: rec.OnEvent}))
	require.NoError(t, err)
	c, err := client.New(s.URL, ch)
	require.NoError(t, err)

	_, err = c.Complete(context.Background(), canaryRequest())

	re := asRecoveryError(t, err)
	assert.Equal(t, event.OutcomeExhausted, re.Outcome, "the refusals used up MaxAttempts")
	assert.Zero(t, s.Count(), "nothing reached the provider")
	assert.EqualValues(t, 3, calls.Load())
	require.Len(t, re.History, 3)
	ids := map[string]bool{}
	for i, f := range re.History {
		assert.Equal(t, i+1, f.WireAttempt, "numbered like any wire attempt")
		assert.NotEmpty(t, f.AttemptID)
		ids[f.AttemptID] = true
	}
	assert.Len(t, ids, 3, "a fresh attempt ID each")
	assert.Equal(t, 3, re.Failure.WireAttempt)
	started := eventsOf(rec.Events(), event.AttemptStarted)
	require.Len(t, started, 3)
	for i, ev := range started {
		assert.Equal(t, i+1, ev.WireAttempt)
	}
}

// R10.8: an error a per-attempt layer returns is the attempt's failure:
// category transport, acceptance no (nothing was sent), the error as the
// private cause, eligible (reason transient) while transport is a
// retryable category — so it is resent without admission on every
// provider, Ollama's included — and permanent when it is not.
func TestR10_8_APerAttemptLayersErrorIsATransportFailureThatSentNothing(t *testing.T) {
	for _, tc := range []struct {
		name  string
		codec codec.Codec
		ok    recoursetest.Step
	}{
		{"openai", openai.New(), okStep("ok")},
		{"ollama", ollama.New(), recoursetest.JSON(200, recoursetest.OllamaChat("ok"))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var calls atomic.Int64
			rec := &rigtest.Recorder{}
			s := startServer(t, tc.ok)
			ch, err := chain.Default(tc.codec, chain.WithTransport(newTransport(t)), chain.WithPerAttempt(refusing(1, &calls)),
				chain.WithPolicy(retry.Policy{MaxAttempts: 2, Jitter: zeroJitter, OnEvent: rec.OnEvent}))
			require.NoError(t, err)
			c, err := client.New(s.URL, ch)
			require.NoError(t, err)

			comp, err := c.Complete(context.Background(), canaryRequest())

			require.NoError(t, err, "resent without an admission hook")
			assert.Equal(t, "ok", comp.Message.Content)
			assert.Equal(t, 1, s.Count())
			failed := eventsOf(rec.Events(), event.AttemptFailed)
			require.Len(t, failed, 1)
			f := failed[0].Failure
			require.NotNil(t, f)
			assert.Equal(t, event.CategoryTransport, f.Category)
			assert.Equal(t, event.AcceptanceNo, f.Acceptance)
			assert.Equal(t, event.Classification{Eligible: true, Reason: event.ReasonTransient}, f.Classification)
			assert.ErrorIs(t, event.Inspect(f).Cause, errRefused)

			assert.Empty(t, eventsOf(rec.Events(), event.AdmissionRequired))
		})
	}
	t.Run("transport not retryable", func(t *testing.T) {
		var calls atomic.Int64
		s := startServer(t, okStep("never"))
		ch, err := chain.Default(openai.New(), chain.WithTransport(newTransport(t)), chain.WithPerAttempt(refusing(1, &calls)),
			chain.WithPolicy(retry.Policy{MaxAttempts: 2, Jitter: zeroJitter, RetryableCategories: []event.Category{event.CategoryHTTP}}))
		require.NoError(t, err)
		c, err := client.New(s.URL, ch)
		require.NoError(t, err)
		_, err = c.Complete(context.Background(), canaryRequest())
		re := asRecoveryError(t, err)
		assert.Equal(t, event.OutcomeInterrupted, re.Outcome)
		assert.Equal(t, event.Classification{Reason: event.ReasonPermanent}, re.Failure.Classification)
		assert.Zero(t, s.Count())
		assert.NotContains(t, re.Error(), "no key", "the layer's text stays private (R10.5)")
	})
}

// R2.6: a per-attempt layer that calls its next a second time for one
// attempt gets layer.ErrSecondSend and nothing is sent; the attempt fails
// with it as the private cause, category transport, not eligible, reason
// permanent, whatever the retryable categories: the call ends interrupted
// and the provider saw the attempt's one POST.
func TestR2_6_ASecondSendIsRefusedAndEndsTheCall(t *testing.T) {
	var refused atomic.Int64
	twice := layer.NewPerAttempt("twice", func(next http.RoundTripper) http.RoundTripper {
		return layer.RoundTripperFunc(func(r *http.Request) (*http.Response, error) {
			resp, err := next.RoundTrip(r)
			if err == nil {
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
			resp, err = next.RoundTrip(r)
			if errors.Is(err, layer.ErrSecondSend) {
				refused.Add(1)
			}
			return resp, err
		})
	})
	s := startServer(t, repeat(okStep("ok"), 4)...)
	ch, err := chain.Default(openai.New(), chain.WithTransport(newTransport(t)), chain.WithPerAttempt(twice),
		chain.WithPolicy(retry.Policy{MaxAttempts: 4, Jitter: zeroJitter}))
	require.NoError(t, err)
	c, err := client.New(s.URL, ch)
	require.NoError(t, err)

	_, err = c.Complete(context.Background(), canaryRequest())

	re := asRecoveryError(t, err)
	assert.Equal(t, event.OutcomeInterrupted, re.Outcome)
	assert.Equal(t, event.CategoryTransport, re.Failure.Category)
	assert.Equal(t, event.Classification{Reason: event.ReasonPermanent}, re.Failure.Classification)
	assert.ErrorIs(t, event.Inspect(&re.Failure).Cause, layer.ErrSecondSend)
	assert.Len(t, re.History, 1, "not retried")
	assert.EqualValues(t, 1, refused.Load())
	assert.Equal(t, 1, s.Count(), "the attempt's one POST")
}
