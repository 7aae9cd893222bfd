package capture_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/recourse-dev/recourse/codec"
	"github.com/recourse-dev/recourse/event"
	"github.com/recourse-dev/recourse/internal/attempt"
	"github.com/recourse-dev/recourse/internal/stage/capture"
	"github.com/recourse-dev/recourse/layer"
)

// get sends a GET through the capture layer with an attempt whose hook is
// onWire, and returns the response.
func get(t *testing.T, url string, onWire layer.WireHook) *http.Response {
	t.Helper()
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	a := attempt.New(event.Identity{WireAttempt: 1}, codec.RequestInfo{Operation: codec.Ordinary}, nil, onWire, nil)
	req, err := http.NewRequestWithContext(attempt.With(context.Background(), a), http.MethodGet, url, nil)
	require.NoError(t, err)
	resp, err := capture.New().Wrap(tr).RoundTrip(req)
	require.NoError(t, err)
	return resp
}

// TestR4_9_ReaderThatKeepsTheBytesHandsThemOver: an ordinary body whose
// reader keeps the bytes (attempt.BodyCapture) is snapshotted once from what
// the reader hands over — its own copy, complete at HTTP EOF, not complete
// when refused for its size — and a failing hook is returned as a
// *layer.CaptureError, also by a later call; a reader that closes without
// handing over leaves a snapshot without bytes (R4.9, R12.2, R12.3).
func TestR4_9_ReaderThatKeepsTheBytesHandsThemOver(t *testing.T) {
	const body = `{"ok":true}`
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, body)
	}))
	defer srv.Close()
	var snaps []layer.WireSnapshot
	record := func(_ context.Context, s layer.WireSnapshot) error {
		if s.Direction == layer.DirectionResponse {
			snaps = append(snaps, s)
		}
		return nil
	}

	t.Run("complete", func(t *testing.T) {
		snaps = nil
		resp := get(t, srv.URL, record)
		bc, ok := resp.Body.(attempt.BodyCapture)
		require.True(t, ok, "the body of a captured response is a attempt.BodyCapture")
		bc.KeepBytes()
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		assert.Empty(t, snaps, "nothing is snapshotted before the reader hands over")
		require.NoError(t, bc.CaptureBody(b, false))
		require.NoError(t, resp.Body.Close())
		require.Len(t, snaps, 1, "one response snapshot")
		assert.Equal(t, body, string(snaps[0].Bytes))
		assert.True(t, snaps[0].Complete)
		b[0] = 'X'
		assert.Equal(t, body, string(snaps[0].Bytes), "the snapshot holds its own copy")
	})

	t.Run("over", func(t *testing.T) {
		snaps = nil
		resp := get(t, srv.URL, record)
		bc := resp.Body.(attempt.BodyCapture)
		bc.KeepBytes()
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		require.NoError(t, bc.CaptureBody(b[:4], true))
		require.NoError(t, resp.Body.Close())
		require.Len(t, snaps, 1)
		assert.Equal(t, body[:4], string(snaps[0].Bytes))
		assert.False(t, snaps[0].Complete, "a body refused for its size is not complete")
	})

	t.Run("hook fails", func(t *testing.T) {
		boom := errors.New("archive unavailable")
		resp := get(t, srv.URL, func(_ context.Context, s layer.WireSnapshot) error {
			if s.Direction == layer.DirectionResponse {
				return boom
			}
			return nil
		})
		bc := resp.Body.(attempt.BodyCapture)
		bc.KeepBytes()
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		err = bc.CaptureBody(b, false)
		var ce *layer.CaptureError
		require.ErrorAs(t, err, &ce)
		assert.Equal(t, boom, ce.Cause)
		assert.Equal(t, layer.DirectionResponse, ce.Direction)
		assert.Equal(t, err, bc.CaptureBody(b, false), "a later call returns the same result")
		_ = resp.Body.Close()
	})

	t.Run("closed without handing over", func(t *testing.T) {
		snaps = nil
		resp := get(t, srv.URL, record)
		resp.Body.(attempt.BodyCapture).KeepBytes()
		_, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		require.NoError(t, resp.Body.Close())
		require.Len(t, snaps, 1, "the capture still ends")
		assert.Empty(t, snaps[0].Bytes)
		assert.False(t, snaps[0].Complete)
	})

	t.Run("default keeps its own copy", func(t *testing.T) {
		snaps = nil
		resp := get(t, srv.URL, record)
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		require.NoError(t, resp.Body.(attempt.BodyCapture).CaptureBody([]byte("ignored"), false), "a no-op without KeepBytes")
		require.NoError(t, resp.Body.Close())
		require.Len(t, snaps, 1)
		assert.Equal(t, body, string(b))
		assert.Equal(t, body, string(snaps[0].Bytes))
		assert.True(t, snaps[0].Complete)
	})
}
