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
)

// rawRequest sends one raw HTTP/1.1 POST over a fresh connection and returns
// every byte the server sent until it closed the connection.
func rawRequest(t *testing.T, base, body string) (string, error) {
	t.Helper()
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := net.Dial("tcp", u.Host)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if err := conn.SetDeadline(time.Now().Add(deadline)); err != nil {
		t.Fatal(err)
	}
	req := "POST /v1/chat/completions HTTP/1.1\r\nHost: " + u.Host +
		"\r\nContent-Type: application/json\r\nContent-Length: " + strconv.Itoa(len(body)) + "\r\n\r\n" + body
	if _, err := io.WriteString(conn, req); err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(bufio.NewReader(conn))
	return string(b), err
}

func TestWireCloseIdleAfterEachSendsConnectionClose(t *testing.T) {
	f := start(t, JSON(200, "{}"))
	f.srv.CloseIdleAfterEach(true)

	got, err := rawRequest(t, f.srv.URL, "{}")
	if err != nil {
		t.Fatalf("read until server close: %v (got %q)", err, got)
	}
	if !strings.Contains(got, "\r\nConnection: close\r\n") {
		t.Fatalf("no Connection: close header in %q", got)
	}
	if !strings.HasSuffix(got, "\r\n\r\n{}") {
		t.Fatalf("unexpected response %q", got)
	}
}

func TestWireResetSendsNoByte(t *testing.T) {
	f := start(t, Reset())

	got, err := rawRequest(t, f.srv.URL, `{"a":1}`)
	eq(t, got, "", "bytes before reset")
	if runtime.GOOS == "linux" && !errors.Is(err, syscall.ECONNRESET) {
		t.Fatalf("read error = %v, want ECONNRESET", err)
	}
	eq(t, string(f.srv.Requests()[0].Body), `{"a":1}`, "recorded body")
}

func TestWireCutLeavesChunkedStreamUnterminated(t *testing.T) {
	f := start(t, SSE("data: 1\n\n", "data: 2\n\n").Cut(12))

	got, err := rawRequest(t, f.srv.URL, "{}")
	if err != nil {
		t.Fatalf("read until server close: %v", err)
	}
	_, body, ok := strings.Cut(got, "\r\n\r\n")
	if !ok {
		t.Fatalf("no header end in %q", got)
	}
	eq(t, body, "9\r\ndata: 1\n\n\r\n3\r\ndat\r\n", "chunked body on the wire")
}
