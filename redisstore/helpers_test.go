package redisstore_test

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/recourse-dev/recourse/chain"
	"github.com/recourse-dev/recourse/chat"
	"github.com/recourse-dev/recourse/client"
	"github.com/recourse-dev/recourse/codecs/openai"
	"github.com/recourse-dev/recourse/event"
	"github.com/recourse-dev/recourse/layers/quota"
	"github.com/recourse-dev/recourse/layers/retry"
	"github.com/recourse-dev/recourse/redisstore"
)

// TestMain runs the child of the two-process test when asked to, and
// otherwise fails the package if any goroutine outlives the tests.
func TestMain(m *testing.M) {
	if os.Getenv(childEnv) != "" {
		os.Exit(child())
	}
	goleak.VerifyTestMain(m)
}

// provider is a loopback OpenAI endpoint whose answer to the i-th request
// (1-based) is script(i): a status and header pairs.
type provider struct {
	srv   *httptest.Server
	count atomic.Int64
}

type answer struct {
	status int
	header []string
}

func newProvider(t testing.TB, script func(i int) answer) *provider {
	p := &provider{}
	p.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		serve(w, script(int(p.count.Add(1))))
	}))
	t.Cleanup(p.srv.Close)
	return p
}

func serve(w http.ResponseWriter, a answer) {
	for i := 0; i+1 < len(a.header); i += 2 {
		w.Header().Set(a.header[i], a.header[i+1])
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(a.status)
	if a.status == 200 {
		w.Write([]byte(`{"id":"chatcmpl-1","object":"chat.completion","model":"gpt-test","choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}]}`))
		return
	}
	w.Write([]byte(`{"error":{"message":"busy","type":"server_error","code":"server_error"}}`))
}

func (p *provider) Count() int { return int(p.count.Load()) }

func always(status int, header ...string) func(int) answer {
	return func(int) answer { return answer{status: status, header: header} }
}

// counter is a go-redis hook counting round trips: a command or a pipeline
// is one. A new connection's handshake (HELLO, CLIENT) is not counted: it
// happens once per pooled connection, not per operation.
type counter struct{ n atomic.Int64 }

func (c *counter) DialHook(next redis.DialHook) redis.DialHook {
	return func(ctx context.Context, network, addr string) (net.Conn, error) { return next(ctx, network, addr) }
}
func (c *counter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if n := cmd.Name(); n != "hello" && n != "client" { // a new connection's handshake
			c.n.Add(1)
		}
		return next(ctx, cmd)
	}
}
func (c *counter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if len(cmds) > 0 && cmds[0].Name() != "client" { // the handshake's CLIENT SETINFO
			c.n.Add(1)
		}
		return next(ctx, cmds)
	}
}

// newStore returns a store on its own client (as another process would
// have), with a round-trip counter; both are closed at cleanup.
func newStore(t testing.TB, addr string, opts ...redisstore.Option) (*redisstore.Store, *counter) {
	rdb := redis.NewClient(testClientOptions(addr))
	c := &counter{}
	rdb.AddHook(c)
	s := redisstore.New(rdb, append([]redisstore.Option{redisstore.WithTimeout(testTimeout)}, opts...)...)
	t.Cleanup(func() {
		s.Close()
		rdb.Close()
	})
	return s, c
}

// testTimeout bounds the store's operations in tests whose Redis is up: long
// enough that a loaded machine never fails them; a Redis that is down
// refuses connections at once whatever the bound.
const testTimeout = 10 * time.Second

// testClientOptions are redisstore.ClientOptions with testTimeout.
func testClientOptions(addr string) *redis.Options {
	o := redisstore.ClientOptions(addr)
	o.DialTimeout, o.ReadTimeout, o.WriteTimeout, o.PoolTimeout = testTimeout, testTimeout, testTimeout, testTimeout
	return o
}

// rig is one chain with a quota over a Redis store; its Sleep records the
// delay and returns at once.
type rig struct {
	client *client.Client
	mu     sync.Mutex
	events []event.Event
}

func newRig(t testing.TB, p *provider, q *quota.Layer, pol retry.Policy) *rig {
	r := &rig{}
	pol.Jitter = nil
	if pol.MaxAttempts > 1 {
		pol.Jitter = func() float64 { return 0 }
	}
	pol.Sleep = func(ctx context.Context, _ time.Duration) error { return ctx.Err() }
	pol.OnEvent = func(ev event.Event) error {
		r.mu.Lock()
		r.events = append(r.events, ev)
		r.mu.Unlock()
		return nil
	}
	ch, err := chain.Default(openai.New(), chain.WithPolicy(pol), chain.WithPerCall(q))
	require.NoError(t, err)
	r.client, err = client.New(p.srv.URL, ch, client.WithAPIKey("sk-canary-redis-0123456789"))
	require.NoError(t, err)
	return r
}

func (r *rig) call() error {
	_, err := r.client.Complete(context.Background(), &chat.Request{Model: "gpt-test",
		Messages: []chat.Message{{Role: chat.User, Content: "canary prompt"}}})
	return err
}

// take returns the events recorded so far and forgets them.
func (r *rig) take() []event.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.events
	r.events = nil
	return out
}

// lifecycle returns evs without the breaker events, which report a change
// of the upstream's breaker (a cooldown the store shared) beside the
// lifecycle the tests read in order.
func lifecycle(evs []event.Event) []event.Event {
	var out []event.Event
	for _, ev := range evs {
		if ev.Type != event.Breaker {
			out = append(out, ev)
		}
	}
	return out
}

func count(evs []event.Event, typ event.Type) int {
	n := 0
	for _, ev := range evs {
		if ev.Type == typ {
			n++
		}
	}
	return n
}

func mustQuota(t testing.TB, opts ...quota.Option) *quota.Layer {
	q, err := quota.New(opts...)
	require.NoError(t, err)
	return q
}
