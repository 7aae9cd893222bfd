package retry_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/recourse-dev/recourse/chain"
	"github.com/recourse-dev/recourse/client"
	"github.com/recourse-dev/recourse/codecs/openai"
	"github.com/recourse-dev/recourse/event"
	"github.com/recourse-dev/recourse/layer"
	"github.com/recourse-dev/recourse/layers/retry"
)

// TestR4_9_OversizeBodyCostsAtMostOneAndAHalfLimitsAndNamesItsSize: a 2xx
// ordinary body of 256 MiB against the 64 MiB limit, generated as it is
// sent — a chat completion whose content never ends, so the observer counts
// semantic output — allocates at most 1.5× the limit to refuse, whether its
// length is announced or not, and the failure names an oversize body
// (reason body_too_large), not semantic_output; one POST, never resent.
func TestR4_9_OversizeBodyCostsAtMostOneAndAHalfLimitsAndNamesItsSize(t *testing.T) {
	testOversize(t, false)
}

// TestR4_9_OversizeBodyWithACaptureHookCostsAtMostOneAndAHalfLimits: the
// same refusal with a capture hook (R12) stays within 1.5× the limit: the
// capture keeps no second copy of the body, and the attempt's one response
// snapshot holds the first MaxEvidenceBytes the engine kept — the body's
// exact first bytes — and is not complete (R4.9, R12.2).
func TestR4_9_OversizeBodyWithACaptureHookCostsAtMostOneAndAHalfLimits(t *testing.T) {
	testOversize(t, true)
}

func testOversize(t *testing.T, hook bool) {
	const size = 256 << 20
	head := `{"id":"chatcmpl-big","object":"chat.completion","model":"gpt-4o-mini","choices":[{"index":0,"message":{"role":"assistant","content":"`
	chunk := []byte(strings.Repeat("a", 1<<20))
	for _, announced := range []bool{false, true} {
		t.Run("content-length="+strconv.FormatBool(announced), func(t *testing.T) {
			hits := 0
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				hits++
				w.Header().Set("Content-Type", "application/json")
				if announced {
					w.Header().Set("Content-Length", strconv.Itoa(size))
				}
				w.WriteHeader(200)
				if _, err := w.Write([]byte(head)); err != nil {
					return
				}
				for sent := len(head); sent < size; sent += len(chunk) {
					if _, err := w.Write(chunk[:min(len(chunk), size-sent)]); err != nil {
						return
					}
				}
			}))
			defer srv.Close()
			pol := retry.Policy{MaxAttempts: 3, Jitter: zeroJitter}
			var responses []layer.WireSnapshot
			if hook {
				pol.OnWire = func(_ context.Context, s layer.WireSnapshot) error {
					if s.Direction == layer.DirectionResponse {
						responses = append(responses, s)
					}
					return nil
				}
			}
			ch, err := chain.Default(openai.New(), chain.WithTransport(newTransport(t)), chain.WithPolicy(pol))
			require.NoError(t, err)
			cl, err := client.New(srv.URL, ch)
			require.NoError(t, err)
			var cerr error
			got := allocated(func() { _, cerr = cl.Complete(context.Background(), canaryRequest()) })
			t.Logf("refusing the body allocated %d MiB", got>>20)
			re := asRecoveryError(t, cerr)
			assert.Equal(t, event.OutcomeInterrupted, re.Outcome)
			assert.Equal(t, event.CategoryProtocol, re.Failure.Category)
			assert.Equal(t, event.ReasonBodyTooLarge, re.Failure.Classification.Reason)
			assert.Contains(t, re.Error(), "body_too_large")
			assert.True(t, re.Failure.Progress.Observed.Any(), "the observer counted the content it read")
			assert.LessOrEqual(t, got, uint64(3*retry.MaxResponseBody/2), "refusing the body allocated %d MiB", got>>20)
			ev := event.Inspect(&re.Failure)
			require.NotNil(t, ev)
			assert.Len(t, ev.Bytes, retry.MaxEvidenceBytes, "the evidence keeps the first MaxEvidenceBytes")
			assert.True(t, strings.HasPrefix(string(ev.Bytes), head))
			assert.Equal(t, 1, hits, "never resent")
			if hook {
				require.Len(t, responses, 1, "one response snapshot")
				snap := responses[0]
				assert.Equal(t, 200, snap.Status)
				assert.False(t, snap.Complete, "the body was refused before its end")
				assert.Equal(t, retry.MaxEvidenceBytes, len(snap.Bytes), "the snapshot holds the first MaxEvidenceBytes")
				assert.True(t, strings.HasPrefix(string(snap.Bytes), head))
			}
		})
	}
}
