package broker_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/recourse-dev/recourse/broker"
	"github.com/recourse-dev/recourse/chain"
	"github.com/recourse-dev/recourse/chat"
	"github.com/recourse-dev/recourse/codecs/openai"
	"github.com/recourse-dev/recourse/internal/rigtest"
	"github.com/recourse-dev/recourse/layer"
	"github.com/recourse-dev/recourse/layers/retry"
	"github.com/recourse-dev/recourse/layers/stall"
	"github.com/recourse-dev/recourse/recoursetest"
)

// stallWait bounds every wait of these tests for something the code under
// test must do; it guards against a hang and is never a timing assumption.
const stallWait = 10 * time.Second

// idleClock is a stall.Clock whose time moves only when the held attempt
// is found waiting: the provider has written every byte of the held step,
// the client has received all of them (its capture hook counted them), and
// the stall layer arms the timer of the read that now waits for a byte
// that never comes. The clock then moves past that timer, once, and fires
// it. Every other timer stays pending for ever, so nothing else can fire.
type idleClock struct {
	mu       sync.Mutex
	now      time.Time
	held     int           // response bytes of the held attempt
	received int           // response bytes the client received so far
	fired    time.Duration // the timer the clock moved past; 0 before
}

// idleTimer is a timer of an idleClock: it never fires unless AfterFunc
// fires it at once.
type idleTimer struct {
	mu   sync.Mutex
	done bool
}

func newIdleClock(held int) *idleClock {
	return &idleClock{now: time.Date(2026, 10, 10, 0, 0, 0, 0, time.UTC), held: held}
}

func (c *idleClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }

func (c *idleClock) AfterFunc(d time.Duration, f func()) stall.Timer {
	c.mu.Lock()
	fire := c.received == c.held && c.fired == 0
	if fire {
		c.now = c.now.Add(d)
		c.fired = d
	}
	c.mu.Unlock()
	t := &idleTimer{done: fire}
	if fire {
		go f() // on its own goroutine, like time.AfterFunc
	}
	return t
}

func (t *idleTimer) Stop() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	was := !t.done
	t.done = true
	return was
}

// onWire counts the response bytes the client received.
func (c *idleClock) onWire(_ context.Context, s layer.WireSnapshot) error {
	if s.Direction == layer.DirectionResponse {
		c.mu.Lock()
		c.received += len(s.Bytes)
		c.mu.Unlock()
	}
	return nil
}

// firedAfter returns the duration of the timer the clock moved past.
func (c *idleClock) firedAfter() time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.fired
}

// stallRig is a chain with the real stall layer on clock, in front of a
// scripted loopback provider.
func stallRig(t *testing.T, lim stall.Limits, clock *idleClock, s ...recoursetest.Step) *rigtest.Rig {
	t.Helper()
	lim.Clock = clock
	st, err := stall.New(lim)
	require.NoError(t, err)
	return rigtest.NewWith(t, openai.New(), retry.Policy{}, []chain.Option{chain.WithPerAttempt(st)}, s...)
}

// drainWithin drains seq on its own goroutine and fails the test if it
// does not end in time.
func drainWithin(t *testing.T, seq func(func(string, error) bool)) (string, error) {
	t.Helper()
	type result struct {
		text string
		err  error
	}
	done := make(chan result, 1)
	go func() {
		text, err := drain(seq)
		done <- result{text, err}
	}()
	select {
	case r := <-done:
		return r.text, r.err
	case <-time.After(stallWait):
		t.Fatalf("the stream did not end within %v", stallWait)
	}
	return "", nil
}

// R17.3 with the real stall layer: output arrives, then the provider holds
// the connection open and sends nothing more. The idle limit fires while
// the read waits, the attempt is interrupted (semantic output), and the
// broker's continuation commits the closed text block, asks the provider to
// continue from it, and hands the consumer every byte exactly once.
func TestR17_3_IdleStallWithTheStallLayerContinuesFromTheClosedBlocks(t *testing.T) {
	held := []string{textDelta("Let me look "), textDelta("that up. "), toolStart("call_1", "lookup"), toolArgs(`{"city":"Par`)}
	clock := newIdleClock(len(strings.Join(held, "")))
	r := stallRig(t, stall.Limits{FirstOutput: 2 * time.Minute, Idle: 30 * time.Second}, clock,
		recoursetest.SSE(held...).Held(),
		recoursetest.SSE(recoursetest.OpenAIStream("It is ", "sunny.")...))
	tl, ns := &toolLog{}, &notices{}
	b := broker.New(r.Client, broker.WithModel(model), broker.WithTools(lookup(tl)), broker.WithNotices(ns.add),
		broker.WithContinuation(broker.Continuation{Max: 3}),
		broker.WithPolicy(wire(r, retry.Policy{BaseDelay: new(100 * time.Millisecond), Jitter: jitter(1), OnWire: clock.onWire})))
	h := user("Weather in Paris?")
	text, err := drainWithin(t, b.GenerateStream(context.Background(), &h))
	require.NoError(t, err)
	assert.Equal(t, 30*time.Second, clock.firedAfter(), "the idle limit fired, not the first-output one")

	assert.Equal(t, "Let me look that up. It is sunny.", text, "no text twice, none lost")
	assert.Empty(t, tl.runs(), "the cut tool call never runs")
	assert.Equal(t, []chat.Message{
		{Role: chat.User, Content: "Weather in Paris?"},
		{Role: chat.Assistant, Content: "Let me look that up. "},
		{Role: chat.Assistant, Content: "It is sunny."},
	}, h)

	msgs, _ := sent(t, r)
	require.Len(t, msgs, 2, "one held attempt, one continuation; the stalled attempt is not resent")
	require.Len(t, msgs[1], 2)
	assert.Equal(t, "assistant", msgs[1][1].Role)
	assert.Equal(t, "Let me look that up. ", msgs[1][1].Content, "the continuation continues from the closed block")

	require.Len(t, ns.continuations(), 1)
	assert.Equal(t, "LLM stream interrupted; continuing generation (1/3): idle timeout", broker.FormatContinuation(ns.continuations()[0]))
	assert.Empty(t, ns.retries())
	interrupted := rigtest.EventsOf(r.Rec.Events(), layer.EventInterrupted)
	require.Len(t, interrupted, 1)
	f := interrupted[0].Failure
	assert.Equal(t, layer.StallIdle, f.Stall)
	assert.Equal(t, layer.CategoryTransport, f.Category)
	assert.Equal(t, layer.Classification{Reason: layer.ReasonSemanticOutput}, f.Classification)
	assert.Empty(t, rigtest.EventsOf(r.Rec.Events(), layer.EventRetryStarted))
}

