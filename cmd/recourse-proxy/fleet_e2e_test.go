//go:build proxyfleet

package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestR21_4_FleetOnOneRedis runs two recourse-proxy processes on one real
// redis-server (append-only file on, fsync always) in front of an upstream
// in an outage (every answer 503). Each proxy alone would allow every call
// its resends (-quota-floor 100); the fleet cap (-quota-fleet-cap 4)
// holds for both together. Redis is killed mid-run: the proxies fail open,
// every call is still answered, promptly, and the outage is logged.
// Redis is restarted: it reloads the resends it had counted, so the cap
// holds exactly across the restart, and sharing resumes by itself. Run
// with make proxy-fleet.
func TestR21_4_FleetOnOneRedis(t *testing.T) {
	rd := newRedis(t, "--appendonly", "yes", "--appendfsync", "always", "--dir", t.TempDir())
	var hits atomic.Int64
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		hits.Add(1)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(503)
		io.WriteString(w, `{"error":{"message":"overloaded","type":"server_error","param":null,"code":null}}`)
	}))
	defer up.Close()
	args := []string{"-upstream", up.URL, "-listen", "127.0.0.1:0", "-max-attempts", "3", "-base-delay", "0s",
		"-quota-ratio", "0", "-quota-floor", "100", "-quota-window", "10m", "-quota-fleet-cap", "4", "-redis", rd.addr()}
	a, b := start(t, args), start(t, args)
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, Timeout: 30 * time.Second}
	n := 0
	call := func(p *proc) string {
		t.Helper()
		n++
		body := fmt.Sprintf(`{"model":"m","messages":[{"role":"user","content":"call %d"}]}`, n)
		resp, err := client.Post(p.url+"/v1/chat/completions", "application/json", strings.NewReader(body))
		require.NoError(t, err, "every call is answered")
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		assert.Equal(t, 503, resp.StatusCode)
		return resp.Header.Get("X-Recourse-Outcome")
	}
	counted := func() int64 {
		t.Helper()
		c := redis.NewClient(&redis.Options{Addr: rd.addr()})
		defer c.Close()
		keys, err := c.Keys(context.Background(), "recourse:quota:*:cap").Result()
		require.NoError(t, err)
		require.Len(t, keys, 1, "one upstream, one cap")
		k, err := c.ZCard(context.Background(), keys[0]).Result()
		require.NoError(t, err)
		return k
	}

	// Redis up: a call through a spends 2 of the fleet's 4 resends.
	assert.Equal(t, "exhausted", call(a))
	assert.Equal(t, int64(3), hits.Load())
	assert.Equal(t, int64(2), counted())

	// Redis killed: a call through b fails open (its own floor allows the
	// resends), is answered at once, and the outage is logged.
	rd.kill()
	began := time.Now()
	assert.Equal(t, "exhausted", call(b), "failed open")
	assert.Less(t, time.Since(began), 10*time.Second, "no call held by the outage of Redis beyond its bounded timeouts")
	assert.Equal(t, int64(6), hits.Load())
	for _, p := range []*proc{a, b} {
		waitLog(t, p, "redis unavailable: the quota fails open")
	}

	// Redis back with the 2 resends it had counted: the fleet allows 2
	// more, through either proxy, then refuses.
	rd.restart()
	waitClients(t, rd.addr(), 2)
	assert.Equal(t, "exhausted", call(b), "the 3rd and 4th resends of the fleet")
	assert.Equal(t, int64(9), hits.Load())
	for _, p := range []*proc{a, b, a, b} {
		assert.Equal(t, "quota_exhausted", call(p), "the fleet cap holds for both proxies")
	}
	assert.Equal(t, int64(9+4), hits.Load(), "first attempts only")
	assert.Equal(t, int64(4), counted(), "nothing counted was lost in the restart")

	for _, p := range []*proc{a, b} {
		require.NoError(t, p.cmd.Process.Signal(syscall.SIGTERM))
		assert.Equal(t, 0, p.wait(t))
		assert.LessOrEqual(t, strings.Count(p.log(), "redis unavailable"), 2, "an outage is logged at most every 30 s")
	}
}

// waitLog waits until p has logged want; bounded.
func waitLog(t *testing.T, p *proc, want string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !strings.Contains(p.log(), want) {
		if time.Now().After(deadline) {
			t.Fatalf("the proxy never logged %q:\n%s", want, p.log())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitClients waits until redis-server at addr has at least n clients
// besides the one asking; bounded, whatever the machine's speed below the
// bound. A restarted server sees the proxies again when their background
// refresh reconnects.
func waitClients(t *testing.T, addr string, n int) {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1})
	defer c.Close()
	deadline := time.Now().Add(20 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		info, err := c.Info(ctx, "clients").Result()
		cancel()
		if err == nil {
			for _, line := range strings.Split(info, "\n") {
				if v, ok := strings.CutPrefix(strings.TrimSpace(line), "connected_clients:"); ok {
					if k, _ := strconv.Atoi(v); k-1 >= n {
						return
					}
				}
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the proxies did not reconnect to redis-server within 20 s: %v %s", err, info)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
