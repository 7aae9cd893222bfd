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
	"github.com/recourse-dev/recourse/codecs/openai"
	"github.com/recourse-dev/recourse/internal/rigtest"
	"github.com/recourse-dev/recourse/layer"
	"github.com/recourse-dev/recourse/layers/retry"
)

// TestR2_3_PerAttemptLayerChangingTheHeaderInPlaceChangesOnlyItsAttempt: a
// per-attempt layer that adds a header and a query in place, against the
// layer contract, changes only the request of its own attempt: every
// attempt reaches the provider with the header once and the URL changed
// once, and the request snapshots of later attempts hold the call's own
// header. Before, attempts shared one header map and URL: the provider saw
// [1], [1 1], [1 1 1]. Drop-in requests (header cloned by the engine) and
// native ones (a layer.RequestBody, header kept as it is) alike.
func TestR2_3_PerAttemptLayerChangingTheHeaderInPlaceChangesOnlyItsAttempt(t *testing.T) {
	add := layer.NewPerAttempt("add", func(next http.RoundTripper) http.RoundTripper {
		return layer.RoundTripperFunc(func(req *http.Request) (*http.Response, error) {
			req.Header.Add("X-Added", "1")
			req.URL.RawQuery += "&n=1"
			return next.RoundTrip(req)
		})
	})
	for _, native := range []bool{true, false} {
		name := "drop-in"
		if native {
			name = "native"
		}
		t.Run(name, func(t *testing.T) {
			rec := &rigtest.Recorder{}
			r := rigtest.NewWith(t, openai.New(), retry.Policy{MaxAttempts: 3, Jitter: zeroJitter, OnWire: rec.OnWire},
				[]chain.Option{chain.WithPerAttempt(add)}, statusStep(503), statusStep(503), okStep("third"))
			if native {
				comp, err := r.Client.Complete(context.Background(), canaryRequest())
				require.NoError(t, err)
				assert.Equal(t, "third", comp.Message.Content)
			} else {
				req, err := http.NewRequest(http.MethodPost, r.Server.URL+"/v1/chat/completions?v=1", bytes.NewReader(encoded(t, canaryRequest())))
				require.NoError(t, err)
				req.Header.Set("Content-Type", "application/json")
				resp, err := r.HTTP.Do(req)
				require.NoError(t, err)
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				require.Equal(t, 200, resp.StatusCode)
				assert.Empty(t, req.Header.Values("X-Added"), "the caller's request is unchanged")
				assert.Equal(t, "v=1", req.URL.RawQuery)
			}
			reqs := r.Server.Requests()
			require.Len(t, reqs, 3)
			for i, got := range reqs {
				assert.Equal(t, []string{"1"}, got.Header.Values("X-Added"), "attempt %d", i+1)
				assert.Equal(t, 1, bytes.Count([]byte(got.RawQuery), []byte("n=1")), "attempt %d: %q", i+1, got.RawQuery)
			}
			var snaps int
			for _, s := range rec.Wire() {
				if s.Direction == layer.DirectionRequest {
					snaps++
					assert.Empty(t, s.Header.Values("X-Added"), "the request snapshot of attempt %d holds the call's header", s.WireAttempt)
				}
			}
			assert.Equal(t, 3, snaps)
		})
	}
}
