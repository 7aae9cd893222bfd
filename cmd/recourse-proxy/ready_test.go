package main

import (
	"bufio"
	"bytes"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/recourse-dev/recourse/redisstore"
)

// fakeRedis answers PING with PONG and every other command with an error,
// over RESP: enough for a readiness check, without a Redis server.
func fakeRedis(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	var wg sync.WaitGroup
	t.Cleanup(func() { ln.Close(); wg.Wait() })
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer c.Close()
				br := bufio.NewReader(c)
				for {
					args, err := readCommand(br)
					if err != nil {
						return
					}
					reply := "-ERR unknown command\r\n"
					if len(args) > 0 && strings.EqualFold(args[0], "PING") {
						reply = "+PONG\r\n"
					}
					if _, err := io.WriteString(c, reply); err != nil {
						return
					}
				}
			}()
		}
	}()
	t.Cleanup(func() { ln.Close() })
	return ln.Addr().String()
}

// readCommand reads one RESP array of bulk strings.
func readCommand(br *bufio.Reader) ([]string, error) {
	line, err := br.ReadString('\n')
	if err != nil {
		return nil, err
	}
	n, err := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(line, "*")))
	if err != nil {
		return nil, err
	}
	args := make([]string, 0, n)
	for range n {
		if _, err := br.ReadString('\n'); err != nil { // $len
			return nil, err
		}
		v, err := br.ReadString('\n')
		if err != nil {
			return nil, err
		}
		args = append(args, strings.TrimSuffix(v, "\r\n"))
	}
	return args, nil
}

// R21.13: /readyz says whether the proxy is ready and whether Redis, when
// configured, answers; with ?require=redis an unanswering Redis is 503.
func TestR21_13_ReadyzSaysWhetherRedisAnswers(t *testing.T) {
	next := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusTeapot) })
	get := func(h http.Handler, target string) (int, string) {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, target, nil))
		return rec.Code, rec.Body.String()
	}

	code, body := get(readiness(nil, next), "/readyz")
	assert.Equal(t, http.StatusOK, code)
	assert.JSONEq(t, `{"status":"ready","redis":"off"}`, body)
	code, _ = get(readiness(nil, next), "/v1/models")
	assert.Equal(t, http.StatusTeapot, code, "other paths go to the proxy")

	up := newFleet(redisstore.ClientOptions(fakeRedis(t)), nil)
	defer up.Close()
	code, body = get(readiness(up, next), "/readyz")
	assert.Equal(t, http.StatusOK, code)
	assert.JSONEq(t, `{"status":"ready","redis":"ok"}`, body)

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	ln.Close() // nothing answers there
	down := newFleet(redisstore.ClientOptions(addr), nil)
	defer down.Close()
	code, body = get(readiness(down, next), "/readyz")
	assert.Equal(t, http.StatusOK, code, "the quota fails open: the proxy still serves")
	assert.JSONEq(t, `{"status":"ready","redis":"unavailable"}`, body)
	code, body = get(readiness(down, next), "/readyz?require=redis")
	assert.Equal(t, http.StatusServiceUnavailable, code)
	assert.JSONEq(t, `{"status":"not ready","redis":"unavailable"}`, body)
}

// R21.13: -version prints the module version from the build information
// and exits 0; RECOURSE_PROXY_VERSION set for another purpose is ignored.
func TestR21_13_VersionFlag(t *testing.T) {
	var out, errOut bytes.Buffer
	code := run([]string{"-version"}, env(map[string]string{"RECOURSE_PROXY_VERSION": "1.2.3"}), &out, &errOut)
	assert.Equal(t, 0, code, errOut.String())
	assert.Regexp(t, `^recourse-proxy \S+ \(recourse \S+, `+regexp.QuoteMeta(runtime.Version())+`\)\n$`, out.String())
	s, err := parse([]string{"-upstream", "http://127.0.0.1:1"}, env(map[string]string{"RECOURSE_PROXY_VERSION": "1.2.3"}), &bytes.Buffer{})
	require.NoError(t, err, "the variable is no setting")
	assert.False(t, s.version)
}
