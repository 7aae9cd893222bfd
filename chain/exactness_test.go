package chain_test

// Exactness of ordinary calls and of the failure evidence shared with
// streams: what Inspect keeps of a failed response capture (R10.5, R12.3),
// what a cancellation inside the request-capture hook reports (R9.2,
// R10.2), and cancellation from inside the attempt_succeeded observer
// (R9.1, R9.2, R13.5). Fixtures are in exactness_helpers_test.go.

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/recourse-dev/recourse/codecs/openai"
	"github.com/recourse-dev/recourse/internal/scripted"
	"github.com/recourse-dev/recourse/layer"
	"github.com/recourse-dev/recourse/layers/retry"
)

// errExHook is the error of a failing capture hook.
var errExHook = errors.New("capture storage unavailable")

// TestR10_5_ResponseCaptureFailureKeepsCause: when the response capture
// fails and no transport error occurred, the capture's error is both the
// private Cause and the CaptureCause (R10.5, R12.3) — for a 2xx and a non-2xx
// answer, for ordinary and streaming calls, for an error and a panic.
func TestR10_5_ResponseCaptureFailureKeepsCause(t *testing.T) {
	hooks := []struct {
		name  string
		hook  layer.WireHook
		check func(t *testing.T, ev *layer.Evidence)
	}{
		{"error", func(_ context.Context, s layer.WireSnapshot) error {
			if s.Direction == layer.DirectionResponse {
				return errExHook
			}
			return nil
		}, func(t *testing.T, ev *layer.Evidence) {
			assert.ErrorIs(t, ev.Cause, errExHook, "Cause holds the capture error")
			assert.Equal(t, errExHook, ev.CaptureCause, "CaptureCause holds the capture error")
		}},
		{"panic", func(_ context.Context, s layer.WireSnapshot) error {
			if s.Direction == layer.DirectionResponse {
				panic("capture exploded")
			}
			return nil
		}, func(t *testing.T, ev *layer.Evidence) {
			var pe *retry.PanicError
			require.ErrorAs(t, ev.Cause, &pe, "Cause holds the capture panic")
			assert.Equal(t, "capture exploded", pe.Value)
			assert.Equal(t, "capture exploded", ev.CaptureCause)
		}},
	}
	check := func(t *testing.T, re *layer.RecoveryError, status int, c func(*testing.T, *layer.Evidence)) {
		t.Helper()
		assert.Equal(t, layer.OutcomeInterrupted, re.Outcome)
		assert.Equal(t, layer.ReasonCaptureFailed, re.Failure.Classification.Reason)
		assert.Equal(t, status, re.Failure.HTTPStatus)
		c(t, exEvidence(t, re))
	}
	for _, h := range hooks {
		for _, status := range []int{200, 503} {
			name := h.name + "/" + map[int]string{200: "2xx", 503: "503"}[status]
			t.Run("ordinary/"+name, func(t *testing.T) {
				pol := exPolicy()
				pol.OnWire = h.hook
				st := scripted.JSON(200, scripted.OpenAIChat("fine"))
				if status != 200 {
					st = scripted.JSON(status, scripted.OpenAIError("server_error", "server_error", "busy"))
				}
				r, _ := exRig(t, openai.New(), pol, st, scripted.JSON(200, scripted.OpenAIChat("never")))
				_, err := r.Client.Complete(context.Background(), exProviders()[0].request())
				check(t, exRE(t, err), status, h.check)
				assert.Equal(t, 1, r.Server.Count(), "a capture failure is never retried")
			})
			for _, p := range exProviders() {
				t.Run("streaming/"+p.name+"/"+name, func(t *testing.T) {
					pol := exPolicy()
					pol.OnWire = h.hook
					// A 2xx stream whose first chunk carries no semantic
					// output, held open: the capture of that chunk fails.
					st := p.step(p.content("")).Held()
					if status != 200 {
						st = scripted.JSON(status, scripted.OpenAIError("server_error", "server_error", "busy"))
					}
					r, _ := exRig(t, p.codec(), pol, st, p.step(p.full("never")...))
					run := exCollect(r.Client.Stream(context.Background(), p.request()))
					assert.Empty(t, run.chunks)
					check(t, exRE(t, run.err), status, h.check)
					assert.Equal(t, 1, r.Server.Count(), "a capture failure is never retried")
				})
			}
		}
	}
}
