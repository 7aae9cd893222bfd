package retry_test

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/recourse-dev/recourse/codec"
	"github.com/recourse-dev/recourse/codecs/openai/responses"
	"github.com/recourse-dev/recourse/event"
	"github.com/recourse-dev/recourse/layer"
	"github.com/recourse-dev/recourse/recoursetest"
)

// TestR9_1_DropInStreamCancelledByItsCallerReturnsTheContextError: a
// caller that cancels its context in the middle of a drop-in stream reads
// the context's error from the body — errors.Is(err, context.Canceled),
// with the *layer.RecoveryError (outcome cancelled) reachable by
// errors.As — and no in-band error frame before it, as without recourse.
func TestR9_1_DropInStreamCancelledByItsCallerReturnsTheContextError(t *testing.T) {
	rows := exProviders()
	rows = append(rows, exProv{name: "responses", codec: func() codec.Codec { return responses.New() }, model: "gpt-4.1-mini",
		full: func(cs ...string) []string { return recoursetest.ResponsesEvents("resp_c", cs...) }})
	for _, p := range rows {
		t.Run(p.name, func(t *testing.T) {
			frames := p.full("Hel", "lo")
			r, _ := exRig(t, p.codec(), exPolicy(), p.step(frames[:len(frames)-2]...).Held())
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			resp, err := exDropIn(t, ctx, r.Server.URL, r.HTTP, p)
			require.NoError(t, err)
			defer resp.Body.Close()
			var got strings.Builder
			buf := make([]byte, 4096)
			for !strings.Contains(got.String(), "Hel") {
				n, rerr := resp.Body.Read(buf)
				got.Write(buf[:n])
				require.NoError(t, rerr, "the stream is open until the caller cancels")
			}
			cancel()
			rest, err := io.ReadAll(resp.Body)
			require.Error(t, err)
			assert.ErrorIs(t, err, context.Canceled)
			var re *layer.RecoveryError
			require.True(t, errors.As(err, &re), "errors.As finds the *layer.RecoveryError in %T", err)
			assert.Equal(t, event.OutcomeCancelled, re.Outcome)
			assert.NotContains(t, string(rest), "recourse_error", "no in-band frame for a caller that cancelled")
			assert.NotContains(t, string(rest), "recovery cancelled")
		})
	}
}
