package retry_test

// A capture hook that cancels the caller's context on the response
// direction, and then fails with the context's error, makes two things true
// at once: the capture failed (R4.3, R12.3) and the call was cancelled
// (R4.1, R9.1). Cancellation comes first in R4 and wins everywhere (R9.1,
// R10.4): the call ends cancelled, never interrupted/capture_failed, for an
// ordinary call and for both stream shapes, on every provider.

import (
	"bytes"
	"context"
	"io"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/recourse-dev/recourse/client"
	"github.com/recourse-dev/recourse/codec"
	"github.com/recourse-dev/recourse/event"
	"github.com/recourse-dev/recourse/layer"
	"github.com/recourse-dev/recourse/recoursetest"
)

// exCancellingCapture returns a response-capture hook that, on the first
// response snapshot holding marker, cancels the call's context, waits until
// it is done and returns its error — the way a hook that watches its context
// reports the cancellation it caused.
func exCancellingCapture(marker []byte, cancel context.CancelFunc) layer.WireHook {
	return func(ctx context.Context, s layer.WireSnapshot) error {
		if s.Direction != layer.DirectionResponse || !bytes.Contains(s.Bytes, marker) {
			return nil
		}
		cancel()
		<-ctx.Done()
		return ctx.Err()
	}
}

// exCheckCancelledInCapture checks a call that its response capture
// cancelled: outcome cancelled, the context's error reachable, the attempt
// recorded before the one cancelled event, and no resend.
func exCheckCancelledInCapture(t *testing.T, err error, rec *exRecorder, count int) *layer.RecoveryError {
	t.Helper()
	re := exRE(t, err)
	assert.Equal(t, event.OutcomeCancelled, re.Outcome, "cancellation wins over the capture failure it caused")
	assert.Equal(t, event.CategoryCancellation, re.Failure.Category)
	assert.Equal(t, event.ReasonCancelled, re.Failure.Classification.Reason)
	assert.ErrorIs(t, err, context.Canceled)
	require.Len(t, re.History, 1, "R9.2: the attempt that was sent is recorded")
	assert.Equal(t, event.CategoryCancellation, re.History[0].Category)
	assert.Equal(t, []string{"attempt_started", "attempt_failed", "cancelled"}, exLifecycle(rec.Types()))
	assert.NotContains(t, rec.Types(), string(event.Interrupted))
	assert.Equal(t, 1, count, "nothing is resent")
	return re
}

// TestR9_1_CancelInResponseCaptureWinsOverCaptureFailure: a hook that
// cancels the call while it captures the response and returns ctx.Err()
// ends the call cancelled (R9.1, R10.4), not interrupted with reason
// capture_failed: for ordinary calls, chunk streams, event streams and
// drop-in stream bodies of OpenAI, oMLX and Ollama. A stream keeps the
// progress observed in the chunk (R12.3) and delivers nothing of it.
func TestR9_1_CancelInResponseCaptureWinsOverCaptureFailure(t *testing.T) {
	unary := map[string]string{
		"openai": recoursetest.OpenAIChat("Hello"),
		"omlx":   recoursetest.OpenAIChat("Hello"),
		"ollama": recoursetest.OllamaChat("Hello"),
	}
	for _, p := range exProviders() {
		t.Run(p.name+"/ordinary", func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			pol := exPolicy()
			pol.OnWire = exCancellingCapture([]byte("Hello"), cancel)
			r, rec := exRig(t, p.codec(), pol, recoursetest.JSON(200, unary[p.name]), recoursetest.JSON(200, unary[p.name]))

			comp, err := r.Client.Complete(ctx, p.request())

			assert.Nil(t, comp, "nothing is delivered")
			exCheckCancelledInCapture(t, err, rec, r.Server.Count())
		})
		for _, shape := range []string{"chunks", "events", "drop_in"} {
			t.Run(p.name+"/"+shape, func(t *testing.T) {
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				first := p.content("Hi")
				pol := exPolicy()
				pol.OnWire = exCancellingCapture([]byte(first), cancel)
				// The second frame waits behind a gate that never opens, so
				// the first one arrives alone and nothing follows it.
				never := make(chan struct{})
				st := p.step(first, p.content("there")).Gated(1, never)
				r, rec := exRig(t, p.codec(), pol, st, p.step(p.full("never")...))

				var err error
				var got string
				switch shape {
				case "chunks":
					for ch, e := range r.Client.Stream(ctx, p.request()) {
						if e != nil {
							err = e
							break
						}
						got += ch.Content
					}
				case "events":
					for e := range r.Client.StreamEvents(ctx, p.request()) {
						if e.Type == client.EventError {
							assert.Equal(t, layer.StreamCancelled, e.Err.Reason, "the event stream reports a cancellation")
							err = e.Err
							break
						}
						got += e.Text
					}
				case "drop_in":
					resp, derr := exDropIn(t, ctx, r.Server.URL, r.HTTP, p)
					require.NoError(t, derr)
					body, rerr := io.ReadAll(resp.Body)
					resp.Body.Close()
					err = rerr
					assert.NotContains(t, string(body), first, "the frame's bytes are not handed over")
				}

				assert.Empty(t, got, "nothing of the cancelled chunk is delivered")
				re := exCheckCancelledInCapture(t, err, rec, r.Server.Count())
				pr := re.Failure.Progress
				assert.Equal(t, int64(len("Hi")), pr.Observed.ContentBytes, "R12.3: the observed progress is kept")
				assert.Equal(t, codec.Counts{}, pr.Delivered, "nothing is delivered")
			})
		}
	}
}
