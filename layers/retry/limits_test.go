package retry_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"runtime"
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

// allocated returns the bytes the process allocated while f ran.
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// R4.9, R10.5: a 2xx body larger than the limit is a protocol failure
// whose reading costs O(limit) — not the many regrowths of an append loop
// plus a copy of everything as evidence — and whose evidence is bounded.
func TestR10_5_OversizedBodyCostsTheLimitAndKeepsBoundedEvidence(t *testing.T) {
	chunk := []byte(strings.Repeat("x", 1<<20))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(200)
		for range retry.MaxResponseBody>>20 + 2 {
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
	}))
	defer srv.Close()
	ch, err := chain.Default(openai.New(), chain.WithTransport(newTransport(t)), chain.WithPolicy(retry.Policy{MaxAttempts: 2, Jitter: zeroJitter}))
	require.NoError(t, err)
	cl, err := client.New(srv.URL, ch)
	require.NoError(t, err)
	var cerr error
	got := allocated(func() { _, cerr = cl.Complete(context.Background(), canaryRequest()) })
	re := asRecoveryError(t, cerr)
	assert.Equal(t, event.OutcomeInterrupted, re.Outcome)
	assert.Equal(t, event.ReasonBodyTooLarge, re.Failure.Classification.Reason)
	assert.LessOrEqual(t, got, uint64(3*retry.MaxResponseBody/2), "reading a body over the limit allocates O(limit): %d MiB", got>>20)
	ev := event.Inspect(&re.Failure)
	require.NotNil(t, ev)
	assert.Len(t, ev.Bytes, retry.MaxEvidenceBytes, "the evidence keeps the first MaxEvidenceBytes")
}

// R4, R10.2: response headers over the transport's limit are a failure
// that would repeat identically: malformed, never retried.
func TestR4_5_OversizedResponseHeadersAreNotTransient(t *testing.T) {
	hits := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits++
		w.Header().Set("X-Big", strings.Repeat("h", 8<<10))
		w.WriteHeader(503)
	}))
	defer srv.Close()
	base := newTransport(t)
	base.MaxResponseHeaderBytes = 1 << 10
	ch, err := chain.Default(openai.New(), chain.WithTransport(base), chain.WithPolicy(retry.Policy{MaxAttempts: 3, Jitter: zeroJitter}))
	require.NoError(t, err)
	cl, err := client.New(srv.URL, ch)
	require.NoError(t, err)
	_, err = cl.Complete(context.Background(), canaryRequest())
	re := asRecoveryError(t, err)
	assert.Equal(t, event.OutcomeInterrupted, re.Outcome)
	assert.Equal(t, event.CategoryProtocol, re.Failure.Category)
	assert.Equal(t, event.ReasonMalformed, re.Failure.Classification.Reason)
	assert.Equal(t, 1, hits, "one POST: the failure would repeat")
}

// R2.1: a per-attempt layer that sends one attempt twice gets
// layer.ErrSecondSend; the failure is permanent, so the engine does not
// send the attempt again either: the provider sees one POST.
func TestR2_1_SecondSendOfAnAttemptIsRefusedAndNotRetried(t *testing.T) {
	srv := startServer(t, okStep("first"), okStep("second"), okStep("third"))
	twice := layer.NewPerAttempt("twice", func(next http.RoundTripper) http.RoundTripper {
		return layer.RoundTripperFunc(func(req *http.Request) (*http.Response, error) {
			resp, err := next.RoundTrip(req)
			if err == nil {
				resp.Body.Close()
			}
			return next.RoundTrip(req)
		})
	})
	ch, err := chain.Default(openai.New(), chain.WithTransport(newTransport(t)), chain.WithPerAttempt(twice),
		chain.WithPolicy(retry.Policy{MaxAttempts: 3, Jitter: zeroJitter}))
	require.NoError(t, err)
	cl, err := client.New(srv.URL, ch)
	require.NoError(t, err)
	_, err = cl.Complete(context.Background(), canaryRequest())
	re := asRecoveryError(t, err)
	assert.Equal(t, event.OutcomeInterrupted, re.Outcome)
	assert.Equal(t, event.ReasonPermanent, re.Failure.Classification.Reason)
	ev := event.Inspect(&re.Failure)
	require.NotNil(t, ev)
	assert.ErrorIs(t, ev.Cause, layer.ErrSecondSend)
	assert.Equal(t, 1, srv.Count())
}