// R17.1, R17.2 with the real stall layer: the provider sends its headers
// and a keepalive, then holds the connection. Keepalives are not output, so
// the first-output limit fires before the idle limit would; the attempt is
// a transport failure before any output, eligible, and it is resent within
// the same completion, with a retry notice naming the limit.
func TestR17_2_FirstOutputStallWithTheStallLayerIsRetried(t *testing.T) {
	keepalive := ": keep-alive\n\n"
	clock := newIdleClock(len(keepalive))
	r := stallRig(t, stall.Limits{Header: time.Minute, FirstOutput: 20 * time.Second, Idle: time.Minute}, clock,
		recoursetest.SSE(keepalive).Held(),
		recoursetest.SSE(recoursetest.OpenAIStream("Hi.")...))
	ns := &notices{}
	b := broker.New(r.Client, broker.WithModel(model), broker.WithNotices(ns.add), broker.WithContinuation(broker.Continuation{Max: 3}),
		broker.WithPolicy(wire(r, retry.Policy{MaxAttempts: 2, BaseDelay: new(time.Second), Jitter: jitter(1), OnWire: clock.onWire})))
	h := user("q")
	text, err := drainWithin(t, b.GenerateStream(context.Background(), &h))
	require.NoError(t, err)
	assert.Equal(t, 20*time.Second, clock.firedAfter(), "the first-output limit fired")
	assert.Equal(t, "Hi.", text)
	assert.Equal(t, []chat.Message{{Role: chat.User, Content: "q"}, {Role: chat.Assistant, Content: "Hi."}}, h)

	require.Len(t, ns.retries(), 1)
	assert.Equal(t, "retrying LLM request after first-output timeout (attempt 2/2 in 1.0s)", broker.FormatRetry(ns.retries()[0]))
	assert.Empty(t, ns.continuations(), "nothing was output: a resend, not a continuation")

	failed := rigtest.EventsOf(r.Rec.Events(), layer.EventAttemptFailed)
	require.Len(t, failed, 1)
	f := failed[0].Failure
	assert.Equal(t, layer.StallFirstOutput, f.Stall)
	assert.Equal(t, layer.CategoryTransport, f.Category)
	assert.Equal(t, layer.Classification{Eligible: true, Reason: layer.ReasonTransient}, f.Classification)
	assert.Len(t, r.Server.Requests(), 2)
	ids, _ := logicalIDs(r.Rec.Events())
	assert.Len(t, ids, 1, "the resend belongs to the same completion")
	assert.Empty(t, rigtest.EventsOf(r.Rec.Events(), layer.EventInterrupted))
}

// R16.2, R17.3 with the real stall layer, through a Session: the turn
// whose stream stalled after output and was continued keeps the closed
// block and the continuation as its assistant messages, each once, and
// the next turn builds on them.
func TestR17_3_SessionTurnContinuedAfterAnIdleStall(t *testing.T) {
	held := []string{textDelta("Let me look "), textDelta("that up. "), toolStart("call_1", "lookup")}
	clock := newIdleClock(len(strings.Join(held, "")))
	r := stallRig(t, stall.Limits{Idle: 30 * time.Second}, clock,
		recoursetest.SSE(held...).Held(),
		recoursetest.SSE(recoursetest.OpenAIStream("It is ", "sunny.")...),
		recoursetest.SSE(recoursetest.OpenAIStream("You are welcome.")...))
	tl := &toolLog{}
	b := broker.New(r.Client, broker.WithModel(model), broker.WithTools(lookup(tl)),
		broker.WithContinuation(broker.Continuation{Max: 3}),
		broker.WithPolicy(wire(r, retry.Policy{BaseDelay: new(100 * time.Millisecond), Jitter: jitter(1), OnWire: clock.onWire})))
	s := broker.NewSession(b, system)
	text, err := drainWithin(t, s.SendStream(context.Background(), "Weather in Paris?"))
	require.NoError(t, err)
	assert.Equal(t, 30*time.Second, clock.firedAfter())
	assert.Equal(t, "Let me look that up. It is sunny.", text)
	assert.Equal(t, []chat.Message{
		{Role: chat.System, Content: system},
		{Role: chat.User, Content: "Weather in Paris?"},
		{Role: chat.Assistant, Content: "Let me look that up. "},
		{Role: chat.Assistant, Content: "It is sunny."},
	}, s.Messages())

	text, err = drainWithin(t, s.SendStream(context.Background(), "Thanks"))
	require.NoError(t, err)
	assert.Equal(t, "You are welcome.", text)
	msgs, _ := sent(t, r)
	require.Len(t, msgs, 3)
	assert.Len(t, msgs[2], 5, "system, user, both assistant messages, user: nothing twice")
	assert.Empty(t, tl.runs())
}
