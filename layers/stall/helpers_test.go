package stall_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/recourse-dev/recourse/chain"
	"github.com/recourse-dev/recourse/chat"
	"github.com/recourse-dev/recourse/layer"
	"github.com/recourse-dev/recourse/layers/retry"
	"github.com/recourse-dev/recourse/layers/stall"
)

// TestMain fails the package if any goroutine outlives the tests: timers,
// handlers and connections must all be gone.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// wait bounds every wait of a test for something the code under test must
// do; it is a guard against a hang, never a timing assumption.
const wait = 10 * time.Second

// fakeClock is a stall.Clock whose time moves only in Advance. Every timer
// it arms is reported on seq, in order with the wire snapshots the test
// records there, so a test knows when the attempt waits for the provider.
type fakeClock struct {
	mu     sync.Mutex
	now    time.Time
	timers []*fakeTimer
	seq    chan string
}

type fakeTimer struct {
	c        *fakeClock
	at       time.Time
	f        func()
	done     bool // fired or stopped
	duration time.Duration
}

func newFakeClock(seq chan string) *fakeClock {
	return &fakeClock{now: time.Date(2026, 10, 10, 0, 0, 0, 0, time.UTC), seq: seq}
}

func (c *fakeClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }

func (c *fakeClock) AfterFunc(d time.Duration, f func()) stall.Timer {
	c.mu.Lock()
	t := &fakeTimer{c: c, at: c.now.Add(d), f: f, duration: d}
	if d <= 0 {
		t.done = true
	} else {
		c.timers = append(c.timers, t)
	}
	c.mu.Unlock()
	c.seq <- "arm " + d.String()
	if d <= 0 {
		f()
	}
	return t
}

func (t *fakeTimer) Stop() bool {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	if t.done {
		return false
	}
	t.done = true
	return true
}

// Advance moves the clock by d and runs the timers that fell due.
func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	var due []func()
	kept := c.timers[:0]
	for _, t := range c.timers {
		switch {
		case t.done:
		case !t.at.After(c.now):
			t.done = true
			due = append(due, t.f)
		default:
			kept = append(kept, t)
		}
	}
	c.timers = kept
	c.mu.Unlock()
	for _, f := range due {
		f()
	}
}

// script is how the loopback provider answers one request: it waits for
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

// provider is a loopback server that plays one script per request.
type provider struct {
	srv     *httptest.Server
	scripts chan *script
	// arrivals receives a value for every request the server has read.
	arrivals chan struct{}
	mu       sync.Mutex
	count    int
}

func newProvider(t *testing.T) *provider {
	p := &provider{scripts: make(chan *script, 8), arrivals: make(chan struct{}, 64)}
	p.srv = httptest.NewServer(http.HandlerFunc(p.serve))
	t.Cleanup(p.srv.Close)
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
	p.arrivals <- struct{}{}
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

// rig is a chain with a stall layer on a fake clock, a recording policy and
// a native client for the loopback provider.
type rig struct {
	t      *testing.T
	p      *provider
	clock  *fakeClock
	seq    chan string
	client *chain.Client
	ctx    context.Context // cancelled when the test ends: no call outlives it
	events []layer.Event
	mu     sync.Mutex
}

func newRig(t *testing.T, codec layer.Codec, lim stall.Limits, pol retry.Policy) *rig {
	t.Helper()
	seq := make(chan string, 1024)
	r := &rig{t: t, p: newProvider(t), seq: seq}
	r.clock = newFakeClock(seq)
	lim.Clock = r.clock
	st, err := stall.New(lim)
	if err != nil {
		t.Fatal(err)
	}
	pol.BaseDelay = new(time.Duration(0))
	pol.OnEvent = func(ev layer.Event) error {
		r.mu.Lock()
		r.events = append(r.events, ev)
		r.mu.Unlock()
		return nil
	}
	pol.OnWire = func(_ context.Context, s layer.WireSnapshot) error {
		if s.Direction == layer.DirectionResponse && len(s.Bytes) > 0 {
			seq <- "wire"
		}
		return nil
	}
	base := http.DefaultTransport.(*http.Transport).Clone()
	t.Cleanup(base.CloseIdleConnections)
	ch, err := chain.Default(codec, chain.WithPolicy(pol), chain.WithPerAttempt(st), chain.WithTransport(base))
	if err != nil {
		t.Fatal(err)
	}
	r.client, err = chain.NewClient(r.p.srv.URL, ch, chain.WithAPIKey("sk-test"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r.ctx = ctx
	t.Cleanup(cancel)
	return r
}

// next waits for the next entry of the rig's sequence (a timer armed, or a
// chunk of the response received) and checks its kind.
func (r *rig) next(want string) string {
	r.t.Helper()
	select {
	case got := <-r.seq:
		if len(got) < len(want) || got[:len(want)] != want {
			r.t.Fatalf("sequence: got %q, want %q…", got, want)
		}
		return got
	case <-time.After(wait):
		r.t.Fatalf("sequence: nothing after %v, want %q", wait, want)
	}
	return ""
}

// arrived waits until the provider has read the next request.
func (r *rig) arrived() {
	r.t.Helper()
	select {
	case <-r.p.arrivals:
	case <-time.After(wait):
		r.t.Fatalf("no request reached the provider after %v", wait)
	}
}

// armed waits until the attempt arms a timer, that is, waits for the
// provider, and returns the timer's duration.
func (r *rig) armed() string {
	r.t.Helper()
	return r.next("arm ")
}

// feed writes chunk to the provider's current response and waits until the
// client received it and waits again (a timer armed for the next read); it
// returns that timer's entry.
func (r *rig) feed(s *script, chunk string) string {
	r.t.Helper()
	s.body <- chunk
	r.next("wire")
	return r.armed()
}

func (r *rig) Events() []layer.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]layer.Event(nil), r.events...)
}

func (r *rig) types() []string {
	var out []string
	for _, ev := range r.Events() {
		out = append(out, string(ev.Type))
	}
	return out
}

// failures returns the failures of the attempt_failed events.
func (r *rig) failures() []layer.Failure {
	var out []layer.Failure
	for _, ev := range r.Events() {
		if ev.Type == layer.EventAttemptFailed {
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

func await(t *testing.T, done <-chan result) result {
	t.Helper()
	select {
	case res := <-done:
		return res
	case <-time.After(wait):
		t.Fatalf("call still running after %v", wait)
	}
	return result{}
}

// pending checks that the call has not ended: it gives the code under test
// a moment to end it wrongly. A pass never depends on that moment's length.
func pending(t *testing.T, done <-chan result) {
	t.Helper()
	select {
	case res := <-done:
		t.Fatalf("call ended early: %q, %v", res.text, res.err)
	case <-time.After(50 * time.Millisecond):
	}
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
