package chain_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/recourse-dev/recourse/chain"
	"github.com/recourse-dev/recourse/codecs/openai"
	"github.com/recourse-dev/recourse/event"
	"github.com/recourse-dev/recourse/layers/retry"
	"github.com/recourse-dev/recourse/recoursetest"
)

// TestR11_1_UnwatchedCallBuildsNoEvent checks that a call nobody watches
// (no OnEvent, no observer of its *layer.Call) builds none of its
// lifecycle events: the engine reads its monotonic clock once, for the
// call's start, instead of once more for every event's Elapsed. A watched
// call still gets every event, in order, each with its Elapsed from that
// clock.
func TestR11_1_UnwatchedCallBuildsNoEvent(t *testing.T) {
	answer := []byte(recoursetest.OpenAIChat("ok"))
	base := roundTripFunc(func(req *http.Request) (*http.Response, error) {
		_, _ = io.Copy(io.Discard, req.Body)
		req.Body.Close()
		return &http.Response{StatusCode: http.StatusOK, Header: http.Header{"Content-Type": {"application/json"}},
			Body: io.NopCloser(bytes.NewReader(answer)), ContentLength: int64(len(answer)), Request: req}, nil
	})
	var reads atomic.Int64
	clock := func() time.Duration { return time.Duration(reads.Add(1)) * time.Millisecond }
	call := func(t *testing.T, pol retry.Policy, ctx context.Context) {
		t.Helper()
		ch, err := chain.Default(openai.New(), chain.WithPolicy(pol), chain.WithTransport(base))
		require.NoError(t, err)
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://provider.test/v1/chat/completions",
			bytes.NewReader(encoded(t, canaryRequest())))
		require.NoError(t, err)
		resp, err := ch.RoundTrip(req)
		require.NoError(t, err)
		body, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		require.NoError(t, resp.Body.Close())
		require.Equal(t, answer, body)
	}

	call(t, retry.Policy{MonotonicClock: clock}, context.Background())
	assert.Equal(t, int64(1), reads.Load(), "clock readings of an unwatched call")

	reads.Store(0)
	var events []event.Event
	call(t, retry.Policy{MonotonicClock: clock, OnEvent: func(e event.Event) error {
		events = append(events, e)
		return nil
	}}, context.Background())
	require.Len(t, events, 2)
	assert.Equal(t, event.AttemptStarted, events[0].Type)
	assert.Equal(t, event.AttemptSucceeded, events[1].Type)
	assert.Equal(t, time.Millisecond, events[0].Elapsed)
	assert.Equal(t, 2*time.Millisecond, events[1].Elapsed)

	reads.Store(0)
	var observed []event.Type
	ctx := withObserver(context.Background(), func(e event.Event) { observed = append(observed, e.Type) })
	call(t, retry.Policy{MonotonicClock: clock}, ctx)
	assert.Equal(t, []event.Type{event.AttemptStarted, event.AttemptSucceeded}, observed)
}
