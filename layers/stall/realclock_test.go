package stall_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/recourse-dev/recourse/event"
	"github.com/recourse-dev/recourse/layer"
	"github.com/recourse-dev/recourse/layers/stall"
)

// pacedBody is a response body whose i-th Read waits delays[i] (on the
// clock of the test's bubble) and returns one byte; a Read past the last
// delay waits until the attempt's context is cancelled, as a connection
// that went silent does.
type pacedBody struct {
	ctx    context.Context
	delays []time.Duration
	n      int
}

func (b *pacedBody) Read(p []byte) (int, error) {
	if b.n >= len(b.delays) {
		<-b.ctx.Done()
		return 0, b.ctx.Err()
	}
	d := b.delays[b.n]
	b.n++
	if d > 0 {
		select {
		case <-time.After(d):
		case <-b.ctx.Done():
			return 0, b.ctx.Err()
		}
	}
	p[0] = 'x'
	return 1, nil
}

func (*pacedBody) Close() error { return nil }

// pacedTransport answers every request at once with a pacedBody.
type pacedTransport []time.Duration

func (delays pacedTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	return &http.Response{StatusCode: http.StatusOK, Header: http.Header{},
		Body: &pacedBody{ctx: req.Context(), delays: delays}, Request: req}, nil
}

// pacedResponse sends one request through a real-clock stall layer with
// limits lim over a pacedTransport with delays.
func pacedResponse(t *testing.T, lim stall.Limits, delays ...time.Duration) *http.Response {
	t.Helper()
	l, err := stall.New(lim)
	require.NoError(t, err)
	req, err := http.NewRequest(http.MethodPost, "http://provider.invalid/v1/chat/completions", http.NoBody)
	require.NoError(t, err)
	resp, err := l.Wrap(pacedTransport(delays)).RoundTrip(req)
	require.NoError(t, err)
	return resp
}

// TestR7_2_RealClockIdleLimitBoundsEachWait checks the real clock's one
// re-armed timer: reads that each wait less than the idle limit, together
// far longer than it, are never cut, and the read that waits longer ends
// with the idle limit exactly when it has waited the limit.
func TestR7_2_RealClockIdleLimitBoundsEachWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const idle = 10 * time.Second
		resp := pacedResponse(t, stall.Limits{Idle: idle}, 9*time.Second, 9*time.Second, 0, 9*time.Second)
		defer resp.Body.Close()
		buf := make([]byte, 8)
		for i := range 4 {
			n, err := resp.Body.Read(buf)
			require.NoError(t, err, "read %d waited less than the idle limit", i)
			assert.Equal(t, 1, n)
		}
		start := time.Now()
		_, err := resp.Body.Read(buf)
		var se *layer.StallError
		require.True(t, errors.As(err, &se), "the silent read ends with a stall, got %v", err)
		assert.Equal(t, event.StallIdle, se.Limit)
		assert.Equal(t, idle, time.Since(start), "the limit fires when the read has waited it")
	})
}

// TestR7_2_RealClockLimitThatLosesTheRaceDoesNotCutTheNextRead checks the
// race the re-armed timer must survive: a read that returns just as its
// idle limit elapses may succeed or end with the stall, but a callback of
// that wait that runs late never cuts a later read that returns at once.
func TestR7_2_RealClockLimitThatLosesTheRaceDoesNotCutTheNextRead(t *testing.T) {
	const idle = 5 * time.Second
	for range 50 {
		synctest.Test(t, func(t *testing.T) {
			resp := pacedResponse(t, stall.Limits{Idle: idle}, idle, 0, 0, 0)
			defer resp.Body.Close()
			buf := make([]byte, 8)
			if _, err := resp.Body.Read(buf); err != nil {
				var se *layer.StallError
				require.True(t, errors.As(err, &se), "a read at its limit succeeds or stalls, got %v", err)
				return
			}
			for i := range 3 {
				_, err := resp.Body.Read(buf)
				require.NoError(t, err, "read %d returned at once after a read at its limit", i+1)
			}
		})
	}
}

// TestR7_2_RealClockHeaderLimit checks the header limit on the real clock:
// a transport that never answers is cut when the limit has elapsed.
func TestR7_2_RealClockHeaderLimit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l, err := stall.New(stall.Limits{Header: 3 * time.Second, Idle: time.Minute})
		require.NoError(t, err)
		silent := roundTripFunc(func(req *http.Request) (*http.Response, error) {
			<-req.Context().Done()
			return nil, req.Context().Err()
		})
		req, err := http.NewRequest(http.MethodPost, "http://provider.invalid/v1/chat/completions", http.NoBody)
		require.NoError(t, err)
		start := time.Now()
		_, err = l.Wrap(silent).RoundTrip(req)
		var se *layer.StallError
		require.True(t, errors.As(err, &se), "got %v", err)
		assert.Equal(t, event.StallHeader, se.Limit)
		assert.Equal(t, 3*time.Second, time.Since(start))
	})
}

var _ io.ReadCloser = (*pacedBody)(nil)

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
