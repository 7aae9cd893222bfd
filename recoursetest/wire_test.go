package recoursetest

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/url"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// rawRequest sends one raw HTTP/1.1 POST over a fresh connection and returns
// every byte the server sent until it closed the connection.
func rawRequest(t *testing.T, base, body string) (string, error) {
	t.Helper()
	u, err := url.Parse(base)
	require.NoError(t, err)
	conn, err := net.Dial("tcp", u.Host)
	require.NoError(t, err)
	defer conn.Close()
	require.NoError(t, conn.SetDeadline(time.Now().Add(deadline)))
	req := "POST /v1/chat/completions HTTP/1.1\r\nHost: " + u.Host +
		"\r\nContent-Type: application/json\r\nContent-Length: " + strconv.Itoa(len(body)) + "\r\n\r\n" + body
	_, err = io.WriteString(conn, req)
	require.NoError(t, err)
	b, err := io.ReadAll(bufio.NewReader(conn))
	return string(b), err
}

func TestWireCloseIdleAfterEachSendsConnectionClose(t *testing.T) {
	f := start(t, JSON(200, "{}"))
	f.srv.CloseIdleAfterEach(true)

	got, err := rawRequest(t, f.srv.URL, "{}")
	require.NoError(t, err, "read until server close (got %q)", got)
	require.Contains(t, got, "\r\nConnection: close\r\n")
	require.True(t, strings.HasSuffix(got, "\r\n\r\n{}"), "unexpected response %q", got)
}

func TestWireResetSendsNoByte(t *testing.T) {
	f := start(t, Reset())

	got, err := rawRequest(t, f.srv.URL, `{"a":1}`)
	require.Equal(t, "", got, "bytes before reset")
	require.False(t, runtime.GOOS == "linux" && !errors.Is(err, syscall.ECONNRESET), "read error = %v, want ECONNRESET", err)
	require.Equal(t, `{"a":1}`, string(f.srv.Requests()[0].Body), "recorded body")
}

func TestWireCutLeavesChunkedStreamUnterminated(t *testing.T) {
	f := start(t, SSE("data: 1\n\n", "data: 2\n\n").Cut(12))

	got, err := rawRequest(t, f.srv.URL, "{}")
	require.NoError(t, err, "read until server close")
	_, body, ok := strings.Cut(got, "\r\n\r\n")
	require.True(t, ok, "no header end in %q", got)
	require.Equal(t, "9\r\ndata: 1\n\n\r\n3\r\ndat\r\n", body, "chunked body on the wire")
}
