package progress_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/recourse-dev/recourse/codec"
	"github.com/recourse-dev/recourse/event"
	"github.com/recourse-dev/recourse/internal/attempt"
	"github.com/recourse-dev/recourse/internal/stage/progress"
	"github.com/recourse-dev/recourse/layer"
	"github.com/recourse-dev/recourse/recoursetest"
)

// roundTripFunc adapts a function to http.RoundTripper.
type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

// send makes one ordinary request through the progress stage over next with
// a fresh attempt, reads the whole body (ignoring a read error, which a cut
// body has) and closes it. It returns the attempt and the round trip's
// error.
func send(t *testing.T, url string, next http.RoundTripper) (*attempt.Attempt, error) {
	t.Helper()
	a := attempt.New(event.Identity{WireAttempt: 1}, codec.RequestInfo{Operation: codec.Ordinary}, nil, nil, nil)
	req, err := http.NewRequestWithContext(attempt.With(context.Background(), a), http.MethodPost, url, strings.NewReader(`{}`))
	require.NoError(t, err)
	resp, err := progress.New().Wrap(next).RoundTrip(req)
	if err != nil {
		return a, err
	}
	_, _ = io.ReadAll(resp.Body)
	require.NoError(t, resp.Body.Close())
	return a, nil
}

// loopback returns a fresh transport closed at the end of the test.
func loopback(t *testing.T) *http.Transport {
	t.Helper()
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	return tr
}

// TestR13_2_ProgressCountsHeadersAndRawBytes: the progress stage marks the
// headers received and counts every raw body byte the attempt read, a cut
// body up to the cut, whatever the status (R13.2).
func TestR13_2_ProgressCountsHeadersAndRawBytes(t *testing.T) {
	body := recoursetest.OpenAIChat("Hello, world")
	errBody := recoursetest.OpenAIError("server_error", "", "busy")
	for _, tc := range []struct {
		name string
		step recoursetest.Step
		raw  int
	}{
		{"complete", recoursetest.JSON(200, body), len(body)},
		{"cut", recoursetest.JSON(200, body).Cut(25), 25},
		{"HTTP failure", recoursetest.JSON(503, errBody), len(errBody)},
		{"stream", recoursetest.SSE(recoursetest.OpenAIStream("Hel", "lo")...), len(strings.Join(recoursetest.OpenAIStream("Hel", "lo"), ""))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := recoursetest.NewServer(tc.step)
			t.Cleanup(srv.Close)

			a, err := send(t, srv.URL, loopback(t))

			require.NoError(t, err)
			p := a.Progress()
			assert.True(t, p.HeadersReceived)
			assert.Equal(t, int64(tc.raw), p.RawBytes)
			assert.Equal(t, event.PhaseBody, a.Phase(), "the attempt is in its body once headers arrived")
		})
	}
}

// TestR13_2_ProgressOfAFailureBeforeHeadersIsZero: a connection reset
// before any response byte leaves the attempt without headers and without
// raw bytes (R13.2).
func TestR13_2_ProgressOfAFailureBeforeHeadersIsZero(t *testing.T) {
	srv := recoursetest.NewServer(recoursetest.Reset())
	defer srv.Close()

	a, err := send(t, srv.URL, loopback(t))

	require.Error(t, err)
	assert.Equal(t, event.Progress{}, a.Progress())
}

// TestR13_2_ProgressCountsARefusedRedirectBody: a redirect the guard below
// refused arrived with headers, and its kept body counts as raw bytes
// (R13.2, R2.2).
func TestR13_2_ProgressCountsARefusedRedirectBody(t *testing.T) {
	refusal := &layer.RedirectError{
		Response: &http.Response{StatusCode: 307, Header: http.Header{"Location": {"/elsewhere"}}},
		Body:     []byte("moved"),
	}
	a, err := send(t, "http://127.0.0.1:1/", roundTripFunc(func(*http.Request) (*http.Response, error) {
		return nil, refusal
	}))

	var refused *layer.RedirectError
	require.True(t, errors.As(err, &refused))
	assert.Same(t, refusal, refused, "the refusal reaches the caller unchanged")
	p := a.Progress()
	assert.True(t, p.HeadersReceived)
	assert.Equal(t, int64(len("moved")), p.RawBytes)
}

// TestR13_2_ProgressWithoutAnAttemptPassesThrough: a request without
// attempt state (outside an engine) goes through untouched.
func TestR13_2_ProgressWithoutAnAttemptPassesThrough(t *testing.T) {
	body := recoursetest.OpenAIChat("hi")
	srv := recoursetest.NewServer(recoursetest.JSON(200, body))
	defer srv.Close()
	req, err := http.NewRequest(http.MethodPost, srv.URL, strings.NewReader(`{}`))
	require.NoError(t, err)

	resp, err := progress.New().Wrap(loopback(t)).RoundTrip(req)

	require.NoError(t, err)
	got, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	assert.Equal(t, body, string(got))
	assert.Equal(t, 1, srv.Count())
}
