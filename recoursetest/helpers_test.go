package recoursetest

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/stretchr/testify/require"
)

// deadline bounds every wait for something that must happen.
const deadline = 5 * time.Second

// quiet is how long a test watches for something that must not happen yet.
const quiet = 50 * time.Millisecond

// fixture is a Server with a dedicated client.
type fixture struct {
	srv    *Server
	tr     *http.Transport
	client *http.Client
}

// start starts a Server with steps and a client that does not follow
// redirects. Cleanup closes both and verifies that no goroutine leaked.
func start(t *testing.T, steps ...Step) *fixture {
	t.Helper()
	f := &fixture{srv: NewServer(steps...), tr: &http.Transport{}}
	f.client = &http.Client{
		Transport: f.tr,
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		},
	}
	t.Cleanup(func() {
		f.srv.Close()
		f.tr.CloseIdleConnections()
		goleak.VerifyNone(t)
	})
	return f
}

// post sends a POST with body to path on the fixture's server.
func (f *fixture) post(t *testing.T, ctx context.Context, path, body string) (*http.Response, error) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, f.srv.URL+path, bytes.NewReader([]byte(body)))
	require.NoError(t, err, "new request")
	req.Header.Set("Content-Type", "application/json")
	return f.client.Do(req)
}

// mustPost is post that fails the test on a transport error.
func (f *fixture) mustPost(t *testing.T, path, body string) *http.Response {
	t.Helper()
	resp, err := f.post(t, context.Background(), path, body)
	require.NoError(t, err, "POST %s", path)
	return resp
}

// readAll reads and closes the body.
func readAll(t *testing.T, resp *http.Response) ([]byte, error) {
	t.Helper()
	defer resp.Body.Close()
	return io.ReadAll(resp.Body)
}

// mustReadAll reads and closes the body and fails the test on error.
func mustReadAll(t *testing.T, resp *http.Response) string {
	t.Helper()
	b, err := readAll(t, resp)
	require.NoError(t, err, "read body (got %q)", b)
	return string(b)
}

// within waits for ch to deliver a value within deadline.
func within[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(deadline):
		require.FailNowf(t, "timed out", "waiting for %s", what)
		panic("unreachable")
	}
}

// stillPending fails the test if ch delivers a value within quiet.
func stillPending[T any](t *testing.T, ch <-chan T, what string) {
	t.Helper()
	select {
	case v := <-ch:
		require.FailNowf(t, "too early", "%s happened: %#v", what, v)
	case <-time.After(quiet):
	}
}
