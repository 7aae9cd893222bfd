package retry_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/recourse-dev/recourse/chain"
	"github.com/recourse-dev/recourse/chat"
	"github.com/recourse-dev/recourse/client"
	"github.com/recourse-dev/recourse/codecs/ollama"
	"github.com/recourse-dev/recourse/codecs/openai"
	"github.com/recourse-dev/recourse/event"
	"github.com/recourse-dev/recourse/layer"
	"github.com/recourse-dev/recourse/layers/retry"
	"github.com/recourse-dev/recourse/recoursetest"
)

// detachers are per-attempt layers that rebuild their request with a
// context of their own, dropping the attempt, and send it twice.
var detachers = []struct {
	name   string
	detach func(t *testing.T, req *http.Request) *http.Request
}{
	{"http.NewRequest", func(t *testing.T, req *http.Request) *http.Request {
		b, err := req.GetBody()
		require.NoError(t, err)
		body, err := io.ReadAll(b)
		require.NoError(t, err)
		out, err := http.NewRequest(req.Method, req.URL.String(), bytes.NewReader(body))
		require.NoError(t, err)
		out.Header = req.Header.Clone()
		return out
	}},
	{"Clone(context.Background())", func(t *testing.T, req *http.Request) *http.Request {
		out := req.Clone(context.Background())
		b, err := req.GetBody()
		require.NoError(t, err)
		out.Body = b
		return out
	}},
}

