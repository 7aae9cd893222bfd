package sender_test

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/recourse-dev/recourse/layers/sender"
)

// barrierServer answers a request only when width requests are in flight
// at once, so that a round of width concurrent calls needs width
// connections at the same time. It counts the connections it accepted.
type barrierServer struct {
	srv     *httptest.Server
	dials   atomic.Int64
	width   int
	mu      sync.Mutex
	arrived int
	release chan struct{}
}

func newBarrierServer(t *testing.T, width int) *barrierServer {
	t.Helper()
	s := &barrierServer{width: width, release: make(chan struct{})}
	s.srv = httptest.NewUnstartedServer(http.HandlerFunc(s.serve))
	s.srv.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			s.dials.Add(1)
		}
	}
	s.srv.Start()
	t.Cleanup(s.srv.Close)
	return s
}

func (s *barrierServer) serve(w http.ResponseWriter, r *http.Request) {
	_, _ = io.Copy(io.Discard, r.Body)
	s.mu.Lock()
	release := s.release
	s.arrived++
	if s.arrived == s.width {
		close(s.release)
		s.arrived, s.release = 0, make(chan struct{})
	}
	s.mu.Unlock()
	select {
	case <-release:
	case <-r.Context().Done():
		return
	case <-time.After(30 * time.Second):
		// Only a broken round gets here (fewer than width requests
		// arrived); the test then fails on the missing answers.
		http.Error(w, "the round never filled", http.StatusGatewayTimeout)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = io.WriteString(w, `{"ok":true}`)
}

// round sends width POSTs through rt at once, reads each answer to its end
// and returns the connections the server accepted meanwhile.
func (s *barrierServer) round(t *testing.T, rt http.RoundTripper) int64 {
	t.Helper()
	before := s.dials.Load()
	var wg sync.WaitGroup
	errs := make([]error, s.width)
	for i := range s.width {
		wg.Go(func() {
			req, err := http.NewRequest(http.MethodPost, s.srv.URL, strings.NewReader(`{}`))
			if err != nil {
				errs[i] = err
				return
			}
			resp, err := rt.RoundTrip(req)
			if err != nil {
				errs[i] = err
				return
			}
			defer resp.Body.Close()
			if _, err = io.Copy(io.Discard, resp.Body); err == nil && resp.StatusCode != http.StatusOK {
				err = &statusError{resp.StatusCode}
			}
			errs[i] = err
		})
	}
	wg.Wait()
	for _, err := range errs {
		require.NoError(t, err)
	}
	return s.dials.Load() - before
}

type statusError struct{ status int }

func (e *statusError) Error() string { return "HTTP " + http.StatusText(e.status) }

// R2.7: the sender's default transport keeps DefaultMaxIdleConnsPerHost
// idle connections per host, so that as many concurrent callers reuse
// their connections: a second round of 64 concurrent calls dials nothing.
func TestR2_7_DefaultTransportKeepsIdleConnectionsForConcurrentCallers(t *testing.T) {
	const width = 64
	require.GreaterOrEqual(t, sender.DefaultMaxIdleConnsPerHost, width)
	s := newBarrierServer(t, width)
	l := sender.New(nil)
	t.Cleanup(l.CloseIdleConnections)
	assert.Equal(t, int64(width), s.round(t, l), "the first round opens one connection per concurrent call")
	assert.Zero(t, s.round(t, l), "the second round reuses every connection of the first")
}
