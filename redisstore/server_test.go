package redisstore_test

import (
	"context"
	"net"
	"os/exec"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

// redisServer is a redis-server this test started on a free loopback port
// with persistence off.
type redisServer struct {
	t    testing.TB
	port int
	cmd  *exec.Cmd
}

// redisBinary is where Debian's redis-server package installs it; .ci/run
// installs the package when it is missing.
func redisBinary(t testing.TB) string {
	if p, err := exec.LookPath("redis-server"); err == nil {
		return p
	}
	t.Fatal("redis-server is not installed (apt-get install -y redis-server); these tests need a real one")
	return ""
}

func freePort(t testing.TB) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// startRedis starts a server on a free port; it is stopped at cleanup.
func startRedis(t testing.TB) *redisServer {
	s := &redisServer{t: t, port: freePort(t)}
	s.start()
	t.Cleanup(s.stop)
	return s
}

func (s *redisServer) addr() string { return "127.0.0.1:" + strconv.Itoa(s.port) }

func (s *redisServer) start() {
	s.t.Helper()
	s.cmd = exec.Command(redisBinary(s.t), "--port", strconv.Itoa(s.port), "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "no", "--protected-mode", "no")
	require.NoError(s.t, s.cmd.Start())
	// Wait until it answers; bounded, and independent of how fast the
	// machine is beyond that bound.
	c := redis.NewClient(&redis.Options{Addr: s.addr(), MaxRetries: -1})
	defer c.Close()
	deadline := time.Now().Add(20 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		err := c.Ping(ctx).Err()
		cancel()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("redis-server on %s did not answer: %v", s.addr(), err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// stop kills the server and waits for it (idempotent).
func (s *redisServer) stop() {
	if s.cmd == nil || s.cmd.Process == nil {
		return
	}
	_ = s.cmd.Process.Kill()
	_ = s.cmd.Wait()
	s.cmd = nil
}
