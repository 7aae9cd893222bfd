package main

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/recourse-dev/recourse/recoursetest"
)

// redisProc is a redis-server started by a test on a loopback port, with
// persistence off; extra are further redis-server arguments.
type redisProc struct {
	t     testing.TB
	port  int
	extra []string
	cmd   *exec.Cmd
}

func newRedis(t testing.TB, extra ...string) *redisProc {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		t.Fatal("redis-server is not installed (apt-get install -y redis-server); the fleet tests need a real one")
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	r := &redisProc{t: t, port: l.Addr().(*net.TCPAddr).Port, extra: extra}
	l.Close()
	r.start(bin)
	t.Cleanup(r.kill)
	return r
}

func (r *redisProc) addr() string { return "127.0.0.1:" + strconv.Itoa(r.port) }

func (r *redisProc) start(bin string) {
	r.t.Helper()
	args := append([]string{"--port", strconv.Itoa(r.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"}, r.extra...)
	r.cmd = exec.Command(bin, args...)
	require.NoError(r.t, r.cmd.Start())
	c := redis.NewClient(&redis.Options{Addr: r.addr(), MaxRetries: -1})
	defer c.Close()
	deadline := time.Now().Add(20 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		err := c.Ping(ctx).Err()
		cancel()
		if err == nil || strings.Contains(err.Error(), "NOAUTH") {
			return
		}
		if time.Now().After(deadline) {
			r.t.Fatalf("redis-server on %s did not answer: %v", r.addr(), err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// restart starts the server again on the same port, empty.
func (r *redisProc) restart() {
	r.t.Helper()
	bin, err := exec.LookPath("redis-server")
	require.NoError(r.t, err)
	r.start(bin)
}

// kill stops the server (idempotent).
func (r *redisProc) kill() {
	if r.cmd == nil || r.cmd.Process == nil {
		return
	}
	_ = r.cmd.Process.Kill()
	_ = r.cmd.Wait()
	r.cmd = nil
}

// TestR21_4_RedisSetting: -redis takes an address or a redis:// or
// rediss:// URL; the credentials come from the environment only, and no
// error quotes the setting.
func TestR21_4_RedisSetting(t *testing.T) {
	o, err := redisOptions("127.0.0.1:6380", env(map[string]string{envRedisPassword: "pw-1", envRedisUsername: "fleet"}))
	require.NoError(t, err)
	assert.Equal(t, "127.0.0.1:6380", o.Addr)
	assert.Equal(t, "pw-1", o.Password)
	assert.Equal(t, "fleet", o.Username)
	assert.Nil(t, o.TLSConfig)
	assert.Equal(t, -1, o.MaxRetries, "the store's fail-fast client options")
	assert.Equal(t, 50*time.Millisecond, o.ReadTimeout)

	o, err = redisOptions("rediss://redis.internal:6390/2", env(map[string]string{envRedisPassword: "pw-2"}))
	require.NoError(t, err)
	assert.Equal(t, "redis.internal:6390", o.Addr)
	assert.Equal(t, 2, o.DB)
	assert.Equal(t, "pw-2", o.Password)
	require.NotNil(t, o.TLSConfig, "rediss is TLS")
	assert.Equal(t, "redis.internal", o.TLSConfig.ServerName)

	o, err = redisOptions("redis.internal:6379", env(map[string]string{envRedisTLS: "true"}))
	require.NoError(t, err)
	require.NotNil(t, o.TLSConfig)
	assert.Equal(t, "redis.internal", o.TLSConfig.ServerName)

	for _, bad := range []string{"redis://:sekrit-canary@127.0.0.1:6379", "redis://user:sekrit-canary@127.0.0.1:6379", "http://sekrit-canary@x:1", "sekrit-canary", "redis://127.0.0.1:6379/sekrit-canary", "redis://127.0.0.1:6379/0?pool_size=sekrit-canary", "redis://127.0.0.1:6379?dial_timeout=1s"} {
		_, err := redisOptions(bad, env(nil))
		require.Error(t, err, bad)
		assert.NotContains(t, err.Error(), "sekrit-canary")
		assert.Contains(t, err.Error(), "-redis")
	}
	_, err = redisOptions("127.0.0.1:6379", env(map[string]string{envRedisTLS: "maybe"}))
	require.Error(t, err)

	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-quota-fleet-cap", "5"}, "-quota-fleet-cap needs -redis"},
		{[]string{"-redis", "127.0.0.1:1", "-quota-fleet-cap", "-1"}, "-quota-fleet-cap is -1"},
		{[]string{"-redis", "127.0.0.1:1", "-quota=false"}, "-redis is set but -quota is false"},
	} {
		s, err := parse(append([]string{"-upstream", "https://api.openai.com"}, tc.args...), env(nil), &bytes.Buffer{})
		require.NoError(t, err)
		_, err = s.config()
		require.Error(t, err, tc.want)
		assert.Contains(t, err.Error(), tc.want)
	}
}

// TestR21_4_RedisCredentialsNeverInSafeOutputs is the privacy canary of
// the fleet: a password given in the URL is refused without being echoed;
// a wrong password from the environment makes the store fail open, and its
// failures are logged without it; with the right one the resend is
// counted in Redis, and the password is logged nowhere either.
func TestR21_4_RedisCredentialsNeverInSafeOutputs(t *testing.T) {
	const canary = "pw-canary-7f3a9c"
	rd := newRedis(t, "--requirepass", canary)

	cmd := exec.Command(binary(t), "-upstream", "https://api.openai.com", "-redis", "redis://:"+canary+"@"+rd.addr())
	cmd.Env = []string{}
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	require.ErrorAs(t, err, &ee)
	assert.Equal(t, 2, ee.ExitCode())
	assert.Contains(t, string(out), "RECOURSE_PROXY_REDIS_PASSWORD")
	assert.NotContains(t, string(out), canary)

	fail := recoursetest.JSON(503, recoursetest.OpenAIError("server_error", "", "overloaded"))
	up := recoursetest.NewServer(fail, fail, fail, fail)
	defer up.Close()
	post := func(p *proc, body string) int {
		t.Helper()
		resp, err := http.Post(p.url+"/v1/chat/completions", "application/json", strings.NewReader(body))
		require.NoError(t, err)
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		http.DefaultClient.CloseIdleConnections()
		return resp.StatusCode
	}

	wrong := start(t, []string{"-upstream", up.URL, "-listen", "127.0.0.1:0", "-base-delay", "0s", "-max-attempts", "2", "-redis", rd.addr()},
		"RECOURSE_PROXY_REDIS_PASSWORD=wrong-"+canary)
	assert.Equal(t, 503, post(wrong, `{"model":"m","messages":[{"role":"user","content":"one"}]}`), "failed open: the call ran its attempts")
	assert.Equal(t, 2, up.Count())
	require.NoError(t, wrong.cmd.Process.Signal(syscall.SIGTERM))
	assert.Equal(t, 0, wrong.wait(t))
	logs := wrong.log()
	assert.Contains(t, logs, "redis unavailable: the quota fails open")
	assert.Contains(t, logs, `"redis":"`+rd.addr()+`"`)
	assert.NotContains(t, logs, canary)

	right := start(t, []string{"-upstream", up.URL, "-listen", "127.0.0.1:0", "-base-delay", "0s", "-max-attempts", "2",
		"-redis", "redis://" + rd.addr(), "-quota-fleet-cap", "3"}, "RECOURSE_PROXY_REDIS_PASSWORD="+canary)
	assert.Equal(t, 503, post(right, `{"model":"m","messages":[{"role":"user","content":"two"}]}`), "a 503, one resend that failed too")
	c := redis.NewClient(&redis.Options{Addr: rd.addr(), Password: canary})
	defer c.Close()
	keys, err := c.Keys(context.Background(), "recourse:quota:*").Result()
	require.NoError(t, err)
	assert.NotEmpty(t, keys, "the failed resend stays counted against the fleet cap in Redis")
	require.NoError(t, right.cmd.Process.Signal(syscall.SIGTERM))
	assert.Equal(t, 0, right.wait(t))
	logs = right.log()
	assert.NotContains(t, logs, "redis unavailable")
	assert.NotContains(t, logs, canary)
	assert.Contains(t, logs, `"redis":"redis://`+rd.addr()+`","quota_fleet_cap":3`)
}
