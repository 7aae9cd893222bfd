package quota_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/recourse-dev/recourse/chain"
	"github.com/recourse-dev/recourse/chat"
	"github.com/recourse-dev/recourse/codecs/openai"
	"github.com/recourse-dev/recourse/layer"
	"github.com/recourse-dev/recourse/layers/quota"
	"github.com/recourse-dev/recourse/layers/retry"
)

// clock is a settable wall clock shared by the quota and the policy.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func newClock() *clock { return &clock{now: time.Date(2026, 10, 10, 0, 0, 0, 0, time.UTC)} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// provider is a loopback OpenAI endpoint whose answer to the i-th request
// (1-based) is script(i): a status and extra header pairs; 200 answers a
// completion.
type provider struct {
	srv   *httptest.Server
	count atomic.Int64
}

type answer struct {
	status int
	header []string
}

func newProvider(t *testing.T, script func(i int) answer) *provider {
	p := &provider{}
	p.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		a := script(int(p.count.Add(1)))
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
	}))
	t.Cleanup(p.srv.Close)
	return p
}

func (p *provider) Count() int { return int(p.count.Load()) }

func always(status int, header ...string) func(int) answer {
	return func(int) answer { return answer{status: status, header: header} }
}

// rig is one chain with a quota, on injected clocks and a recording sleep.
type rig struct {
	t      *testing.T
	client *chain.Client
	mu     sync.Mutex
	events []layer.Event
	sleeps []time.Duration
}

// newRig builds a chain over p with q outermost and policy pol (its clocks
// and Sleep replaced by the test's).
func newRig(t *testing.T, p *provider, q *quota.Layer, clk *clock, pol retry.Policy) *rig {
	r := &rig{t: t}
	start := clk.Now()
	pol.WallClock = clk.Now
	pol.MonotonicClock = func() time.Duration { return clk.Now().Sub(start) }
	pol.Jitter = nil
	if pol.MaxAttempts > 1 {
		pol.Jitter = func() float64 { return 0 }
	}
	pol.Sleep = func(ctx context.Context, d time.Duration) error {
		r.mu.Lock()
		r.sleeps = append(r.sleeps, d)
		r.mu.Unlock()
		clk.Advance(d)
		return ctx.Err()
	}
	pol.OnEvent = func(ev layer.Event) error {
		r.mu.Lock()
		r.events = append(r.events, ev)
		r.mu.Unlock()
		return nil
	}
	opts := []chain.Option{chain.WithPolicy(pol)}
	if q != nil {
		opts = append(opts, chain.WithPerCall(q))
	}
	ch, err := chain.Default(openai.New(), opts...)
	require.NoError(t, err)
	r.client, err = chain.NewClient(p.srv.URL, ch, chain.WithAPIKey(canaryKey))
	require.NoError(t, err)
	return r
}

const canaryKey = "sk-canary-QUOTA-0123456789abcdef"
const canaryPrompt = "canary prompt: the secret recipe"

func (r *rig) call() error {
	_, err := r.client.Complete(context.Background(), &chat.Request{Model: "gpt-test",
		Messages: []chat.Message{{Role: chat.User, Content: canaryPrompt}}})
	return err
}

// types returns the event types recorded so far and forgets them.
func (r *rig) types() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]string, len(r.events))
	for i, ev := range r.events {
		out[i] = string(ev.Type)
	}
	r.events = nil
	return out
}

func (r *rig) take() []layer.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.events
	r.events = nil
	return out
}

func mustQuota(t *testing.T, opts ...quota.Option) *quota.Layer {
	t.Helper()
	q, err := quota.New(opts...)
	require.NoError(t, err)
	return q
}

func mustURL(t *testing.T, s string) *url.URL {
	t.Helper()
	u, err := url.Parse(s)
	require.NoError(t, err)
	return u
}
