// Package rigtest is the shared test rig of recourse's conformance tests,
// built on package recoursetest: a recoursetest.Server, a default chain
// around a codec, a fake wall and monotonic clock whose Sleep advances time
// instead of waiting, and a recorder of every lifecycle event and capture.
// It is used by tests only, and it is the one rig: a test that needs only a
// scripted provider uses recoursetest directly. It imports chain and
// layers/retry because assembling them is what it is for; no package below
// them (a layer, a codec, recoursetest) may import it.
package rigtest

import (
	"context"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/recourse-dev/recourse/chain"
	"github.com/recourse-dev/recourse/client"
	"github.com/recourse-dev/recourse/codec"
	"github.com/recourse-dev/recourse/event"
	"github.com/recourse-dev/recourse/layer"
	"github.com/recourse-dev/recourse/layers/retry"
	"github.com/recourse-dev/recourse/recoursetest"
)

// Epoch is the fake wall clock's start: Sat, 10 Oct 2026 00:00:00 GMT.
var Epoch = time.Date(2026, 10, 10, 0, 0, 0, 0, time.UTC)

// Clock is a fake wall and monotonic clock. Sleep advances both by the
// requested delay (instantly) unless the context is already done.
type Clock struct {
	mu     sync.Mutex
	wall   time.Time
	mono   time.Duration
	sleeps []time.Duration
	// Block, when set, makes Sleep wait for ctx instead of returning: a sleep
	// that never ends by itself.
	Block bool
}

// NewClock returns a clock at Epoch.
func NewClock() *Clock { return &Clock{wall: Epoch, mono: time.Hour} }

// Now returns the wall time.
func (c *Clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.wall }

// Mono returns the monotonic reading.
func (c *Clock) Mono() time.Duration { c.mu.Lock(); defer c.mu.Unlock(); return c.mono }

// Advance moves both clocks forward by d.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.wall = c.wall.Add(d)
	c.mono += d
	c.mu.Unlock()
}

// Sleep records d and advances the clock, honouring ctx.
func (c *Clock) Sleep(ctx context.Context, d time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	c.mu.Lock()
	c.sleeps = append(c.sleeps, d)
	block := c.Block
	c.mu.Unlock()
	if block {
		<-ctx.Done()
		return ctx.Err()
	}
	c.Advance(d)
	return nil
}

// Sleeps returns the recorded sleeps.
func (c *Clock) Sleeps() []time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]time.Duration(nil), c.sleeps...)
}

// Recorder records lifecycle events and wire snapshots, safe for concurrent use.
type Recorder struct {
	mu     sync.Mutex
	events []event.Event
	wire   []layer.WireSnapshot
	// Log, when set, receives a line per event and capture, in order ("event:attempt_started", "wire:request").
	log []string
}

// OnEvent records ev.
func (r *Recorder) OnEvent(ev event.Event) error {
	r.mu.Lock()
	r.events = append(r.events, ev)
	r.log = append(r.log, "event:"+string(ev.Type))
	r.mu.Unlock()
	return nil
}

// OnWire records s.
func (r *Recorder) OnWire(_ context.Context, s layer.WireSnapshot) error {
	r.mu.Lock()
	r.wire = append(r.wire, s)
	r.log = append(r.log, "wire:"+string(s.Direction))
	r.mu.Unlock()
	return nil
}

// Note appends a free line to the log.
func (r *Recorder) Note(s string) {
	r.mu.Lock()
	r.log = append(r.log, s)
	r.mu.Unlock()
}

// Events returns the recorded events.
func (r *Recorder) Events() []event.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]event.Event(nil), r.events...)
}

// Types returns the recorded event types.
func (r *Recorder) Types() []string {
	var out []string
	for _, e := range r.Events() {
		out = append(out, string(e.Type))
	}
	return out
}

// Wire returns the recorded snapshots.
func (r *Recorder) Wire() []layer.WireSnapshot {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]layer.WireSnapshot(nil), r.wire...)
}

// Log returns the ordered log.
func (r *Recorder) Log() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.log...)
}

// Rig is a scripted provider plus a default chain and client around a codec.
type Rig struct {
	T      testing.TB
	Server *recoursetest.Server
	Clock  *Clock
	Rec    *Recorder
	Chain  *chain.Chain
	Client *client.Client
	HTTP   *http.Client
	base   *http.Transport
}

// Key and Prompt are canaries: neither may appear in any safe output.
const (
	Key    = "sk-CANARYKEY-7f3a9c0d1e2b4a6f"
	Prompt = "PROMPT-CANARY-tell-me-the-secret-plan"
)

// New starts a rig. The policy gets the rig's clock, sleep and recorder
// unless it sets its own; MaxAttempts etc. come from p.
func New(t testing.TB, cdc codec.Codec, p retry.Policy, steps ...recoursetest.Step) *Rig {
	t.Helper()
	return NewWith(t, cdc, p, nil, steps...)
}

// NewWith is New with more options for the default chain, for example
// chain.WithPerAttempt.
func NewWith(t testing.TB, cdc codec.Codec, p retry.Policy, opts []chain.Option, steps ...recoursetest.Step) *Rig {
	t.Helper()
	return newOn(t, recoursetest.NewServer(steps...), cdc, p, opts)
}

// NewMemoryWith is NewWith with the provider on
// recoursetest.NewMemoryServer. Call it inside a testing/synctest bubble:
// the timers of the chain's own layers (a stall limit) then run on the
// bubble's clock, while the policy still gets the rig's clock unless it
// sets its own.
func NewMemoryWith(t testing.TB, cdc codec.Codec, p retry.Policy, opts []chain.Option, steps ...recoursetest.Step) *Rig {
	t.Helper()
	return newOn(t, recoursetest.NewMemoryServer(steps...), cdc, p, opts)
}

func newOn(t testing.TB, srv *recoursetest.Server, cdc codec.Codec, p retry.Policy, opts []chain.Option) *Rig {
	t.Helper()
	r := &Rig{T: t, Server: srv, Clock: NewClock(), Rec: &Recorder{}}
	if p.WallClock == nil {
		p.WallClock = r.Clock.Now
	}
	if p.MonotonicClock == nil {
		p.MonotonicClock = r.Clock.Mono
	}
	if p.Sleep == nil {
		p.Sleep = r.Clock.Sleep
	}
	if p.OnEvent == nil {
		p.OnEvent = r.Rec.OnEvent
	}
	r.base = srv.Transport()
	ch, err := chain.Default(cdc, append([]chain.Option{chain.WithPolicy(p), chain.WithTransport(r.base)}, opts...)...)
	if err != nil {
		t.Fatalf("chain.Default: %v", err)
	}
	r.Chain = ch
	r.Client, err = client.New(r.Server.URL, ch, client.WithAPIKey(Key))
	if err != nil {
		t.Fatalf("client.New: %v", err)
	}
	r.HTTP = &http.Client{Transport: ch}
	t.Cleanup(r.Close)
	return r
}

// Close stops the server and closes idle connections.
func (r *Rig) Close() {
	r.Server.Close()
	r.base.CloseIdleConnections()
}
