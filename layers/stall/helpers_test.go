package stall_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/recourse-dev/recourse/chain"
	"github.com/recourse-dev/recourse/chat"
	"github.com/recourse-dev/recourse/client"
	"github.com/recourse-dev/recourse/codec"
	"github.com/recourse-dev/recourse/event"
	"github.com/recourse-dev/recourse/layer"
	"github.com/recourse-dev/recourse/layers/retry"
	"github.com/recourse-dev/recourse/layers/stall"
	"github.com/recourse-dev/recourse/recoursetest"
)

// TestMain fails the package if any goroutine outlives the tests: timers,
// handlers and connections must all be gone.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// script is how the in-memory provider answers one request: it waits for
// headers to be closed (nil: at once), writes status and header, then
// writes and flushes every string received on body until body is closed
// (the response ends) or the client goes away. hold keeps the response
// open after body is closed instead, until the client goes away.
type script struct {
	status  int
	header  http.Header
	headers chan struct{}
	body    chan string
}

// provider is an HTTP server on an in-memory network (recoursetest.ServeMemory)
// that plays one script per request. It runs inside the test's
// testing/synctest bubble: a response the test does not feed is silence
// the bubble's clock passes over at once.
type provider struct {
	srv     *httptest.Server
	tr      *http.Transport // reaches srv
	scripts chan *script
	mu      sync.Mutex
	count   int
}

func newProvider(t *testing.T) *provider {
	p := &provider{scripts: make(chan *script, 8)}
	p.srv, p.tr = recoursetest.ServeMemory(http.HandlerFunc(p.serve))
	t.Cleanup(func() {
		p.srv.CloseClientConnections()
		p.srv.Close()
		p.tr.CloseIdleConnections()
	})
	return p
}

func (p *provider) Count() int { p.mu.Lock(); defer p.mu.Unlock(); return p.count }

func (p *provider) serve(w http.ResponseWriter, r *http.Request) {
	p.mu.Lock()
	p.count++
	p.mu.Unlock()
	// Reading the request to its end lets the server notice a client that
	// goes away (the request context is then cancelled).
	_, _ = io.Copy(io.Discard, r.Body)
	var s *script
	select {
	case s = <-p.scripts:
	default:
		http.Error(w, "no script", http.StatusTeapot)
		return
	}
	ctx := r.Context()
	if s.headers != nil {
		select {
		case <-s.headers:
		case <-ctx.Done():
			return
		}
	}
	for k, v := range s.header {
		w.Header()[k] = v
	}
	if w.Header().Get("Content-Type") == "" {
		w.Header().Set("Content-Type", "text/event-stream")
	}
	status := s.status
	if status == 0 {
		status = http.StatusOK
	}
	w.WriteHeader(status)
	rc := http.NewResponseController(w)
	_ = rc.Flush()
	for {
		select {
		case chunk, ok := <-s.body:
			if !ok {
				return
			}
			_, _ = w.Write([]byte(chunk))
			_ = rc.Flush()
		case <-ctx.Done():
			return
		}
	}
}

// answer queues a script and returns it.
func (p *provider) answer(s *script) *script {
	if s.body == nil {
		s.body = make(chan string, 64)
	}
	p.scripts <- s
	return s
}

// rig is a chain with a stall layer, a recording policy and a native
// client for the in-memory provider. Make it inside a testing/synctest
// bubble: the limits, the backoff and every wait of the test then run on
// the bubble's clock, which starts when the rig is made (see since).
type rig struct {
	t      *testing.T
	p      *provider
	client *client.Client
	ctx    context.Context // cancelled when the test ends: no call outlives it
	start  time.Time
	mu     sync.Mutex
	events []event.Event
	at     []time.Duration // when each event was recorded, since start
}

func newRig(t *testing.T, cdc codec.Codec, lim stall.Limits, pol retry.Policy) *rig {
	t.Helper()
	pol.BaseDelay = new(time.Duration(0))
	r, _ := newRigWith(t, cdc, lim, pol)
	return r
}

