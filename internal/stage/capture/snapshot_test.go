package capture_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/recourse-dev/recourse/codec"
	"github.com/recourse-dev/recourse/event"
	"github.com/recourse-dev/recourse/internal/attempt"
	"github.com/recourse-dev/recourse/internal/stage/capture"
	"github.com/recourse-dev/recourse/layer"
	"github.com/recourse-dev/recourse/recoursetest"
)

// roundTripFunc adapts a function to http.RoundTripper.
type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

// refuseRedirects stands for the redirect guard below the capture stage: it
// hands a 3xx up as the *layer.RedirectError the guard returns, with the
// body it read.
func refuseRedirects(next http.RoundTripper) http.RoundTripper {
	return roundTripFunc(func(req *http.Request) (*http.Response, error) {
		resp, err := next.RoundTrip(req)
		if err != nil || !layer.IsRedirect(resp.StatusCode) {
			return resp, err
		}
		body, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		return nil, &layer.RedirectError{Response: resp, Body: body}
	})
}

// snapshots records the snapshots a WireHook receives; it is safe for
// concurrent use.
type snapshots struct {
	mu  sync.Mutex
	got []layer.WireSnapshot
}

func (s *snapshots) hook(_ context.Context, snap layer.WireSnapshot) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.got = append(s.got, snap)
	return nil
}

func (s *snapshots) all() []layer.WireSnapshot {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]layer.WireSnapshot(nil), s.got...)
}

// postOnce sends one ordinary POST of body through the capture stage over
// next, with an attempt whose hook records into rec, reads the whole
// response body (ignoring a read error, which a cut body has) and closes
// it. It returns the round trip's error.
func postOnce(t *testing.T, url string, next http.RoundTripper, rec *snapshots, body string) error {
	t.Helper()
	a := attempt.New(event.Identity{WireAttempt: 1}, codec.RequestInfo{Operation: codec.Ordinary}, nil, rec.hook, nil)
	ctx := attempt.With(context.Background(), a)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url+"/v1/chat/completions", strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	resp, err := capture.New().Wrap(next).RoundTrip(req)
	if err != nil {
		return err
	}
	_, _ = io.ReadAll(resp.Body)
	require.NoError(t, resp.Body.Close())
	return nil
}

// TestR12_1_ResponseSnapshots: the capture stage gives every answer one
// response snapshot holding its status, headers and the exact bytes that
// arrived, Complete only when the body reached HTTP EOF: an HTTP failure,
// a cut 2xx body, a reset before headers (no status, no headers) and a
// redirect the guard below refused (R12.1, R12.2).
func TestR12_1_ResponseSnapshots(t *testing.T) {
	errBody := recoursetest.OpenAIError("server_error", "server_error", "busy")
	okBody := recoursetest.OpenAIChat("Hello, world")
	const request = `{"model":"m","messages":[{"role":"user","content":"hi"}]}`
	rows := []struct {
		name     string
		step     recoursetest.Step
		status   int
		bytes    string
		complete bool
		header   string // a response header that must be in the snapshot
		failed   bool   // the round trip itself fails
	}{
		{"HTTP failure", recoursetest.JSON(503, errBody, "Retry-After", "1"), 503, errBody, true, "Retry-After", false},
		{"permanent HTTP failure", recoursetest.JSON(400, errBody), 400, errBody, true, "Content-Type", false},
		{"cut 2xx body", recoursetest.JSON(200, okBody).Cut(25), 200, okBody[:25], false, "Content-Type", false},
		{"reset before headers", recoursetest.Reset(), 0, "", false, "", true},
		{"refused redirect", recoursetest.Redirect(302, "http://127.0.0.1:1/elsewhere"), 302, "", true, "Location", true},
		{"provider error in a 200", recoursetest.JSON(200, errBody), 200, errBody, true, "Content-Type", false},
	}
	for _, tc := range rows {
		t.Run(tc.name, func(t *testing.T) {
			srv := recoursetest.NewServer(tc.step)
			t.Cleanup(srv.Close)
			tr := &http.Transport{}
			t.Cleanup(tr.CloseIdleConnections)
			rec := &snapshots{}

			err := postOnce(t, srv.URL, refuseRedirects(tr), rec, request)
			if tc.failed {
				require.Error(t, err)
			} else {
				require.NoError(t, err)
			}

			snaps := rec.all()
			require.Len(t, snaps, 2, "R12.2: one request and one response snapshot")
			q, s := snaps[0], snaps[1]
			assert.Equal(t, layer.DirectionRequest, q.Direction)
			assert.Equal(t, request, string(q.Bytes), "the request snapshot is the bytes sent")
			assert.True(t, q.Complete)
			assert.Equal(t, layer.DirectionResponse, s.Direction)
			assert.Equal(t, 1, s.WireAttempt, "the snapshot names the attempt")
			assert.Equal(t, 0, s.Seq)
			assert.Equal(t, tc.status, s.Status)
			assert.Equal(t, tc.bytes, string(s.Bytes))
			assert.Equal(t, tc.complete, s.Complete)
			if tc.header != "" {
				assert.NotEmpty(t, s.Header.Get(tc.header))
			} else {
				assert.Empty(t, s.Header, "no headers arrived")
			}
			if tc.status == 302 {
				var refused *layer.RedirectError
				assert.True(t, errors.As(err, &refused), "the refusal reaches the caller unchanged")
			}
		})
	}
}

