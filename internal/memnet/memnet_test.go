package memnet_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/recourse-dev/recourse/internal/memnet"
)

// A handler served on the memory network answers over real HTTP/1.1, a
// wait on the other side lets the bubble's clock move, and a closed
// listener refuses new connections as a closed port does.
func TestServeAnswersOnTheBubbleClockAndRefusesOnceClosed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv, l := memnet.Serve(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			time.Sleep(time.Hour) // a slow provider, on the bubble's clock
			_, _ = io.WriteString(w, r.Proto+" "+r.URL.Path)
		}))
		tr := l.Transport()
		defer tr.CloseIdleConnections()
		assert.Equal(t, "http://"+memnet.Host, srv.URL)

		start := time.Now()
		resp, err := (&http.Client{Transport: tr}).Get(srv.URL + "/v1/models")
		require.NoError(t, err)
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		require.NoError(t, resp.Body.Close())
		assert.Equal(t, "HTTP/1.1 /v1/models", string(b))
		assert.Equal(t, time.Hour, time.Since(start))

		srv.Close()
		_, err = l.Dial(context.Background(), "tcp", memnet.Host+":80")
		assert.True(t, errors.Is(err, syscall.ECONNREFUSED), "got %v", err)
		assert.Same(t, memnet.ErrRefused, err)
	})
}

// A dial whose context ends before the server accepts fails with the
// context's error.
func TestDialEndsWithItsContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := memnet.NewListener() // nobody accepts
		defer l.Close()
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_, err := l.Dial(ctx, "tcp", memnet.Host+":80")
		require.ErrorIs(t, err, context.DeadlineExceeded)
	})
}