// newRigWith is newRig with the policy and the chain options as given.
func newRigWith(t *testing.T, cdc codec.Codec, lim stall.Limits, pol retry.Policy, opts ...chain.Option) (*rig, *chain.Chain) {
	t.Helper()
	r := &rig{t: t, p: newProvider(t), start: time.Now()}
	st, err := stall.New(lim)
	require.NoError(t, err)
	pol.OnEvent = func(ev event.Event) error {
		r.mu.Lock()
		r.events = append(r.events, ev)
		r.at = append(r.at, r.since())
		r.mu.Unlock()
		return nil
	}
	opts = append([]chain.Option{chain.WithPolicy(pol), chain.WithPerAttempt(st), chain.WithTransport(r.p.tr)}, opts...)
	ch, err := chain.Default(cdc, opts...)
	require.NoError(t, err)
	r.client, err = client.New(r.p.srv.URL, ch, client.WithAPIKey("sk-test"))
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	r.ctx = ctx
	t.Cleanup(cancel)
	return r, ch
}

// since returns the time on the bubble's clock since the rig was made.
func (r *rig) since() time.Duration { return time.Since(r.start) }

// feed writes chunk to the provider's current response and waits until
// every goroutine of the bubble is blocked: the client received the chunk
// and waits for the next one, or the call ended.
func (r *rig) feed(s *script, chunk string) {
	s.body <- chunk
	synctest.Wait()
}

// eventsAt returns when the events of type typ were recorded, since the
// rig was made.
func (r *rig) eventsAt(typ event.Type) []time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []time.Duration
	for i, ev := range r.events {
		if ev.Type == typ {
			out = append(out, r.at[i])
		}
	}
	return out
}

func (r *rig) Events() []event.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]event.Event(nil), r.events...)
}

func (r *rig) types() []string {
	var out []string
	for _, ev := range r.Events() {
		out = append(out, string(ev.Type))
	}
	return out
}

// failures returns the failures of the attempt_failed events.
func (r *rig) failures() []event.Failure {
	var out []event.Failure
	for _, ev := range r.Events() {
		if ev.Type == event.AttemptFailed {
			out = append(out, *ev.Failure)
		}
	}
	return out
}

// result is what a call ended with.
type result struct {
	text string
	err  error
}

// stream runs a streaming call in the background.
func (r *rig) stream(ctx context.Context) <-chan result {
	ctx, stop := mergeCancel(ctx, r.ctx)
	done := make(chan result, 1)
	go func() {
		var text string
		var err error
		for c, e := range r.client.Stream(ctx, request()) {
			if e != nil {
				err = e
				break
			}
			text += c.Content
		}
		stop()
		done <- result{text, err}
	}()
	return done
}

// complete runs an ordinary call in the background.
func (r *rig) complete(ctx context.Context) <-chan result {
	ctx, stop := mergeCancel(ctx, r.ctx)
	done := make(chan result, 1)
	go func() {
		comp, err := r.client.Complete(ctx, request())
		stop()
		res := result{err: err}
		if comp != nil {
			res.text = comp.Message.Content
		}
		done <- res
	}()
	return done
}

func request() *chat.Request {
	return &chat.Request{Model: "gpt-test", Messages: []chat.Message{{Role: chat.User, Content: "hello"}}}
}

// await waits for the call to end. Inside the bubble a call that never
// ends while nothing is left to wake it fails the test (synctest reports
// the deadlock) instead of hanging it.
func await(t *testing.T, done <-chan result) result {
	t.Helper()
	return <-done
}

func recoveryError(t *testing.T, err error) *layer.RecoveryError {
	t.Helper()
	var re *layer.RecoveryError
	if err == nil {
		t.Fatal("no error")
	}
	if !errors.As(err, &re) {
		t.Fatalf("not a *layer.RecoveryError: %T %v", err, err)
	}
	return re
}

// mergeCancel returns a context derived from ctx that is also cancelled
// when other is; stop releases it.
func mergeCancel(ctx, other context.Context) (context.Context, func()) {
	ctx, cancel := context.WithCancel(ctx)
	unregister := context.AfterFunc(other, cancel)
	return ctx, func() { unregister(); cancel() }
}
