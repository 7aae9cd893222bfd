package proxy

import (
	"bufio"
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/recourse-dev/recourse/recoursetest"
)

// served is a Handler run by Serve on a loopback listener.
type served struct {
	url    string
	addr   string
	stop   context.CancelFunc
	done   chan error
	client *http.Client
	logs   *syncBuffer
}

func serve(t *testing.T, up *recoursetest.Server, grace time.Duration) *served {
	t.Helper()
	s := &served{logs: &syncBuffer{}, done: make(chan error, 1)}
	log := slog.New(slog.NewJSONHandler(s.logs, nil))
	h, err := New(Config{Provider: "openai", Upstream: up.URL, Policy: testPolicy(&sleeps{}), Logger: log})
	require.NoError(t, err)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	s.addr = ln.Addr().String()
	s.url = "http://" + s.addr
	ctx, cancel := context.WithCancel(context.Background())
	s.stop = cancel
	go func() { s.done <- Serve(ctx, ln, h, grace, log) }()
	tr := &http.Transport{}
	s.client = &http.Client{Transport: tr}
	t.Cleanup(func() {
		cancel()
		tr.CloseIdleConnections()
	})
	return s
}

// open starts a streaming completion and returns its body after the first
// frame was read.
func (s *served) open(t *testing.T) (*bufio.Reader, io.Closer, string) {
	t.Helper()
	resp, err := s.client.Post(s.url+"/v1/chat/completions", "application/json", strings.NewReader(streamBody))
	require.NoError(t, err)
	br := bufio.NewReader(resp.Body)
	first, err := br.ReadString('\n')
	require.NoError(t, err)
	return br, resp.Body, first
}

// refused waits until the listener no longer accepts connections.
func (s *served) refused(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := net.Dial("tcp", s.addr)
		if err != nil {
			return
		}
		c.Close()
		if time.Now().After(deadline) {
			t.Fatal("the proxy still accepts connections after shutdown began")
		}
		time.Sleep(time.Millisecond)
	}
}

func (s *served) exit(t *testing.T) {
	t.Helper()
	select {
	case err := <-s.done:
		assert.NoError(t, err)
	case <-time.After(20 * time.Second):
		t.Fatal("Serve did not return")
	}
}

func TestShutdownLetsInFlightStreamsFinish(t *testing.T) {
	gate := make(chan struct{})
	events := recoursetest.OpenAIStream("Hel", "lo")
	// Gated after the first content chunk: the role chunk before it is
	// held until that output comes (R13.9).
	up := recoursetest.NewServer(recoursetest.SSE(events...).Gated(2, gate))
	defer up.Close()
	s := serve(t, up, time.Minute)
	br, body, first := s.open(t)
	defer body.Close()
	assert.Equal(t, strings.TrimSuffix(events[0], "\n"), first)
	s.stop()
	s.refused(t)
	close(gate)
	rest, err := io.ReadAll(br)
	require.NoError(t, err)
	assert.True(t, strings.HasSuffix(string(rest), "data: [DONE]\n\n"))
	s.exit(t)
}

func TestShutdownCutsAfterTheGracePeriod(t *testing.T) {
	gate := make(chan struct{})
	defer close(gate)
	events := recoursetest.OpenAIStream("Hel", "lo")
	up := recoursetest.NewServer(
		recoursetest.SSE(events...).Gated(2, gate),
		recoursetest.JSON(200, recoursetest.OpenAIChat("late")).Gated(-1, gate))
	defer up.Close()
	s := serve(t, up, 50*time.Millisecond)
	br, body, _ := s.open(t)
	defer body.Close()

	unary := make(chan result, 1)
	go func() {
		resp, err := s.client.Post(s.url+"/v1/chat/completions", "application/json", strings.NewReader(chatBody))
		if err != nil {
			unary <- result{err: err}
			return
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		unary <- result{status: resp.StatusCode, header: resp.Header, body: string(b), err: err}
	}()
	deadline := time.Now().Add(10 * time.Second)
	for up.Count() < 2 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	require.Equal(t, 2, up.Count())

	s.stop()
	rest, err := io.ReadAll(br)
	require.Error(t, err, "a cut stream does not end cleanly")
	assert.Contains(t, string(rest), `data: {"error":{"message":"`+ErrShutdown.Error()+`","type":"recourse_error","code":"shutdown"}}`, "R21.10")
	assert.NotContains(t, string(rest), "[DONE]")

	got := <-unary
	require.NoError(t, got.err)
	assert.Equal(t, http.StatusServiceUnavailable, got.status)
	assert.Equal(t, "cancelled", got.header.Get("X-Recourse-Outcome"))
	assert.Contains(t, got.body, ErrShutdown.Error())
	assert.Contains(t, got.body, `"code":"shutdown"`, "R21.10")
	s.exit(t)
	assert.Contains(t, s.logs.String(), "grace period over")
}

// R21.2: a connection that was opened but never sent a request holds
// nothing in flight, so a graceful stop neither waits for it nor logs a
// cut. net/http's Shutdown alone waits five seconds for such a connection:
// with a grace period far longer than that, Serve must still return well
// before those five seconds; with one shorter than that, the grace period
// must not run out on it and log a cut of nothing.
func TestR21_2_ShutdownDoesNotWaitForAnIdleConnection(t *testing.T) {
	for _, grace := range []time.Duration{time.Hour, 2 * time.Second} {
		t.Run(grace.String(), func(t *testing.T) {
			up := recoursetest.NewServer()
			defer up.Close()
			s := serve(t, up, grace)
			idle, err := net.Dial("tcp", s.addr)
			require.NoError(t, err)
			defer idle.Close()
			// And a keep-alive connection that served a request and is idle again.
			resp, err := s.client.Get(s.url + "/v1/models")
			require.NoError(t, err)
			_, _ = io.Copy(io.Discard, resp.Body)
			require.NoError(t, resp.Body.Close())

			s.stop()
			select {
			case err := <-s.done:
				require.NoError(t, err)
			case <-time.After(4 * time.Second):
				t.Fatal("Serve waited for a connection with no request in flight")
			}
			n, err := idle.Read(make([]byte, 1))
			assert.Zero(t, n)
			assert.ErrorIs(t, err, io.EOF, "the server closed the idle connection")
			logs := s.logs.String()
			assert.Contains(t, logs, `"msg":"stopped"`)
			assert.NotContains(t, logs, "grace period over", "nothing was in flight, nothing was cut")
		})
	}
}