// readLog is a RoundTripper that logs the bytes of every Read of the
// response body below the capture stage, the pieces the wire plane
// received.
type readLog struct {
	next  http.RoundTripper
	mu    sync.Mutex
	reads [][]byte
}

func (l *readLog) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := l.next.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	resp.Body = &loggedBody{ReadCloser: resp.Body, l: l}
	return resp, nil
}

func (l *readLog) all() [][]byte {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([][]byte(nil), l.reads...)
}

type loggedBody struct {
	io.ReadCloser
	l *readLog
}

func (b *loggedBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if n > 0 {
		b.l.mu.Lock()
		b.l.reads = append(b.l.reads, append([]byte(nil), p[:n]...))
		b.l.mu.Unlock()
	}
	return n, err
}

// TestR12_2_StreamCaptureOneSnapshotPerReceivedChunk: for a streaming
// attempt the capture stage gives one response snapshot per received byte
// chunk, exactly the bytes of that read with Seq counting from 0, then an
// empty end marker whose Complete says whether the body reached HTTP EOF:
// true for a stream the server ended, false for one it cut (R12.2).
func TestR12_2_StreamCaptureOneSnapshotPerReceivedChunk(t *testing.T) {
	events := recoursetest.OpenAIStream("Hel", "lo")
	for _, tc := range []struct {
		name     string
		step     recoursetest.Step
		sent     string
		complete bool
	}{
		{"ended", recoursetest.SSE(events...), strings.Join(events, ""), true},
		{"cut", recoursetest.SSE(events...).CutEvents(2), events[0] + events[1], false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := recoursetest.NewServer(tc.step)
			t.Cleanup(srv.Close)
			tr := &http.Transport{}
			t.Cleanup(tr.CloseIdleConnections)
			log := &readLog{next: tr}
			rec := &snapshots{}
			a := attempt.New(event.Identity{WireAttempt: 1}, codec.RequestInfo{Operation: codec.Streaming}, nil, rec.hook, nil)
			req, err := http.NewRequestWithContext(attempt.With(context.Background(), a), http.MethodPost, srv.URL, strings.NewReader(`{}`))
			require.NoError(t, err)

			resp, err := capture.New().Wrap(log).RoundTrip(req)
			require.NoError(t, err)
			_, _ = io.ReadAll(resp.Body)
			require.NoError(t, resp.Body.Close())

			snaps := rec.all()
			require.GreaterOrEqual(t, len(snaps), 3, "a request snapshot, at least one chunk and the end marker")
			assert.Equal(t, layer.DirectionRequest, snaps[0].Direction)
			chunks, end := snaps[1:len(snaps)-1], snaps[len(snaps)-1]
			var got [][]byte
			var body strings.Builder
			for i, s := range chunks {
				assert.Equal(t, layer.DirectionResponse, s.Direction)
				assert.Equal(t, i, s.Seq, "Seq counts the attempt's snapshots from 0")
				assert.Equal(t, 200, s.Status)
				assert.Equal(t, "text/event-stream", s.Header.Get("Content-Type"))
				assert.False(t, s.Complete, "only the end marker reports completeness")
				got = append(got, s.Bytes)
				body.Write(s.Bytes)
			}
			assert.Equal(t, log.all(), got, "one snapshot per received byte chunk, exact bytes")
			assert.Equal(t, tc.sent, body.String(), "the chunks rebuild what the server sent")
			assert.Equal(t, len(chunks), end.Seq)
			assert.NotNil(t, end.Bytes)
			assert.Empty(t, end.Bytes, "the end marker is empty")
			assert.Equal(t, tc.complete, end.Complete)
		})
	}
}