// detachTwice returns a per-attempt layer that sends a detached rebuild of
// its request twice and returns the second answer.
func detachTwice(t *testing.T, detach func(*testing.T, *http.Request) *http.Request, refused *[]error) layer.Layer {
	return layer.NewPerAttempt("detach", func(next http.RoundTripper) http.RoundTripper {
		return layer.RoundTripperFunc(func(req *http.Request) (*http.Response, error) {
			resp, err := next.RoundTrip(detach(t, req))
			*refused = append(*refused, err)
			if err == nil {
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
			resp, err = next.RoundTrip(detach(t, req))
			*refused = append(*refused, err)
			return resp, err
		})
	})
}

// TestR2_1_DetachedRequestIsRefusedAndNotRetried: inside an engine, a
// request a per-attempt layer rebuilt without its attempt never reaches the
// provider: the sender refuses it with layer.ErrDetachedRequest, the failure
// is permanent (acceptance no: nothing was sent) and the engine does not
// resend. Before, four attempts made eight POSTs.
func TestR2_1_DetachedRequestIsRefusedAndNotRetried(t *testing.T) {
	for _, d := range detachers {
		t.Run(d.name, func(t *testing.T) {
			srv := startServer(t, repeat(statusStep(503), 8)...)
			var errs []error
			ch, err := chain.Default(openai.New(), chain.WithTransport(newTransport(t)), chain.WithPerAttempt(detachTwice(t, d.detach, &errs)),
				chain.WithPolicy(retry.Policy{MaxAttempts: 4, Jitter: zeroJitter}))
			require.NoError(t, err)
			cl, err := client.New(srv.URL, ch)
			require.NoError(t, err)
			_, err = cl.Complete(context.Background(), canaryRequest())
			re := asRecoveryError(t, err)
			assert.Equal(t, event.OutcomeInterrupted, re.Outcome)
			assert.Equal(t, event.ReasonPermanent, re.Failure.Classification.Reason)
			assert.Equal(t, event.CategoryTransport, re.Failure.Category)
			assert.Equal(t, event.AcceptanceNo, re.Failure.Acceptance, "nothing was sent")
			assert.Len(t, re.History, 1, "one attempt: the refusal is never resent")
			ev := event.Inspect(&re.Failure)
			require.NotNil(t, ev)
			assert.ErrorIs(t, ev.Cause, layer.ErrDetachedRequest)
			require.Len(t, errs, 2)
			for _, e := range errs {
				assert.ErrorIs(t, e, layer.ErrDetachedRequest, "every detached send is refused")
			}
			assert.Equal(t, 0, srv.Count(), "no POST leaves the chain")
		})
	}
}

// TestR8_3_DetachedRequestIsNotResentIntoAReset: on Ollama, whose resends
// need admission, a per-attempt layer that resends its detached request
// after a connection reset would send a second POST nobody admitted; the
// sender refuses both, so the provider sees none and the call ends
// permanent, never asking for admission.
func TestR8_3_DetachedRequestIsNotResentIntoAReset(t *testing.T) {
	for _, d := range detachers {
		t.Run(d.name, func(t *testing.T) {
			srv := startServer(t, recoursetest.Reset(), recoursetest.JSON(200, recoursetest.OllamaChat("hi")), recoursetest.JSON(200, recoursetest.OllamaChat("hi")))
			var errs []error
			var events []event.Type
			ch, err := chain.Default(ollama.New(), chain.WithTransport(newTransport(t)), chain.WithPerAttempt(detachTwice(t, d.detach, &errs)),
				chain.WithPolicy(retry.Policy{MaxAttempts: 3, Jitter: zeroJitter,
					OnEvent: func(ev event.Event) error { events = append(events, ev.Type); return nil }}))
			require.NoError(t, err)
			cl, err := client.New(srv.URL, ch)
			require.NoError(t, err)
			_, err = cl.Complete(context.Background(), &chat.Request{Model: recoursetest.OllamaModel, Messages: canaryRequest().Messages})
			re := asRecoveryError(t, err)
			assert.Equal(t, event.OutcomeInterrupted, re.Outcome)
			assert.Equal(t, event.ReasonPermanent, re.Failure.Classification.Reason)
			assert.NotContains(t, events, event.AdmissionRequired)
			assert.NotContains(t, events, event.RetryStarted)
			assert.Equal(t, 0, srv.Count(), "no POST: neither the first nor an unadmitted resend")
		})
	}
}

// TestR1_1_DetachingLayerWithoutRecovery: a chain without an engine has no
// attempt to lose, and a per-attempt layer that rebuilds its request sends
// it as a plain POST would. A chain with an engine that does not recover
// the call (WithoutRecovery, a nil call policy) passes its requests through
// marked, so a per-attempt layer that keeps the context sends them; one
// that detaches them is refused as under recovery — the sender cannot tell
// the two apart once the context is gone — with the plain error, no
// *RecoveryError and no POST.
func TestR1_1_DetachingLayerWithoutRecovery(t *testing.T) {
	detach := layer.NewPerAttempt("detach", func(next http.RoundTripper) http.RoundTripper {
		return layer.RoundTripperFunc(func(req *http.Request) (*http.Response, error) {
			return next.RoundTrip(detachers[0].detach(t, req))
		})
	})
	keep := layer.NewPerAttempt("keep", func(next http.RoundTripper) http.RoundTripper {
		return layer.RoundTripperFunc(func(req *http.Request) (*http.Response, error) {
			out := req.Clone(req.Context())
			out.Header.Set("X-Signed", "1")
			return next.RoundTrip(out)
		})
	})

	t.Run("no engine", func(t *testing.T) {
		srv := startServer(t, okStep("plain"))
		ch, err := chain.New(detach)
		require.NoError(t, err)
		resp, err := (&http.Client{Transport: ch}).Post(srv.URL+"/v1/chat/completions", "application/json", bytes.NewReader(encoded(t, canaryRequest())))
		require.NoError(t, err)
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		assert.Equal(t, 200, resp.StatusCode)
		assert.Equal(t, 1, srv.Count())
	})

	off := func(l layer.Layer) *chain.Chain {
		ch, err := chain.Default(openai.New(), chain.WithTransport(newTransport(t)), chain.WithoutRecovery(), chain.WithPerAttempt(l))
		require.NoError(t, err)
		return ch
	}
	on := func(l layer.Layer) *chain.Chain {
		ch, err := chain.Default(openai.New(), chain.WithTransport(newTransport(t)), chain.WithPerAttempt(l), chain.WithPolicy(retry.Policy{MaxAttempts: 2}))
		require.NoError(t, err)
		return ch
	}
	for _, c := range []struct {
		name string
		ch   func(layer.Layer) *chain.Chain
		ctx  context.Context
	}{
		{"WithoutRecovery", off, context.Background()},
		{"call policy nil", on, retry.WithPolicy(context.Background(), nil)},
	} {
		t.Run(c.name+"/context kept", func(t *testing.T) {
			srv := startServer(t, okStep("plain"))
			cl, err := client.New(srv.URL, c.ch(keep))
			require.NoError(t, err)
			comp, err := cl.Complete(c.ctx, canaryRequest())
			require.NoError(t, err)
			assert.Equal(t, "plain", comp.Message.Content)
			assert.Equal(t, 1, srv.Count())
			assert.Equal(t, []string{"1"}, srv.Requests()[0].Header.Values("X-Signed"))
		})
		t.Run(c.name+"/detached", func(t *testing.T) {
			srv := startServer(t, okStep("plain"))
			cl, err := client.New(srv.URL, c.ch(detach))
			require.NoError(t, err)
			_, err = cl.Complete(c.ctx, canaryRequest())
			require.ErrorIs(t, err, layer.ErrDetachedRequest)
			var re *layer.RecoveryError
			assert.NotErrorAs(t, err, &re, "recovery is off: no *RecoveryError")
			assert.Equal(t, 0, srv.Count())
		})
	}
}
