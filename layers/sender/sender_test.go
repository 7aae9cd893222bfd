package sender_test

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/recourse-dev/recourse/codec"
	"github.com/recourse-dev/recourse/event"
	"github.com/recourse-dev/recourse/internal/attempt"
	"github.com/recourse-dev/recourse/layer"
	"github.com/recourse-dev/recourse/layers/sender"
)

// streamServer answers every request with head, flushed, then runs rest.
// It counts the connections it accepted.
func streamServer(t *testing.T, head string, rest func(w http.ResponseWriter, r *http.Request)) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	var conns atomic.Int64
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, head)
		w.(http.Flusher).Flush()
		rest(w, r)
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	t.Cleanup(srv.Close)
	return srv, &conns
}

// finishedStream sends one streaming attempt through s, reads head, marks
// the attempt finished at its terminal frame (as the engine does) and closes
// the body. It returns how long Close took.
func finishedStream(t *testing.T, s *sender.Layer, url, head string) time.Duration {
	t.Helper()
	a := attempt.New(event.Identity{LogicalID: "l", AttemptID: "a", WireAttempt: 1},
		codec.RequestInfo{Operation: codec.Streaming}, nil, nil, nil)
	req, err := http.NewRequestWithContext(attempt.With(context.Background(), a), http.MethodPost, url, strings.NewReader("{}"))
	require.NoError(t, err)
	resp, err := s.RoundTrip(req)
	require.NoError(t, err)
	got := make([]byte, len(head))
	_, err = io.ReadFull(resp.Body, got)
	require.NoError(t, err)
	require.Equal(t, head, string(got))
	a.Finish()
	start := time.Now()
	require.NoError(t, resp.Body.Close())
	return time.Since(start)
}

const done = "data: [DONE]\n\n"

// TestMain fails the package if any goroutine outlives the tests: the
// drain's timer, the servers' handlers and every connection must be gone.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// A stream that ended at its terminal frame before HTTP EOF leaves its
// connection reusable: the end of the chunked encoding, which the server
// sends after flushing [DONE], is read before the body is closed.
func TestFinishedStreamKeepsItsConnection(t *testing.T) {
	srv, conns := streamServer(t, done, func(http.ResponseWriter, *http.Request) {
		time.Sleep(time.Millisecond) // the end of the body follows [DONE] in its own write
	})
	s := sender.New(nil)
	defer s.CloseIdleConnections()
	for range 5 {
		finishedStream(t, s, srv.URL, done)
	}
	require.EqualValues(t, 1, conns.Load(), "connections for 5 streams")
}

// A server that holds the response open after the terminal frame does not
// hold the caller: Close returns after at most DrainWait (give or take
// scheduling), the connection is closed and the next stream dials again.
func TestFinishedStreamOnAHeldResponseClosesPromptly(t *testing.T) {
	release := make(chan struct{})
	srv, conns := streamServer(t, done, func(_ http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})
	defer close(release)
	s := sender.New(nil)
	defer s.CloseIdleConnections()
	for range 2 {
		d := finishedStream(t, s, srv.URL, done)
		require.Less(t, d, 10*time.Second, "Close waited for the held response")
		require.GreaterOrEqual(t, d, sender.DrainWait, "the drain's timer never fires early")
	}
	require.EqualValues(t, 2, conns.Load())
}

// A stream closed before its terminal frame (its consumer left) is closed
// at once, never drained: the provider may still be generating.
func TestUnfinishedStreamIsNotDrained(t *testing.T) {
	release := make(chan struct{})
	srv, _ := streamServer(t, "data: {}\n\n", func(_ http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})
	defer close(release)
	s := sender.New(nil)
	defer s.CloseIdleConnections()
	a := attempt.New(event.Identity{LogicalID: "l", AttemptID: "a", WireAttempt: 1},
		codec.RequestInfo{Operation: codec.Streaming}, nil, nil, nil)
	req, err := http.NewRequestWithContext(attempt.With(context.Background(), a), http.MethodPost, srv.URL, strings.NewReader("{}"))
	require.NoError(t, err)
	resp, err := s.RoundTrip(req)
	require.NoError(t, err)
	_, err = io.ReadFull(resp.Body, make([]byte, len("data: {}\n\n")))
	require.NoError(t, err)
	start := time.Now()
	require.NoError(t, resp.Body.Close())
	// A drain of this held response would last DrainWait at least (its
	// timer never fires early); a plain close returns at once.
	require.Less(t, time.Since(start), sender.DrainWait, "an unfinished stream was drained")
}

