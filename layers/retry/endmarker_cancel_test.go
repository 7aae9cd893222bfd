package retry_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/recourse-dev/recourse/event"
	"github.com/recourse-dev/recourse/layer"
)

// lifecycle returns the attempt lifecycle and terminal events among types.
func lifecycle(types []string) []string {
	var out []string
	for _, ty := range types {
		switch event.Type(ty) {
		case event.AttemptStarted, event.AttemptSucceeded, event.AttemptFailed, event.Cancelled:
			out = append(out, ty)
		}
	}
	return out
}

// TestR12_3_EndMarkerCancellationNeverFollowsASuccess: a capture hook that
// cancels the caller's context on a stream's end marker (the empty
// snapshot, Seq > 0) and returns ctx.Err() ends the call cancelled with the
// one legal lifecycle attempt_started, attempt_failed, cancelled — never
// attempt_succeeded followed by attempt_failed. The interleaving is forced:
// the server holds the body open after the terminal frame, so the end
// marker is taken when the engine closes the body after decoding that
// frame, the path on which the success used to be reported first. The
// content before the terminal frame was delivered, the terminal chunk was
// not (R9.1, R9.2, R11, R12.3, R13.5).
func TestR12_3_EndMarkerCancellationNeverFollowsASuccess(t *testing.T) {
	for _, p := range exProviders() {
		for _, hold := range []bool{true, false} {
			name := p.name + "/held_open"
			if !hold {
				name = p.name + "/server_ends"
			}
			t.Run(name, func(t *testing.T) {
				runs := 1
				if !hold {
					// The server ends the body: the end marker comes with the
					// terminal frame's read or after it, as the wire falls.
					// Either way the lifecycle is the same.
					runs = 20
				}
				for range runs {
					ctx, cancel := context.WithCancel(context.Background())
					pol := exPolicy()
					var endMarkers int
					pol.OnWire = func(hctx context.Context, s layer.WireSnapshot) error {
						if s.Direction == layer.DirectionResponse && s.Seq > 0 && len(s.Bytes) == 0 {
							endMarkers++
							cancel()
							return hctx.Err()
						}
						return nil
					}
					st := p.step(p.full("one", "two")...)
					st.Hold = hold
					r, rec := exRig(t, p.codec(), pol, st, p.step(p.full("never")...))
					run := exCollect(r.Client.Stream(ctx, p.request()))
					cancel()

					re := exRE(t, run.err)
					assert.Equal(t, event.OutcomeCancelled, re.Outcome)
					assert.ErrorIs(t, run.err, context.Canceled)
					assert.Equal(t, []string{"attempt_started", "attempt_failed", "cancelled"}, lifecycle(rec.Types()))
					require.Len(t, re.History, 1)
					assert.Equal(t, event.CategoryCancellation, re.History[0].Category)
					assert.False(t, run.done(), "abort wins over completion: no Done chunk")
					assert.Equal(t, 1, endMarkers, "one end marker")
					assert.Equal(t, 1, r.Server.Count(), "never resent")
				}
			})
		}
	}
}

// TestR12_3_EndMarkerCaptureFailureIsCaptureFailedWhereverItFalls: a hook
// that fails on the end marker taken when the engine closes a body held
// open after its terminal frame ends the call capture_failed, as the same
// failure on an end marker read with HTTP EOF does: the success is never
// reported, the terminal chunk is not delivered, nothing is resent (R11,
// R12.3).
func TestR12_3_EndMarkerCaptureFailureIsCaptureFailedWhereverItFalls(t *testing.T) {
	for _, p := range exProviders() {
		t.Run(p.name, func(t *testing.T) {
			pol := exPolicy()
			pol.OnWire = func(_ context.Context, s layer.WireSnapshot) error {
				if s.Direction == layer.DirectionResponse && s.Seq > 0 && len(s.Bytes) == 0 {
					return errors.New("archive unavailable")
				}
				return nil
			}
			st := p.step(p.full("one", "two")...)
			st.Hold = true
			r, rec := exRig(t, p.codec(), pol, st, p.step(p.full("never")...))
			run := exCollect(r.Client.Stream(context.Background(), p.request()))

			re := exRE(t, run.err)
			assert.Equal(t, event.ReasonCaptureFailed, re.Failure.Classification.Reason)
			assert.False(t, re.Failure.Classification.Eligible)
			assert.NotContains(t, rec.Types(), "attempt_succeeded")
			assert.Equal(t, "attempt_failed", lifecycle(rec.Types())[1])
			assert.False(t, run.done(), "no Done chunk")
			assert.Equal(t, 1, r.Server.Count(), "never resent")
		})
	}
}
