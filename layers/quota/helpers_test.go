package quota_test

import (
	"context"
	"net/url"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/require"

	"github.com/recourse-dev/recourse/chain"
	"github.com/recourse-dev/recourse/chat"
	"github.com/recourse-dev/recourse/client"
	"github.com/recourse-dev/recourse/codecs/openai"
	"github.com/recourse-dev/recourse/event"
	"github.com/recourse-dev/recourse/internal/rigtest"
	"github.com/recourse-dev/recourse/layers/quota"
	"github.com/recourse-dev/recourse/layers/retry"
	"github.com/recourse-dev/recourse/recoursetest"
)

// The tests of timing run inside a testing/synctest bubble: the quota's
// windows, the store's wall time and the policy's clocks and sleeps are all
// the bubble's clock, which time.Sleep in the test advances at once.

// memKey is the store key of a memory server's upstream
// (recoursetest.NewMemoryServer): scheme, host and the default port.
func memKey(p *recoursetest.Server) string { return p.URL + ":80" }

// newProvider starts a scripted provider on the in-memory network, answering
// the i-th request with steps[i]; call it inside the test's bubble. It is
// closed when the test ends.
func newProvider(t *testing.T, steps ...recoursetest.Step) *recoursetest.Server {
	t.Helper()
	srv := recoursetest.NewMemoryServer(steps...)
	t.Cleanup(srv.Close)
	return srv
}

// unavailable is a 503 answer with an OpenAI error body, with extra header
// pairs.
func unavailable(header ...string) recoursetest.Step {
	return recoursetest.JSON(503, recoursetest.OpenAIError("server_error", "server_error", "busy"), header...)
}

// rateLimited is a 429 answer with a Retry-After of seconds.
func rateLimited(seconds string) recoursetest.Step {
	return recoursetest.JSON(429, recoursetest.OpenAIError("rate_limit_exceeded", "rate_limit_exceeded", "slow down"),
		"Retry-After", seconds)
}

// completion is a 200 answer with a completion.
func completion() recoursetest.Step {
	return recoursetest.JSON(200, recoursetest.OpenAIChat("ok"))
}

// alternate answers 503, then 200, n times over.
func alternate(n int) []recoursetest.Step {
	var steps []recoursetest.Step
	for range n {
		steps = append(steps, unavailable(), completion())
	}
	return steps
}

// repeat is n copies of st.
func repeat(st recoursetest.Step, n int) []recoursetest.Step { return rigtest.Repeat(st, n) }

// rig is one chain with a quota over a memory server, made inside the
// test's bubble, recording the engine's events.
type rig struct {
	t      *testing.T
	client *client.Client
	mu     sync.Mutex
	events []event.Event
}

// newRig builds a chain over srv with q outermost and policy pol: its
// clocks and Sleep stay the bubble's (pol leaves them nil), its jitter is
// 0 so that every delay is exact.
func newRig(t *testing.T, srv *recoursetest.Server, q *quota.Layer, pol retry.Policy) *rig {
	r := &rig{t: t}
	pol.Jitter = nil
	if pol.MaxAttempts > 1 {
		pol.Jitter = func() float64 { return 0 }
	}
	pol.OnEvent = func(ev event.Event) error {
		r.mu.Lock()
		r.events = append(r.events, ev)
		r.mu.Unlock()
		return nil
	}
	opts := []chain.Option{chain.WithPolicy(pol), chain.WithTransport(srv.Transport())}
	if q != nil {
		opts = append(opts, chain.WithPerCall(q))
	}
	ch, err := chain.Default(openai.New(), opts...)
	require.NoError(t, err)
	r.client, err = client.New(srv.URL, ch, client.WithAPIKey(canaryKey))
	require.NoError(t, err)
	return r
}

const canaryKey = "sk-canary-QUOTA-0123456789abcdef"
const canaryPrompt = "canary prompt: the secret recipe"

func (r *rig) call() error {
	return r.callCtx(context.Background())
}

func (r *rig) callCtx(ctx context.Context) error {
	_, err := r.client.Complete(ctx, &chat.Request{Model: "gpt-test",
		Messages: []chat.Message{{Role: chat.User, Content: canaryPrompt}}})
	return err
}

// callHeldAt makes a call while the provider holds its n-th request at
// gate (a step made with Gated(-1, gate)): once every goroutine of the
// bubble is blocked and the provider has seen n requests, it runs during,
// opens the gate and returns the call's error.
func (r *rig) callHeldAt(srv *recoursetest.Server, n int, gate chan struct{}, during func()) error {
	done := make(chan error, 1)
	go func() { done <- r.call() }()
	synctest.Wait()
	require.Equal(r.t, n, srv.Count(), "the provider holds request %d", n)
	during()
	close(gate)
	return <-done
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

func (r *rig) take() []event.Event {
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