// TestSenderMarksTheConnection sends one attempt over loopback with and
// without a caller's own trace in the context: the attempt records that a
// connection was obtained either way (the trace the engine's attempt
// context carries, or the one the sender composes with the caller's), and
// the caller's trace still fires.
func TestSenderMarksTheConnection(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		_, _ = io.WriteString(w, "{}")
	}))
	defer srv.Close()
	s := sender.New(nil)
	defer s.CloseIdleConnections()
	for _, withOwn := range []bool{false, true} {
		a := attempt.New(event.Identity{LogicalID: "l", AttemptID: "a", WireAttempt: 1},
			codec.RequestInfo{Operation: codec.Ordinary}, nil, nil, nil)
		ctx := context.Background()
		var own atomic.Int64
		if withOwn {
			ctx = httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{GotConn: func(httptrace.GotConnInfo) { own.Add(1) }})
		}
		req, err := http.NewRequestWithContext(attempt.With(ctx, a), http.MethodPost, srv.URL, strings.NewReader("{}"))
		require.NoError(t, err)
		require.False(t, a.Connected())
		resp, err := s.RoundTrip(req)
		require.NoError(t, err)
		_, _ = io.Copy(io.Discard, resp.Body)
		require.NoError(t, resp.Body.Close())
		require.True(t, a.Connected(), "caller's trace: %v", withOwn)
		if withOwn {
			require.EqualValues(t, 1, own.Load(), "the caller's trace fired once")
		}
	}
}

// TestR2_1_SenderInEngineRefusesARequestWithoutAttempt: the sender's view
// for a chain with an engine sends a request carrying an attempt or the
// engine's pass-through mark, and refuses any other with
// layer.ErrDetachedRequest, closing its body and sending nothing; the
// plain view (a chain without an engine) sends it.
func TestR2_1_SenderInEngineRefusesARequestWithoutAttempt(t *testing.T) {
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		_, _ = io.Copy(io.Discard, r.Body)
	}))
	t.Cleanup(srv.Close)
	s := sender.New(nil)
	t.Cleanup(s.CloseIdleConnections)
	strict := s.WrapInEngine(nil)
	send := func(rt http.RoundTripper, ctx context.Context) (*closeRecorder, error) {
		body := &closeRecorder{Reader: strings.NewReader("{}")}
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL, body)
		require.NoError(t, err)
		resp, err := rt.RoundTrip(req)
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
		return body, err
	}

	body, err := send(strict, context.Background())
	require.ErrorIs(t, err, layer.ErrDetachedRequest)
	require.True(t, body.closed.Load(), "the refused request's body is closed")
	require.Zero(t, hits.Load(), "nothing is sent")

	a := attempt.New(event.Identity{LogicalID: "l", AttemptID: "a", WireAttempt: 1}, codec.RequestInfo{Operation: codec.Ordinary}, nil, nil, nil)
	_, err = send(strict, attempt.With(context.Background(), a))
	require.NoError(t, err)
	_, err = send(strict, attempt.WithPassThrough(context.Background()))
	require.NoError(t, err)
	_, err = send(s.Wrap(nil), context.Background())
	require.NoError(t, err)
	require.EqualValues(t, 3, hits.Load())
}

// closeRecorder is a request body that records whether it was closed.
type closeRecorder struct {
	io.Reader
	closed atomic.Bool
}

func (c *closeRecorder) Close() error { c.closed.Store(true); return nil }
