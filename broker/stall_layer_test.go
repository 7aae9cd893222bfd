package broker_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/recourse-dev/recourse/broker"
	"github.com/recourse-dev/recourse/chain"
	"github.com/recourse-dev/recourse/chat"
	"github.com/recourse-dev/recourse/codecs/openai"
	"github.com/recourse-dev/recourse/event"
	"github.com/recourse-dev/recourse/internal/rigtest"
	"github.com/recourse-dev/recourse/layers/retry"
	"github.com/recourse-dev/recourse/layers/stall"
	"github.com/recourse-dev/recourse/recoursetest"
)

// stallRig is a chain with the real stall layer, in front of a scripted
// provider on recoursetest.NewMemoryServer; make it inside a
// testing/synctest bubble, whose clock the limits then run on. The
// policy's backoff stays on the rig's clock (wire), so the bubble's clock
// moves only while a limit's wait lasts.
func stallRig(t *testing.T, lim stall.Limits, s ...recoursetest.Step) *rigtest.Rig {
	t.Helper()
	st, err := stall.New(lim)
	require.NoError(t, err)
	return rigtest.NewMemoryWith(t, openai.New(), retry.Policy{}, []chain.Option{chain.WithPerAttempt(st)}, s...)
}

// R17.3 with the real stall layer: output arrives, then the provider holds
// the connection open and sends nothing more. The idle limit fires while
// the read waits, the attempt is interrupted (semantic output), and the
// broker's continuation commits the closed text block, asks the provider to
// continue from it, and hands the consumer every byte exactly once.
func TestR17_3_IdleStallWithTheStallLayerContinuesFromTheClosedBlocks(t *testing.T) {
	synctest.Test(t, testIdleStallWithTheStallLayerContinuesFromTheClosedBlocks)
}

func testIdleStallWithTheStallLayerContinuesFromTheClosedBlocks(t *testing.T) {
	held := []string{textDelta("Let me look "), textDelta("that up. "), toolStart("call_1", "lookup"), toolArgs(`{"city":"Par`)}
	r := stallRig(t, stall.Limits{FirstOutput: 2 * time.Minute, Idle: 30 * time.Second},
		recoursetest.SSE(held...).Held(),
		recoursetest.SSE(recoursetest.OpenAIStream("It is ", "sunny.")...))
	tl, ns := &toolLog{}, &notices{}
	b := broker.New(r.Client, broker.WithModel(model), broker.WithTools(lookup(tl)), broker.WithNotices(ns.add),
		broker.WithContinuation(broker.Continuation{Max: 3}),
		broker.WithPolicy(wire(r, retry.Policy{BaseDelay: new(100 * time.Millisecond), Jitter: jitter(1)})))
	h := user("Weather in Paris?")
	start := time.Now()
	text, err := drain(b.GenerateStream(context.Background(), &h))
	require.NoError(t, err)
	assert.Equal(t, 30*time.Second, time.Since(start), "the idle limit fired once the held stream had been silent for it")

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
	interrupted := rigtest.EventsOf(r.Rec.Events(), event.Interrupted)
	require.Len(t, interrupted, 1)
	f := interrupted[0].Failure
	assert.Equal(t, event.StallIdle, f.Stall)
	assert.Equal(t, event.CategoryTransport, f.Category)
	assert.Equal(t, event.Classification{Reason: event.ReasonSemanticOutput}, f.Classification)
	assert.Empty(t, rigtest.EventsOf(r.Rec.Events(), event.RetryStarted))
}

// R17.1, R17.2 with the real stall layer: the provider sends its headers
// and a keepalive, then holds the connection. Keepalives are not output, so
// the first-output limit fires before the idle limit would; the attempt is
// a transport failure before any output, eligible, and it is resent within
// the same completion, with a retry notice naming the limit.
func TestR17_2_FirstOutputStallWithTheStallLayerIsRetried(t *testing.T) {
	synctest.Test(t, testFirstOutputStallWithTheStallLayerIsRetried)
}

func testFirstOutputStallWithTheStallLayerIsRetried(t *testing.T) {
	keepalive := ": keep-alive\n\n"
	r := stallRig(t, stall.Limits{Header: time.Minute, FirstOutput: 20 * time.Second, Idle: time.Minute},
		recoursetest.SSE(keepalive).Held(),
		recoursetest.SSE(recoursetest.OpenAIStream("Hi.")...))
	ns := &notices{}
	b := broker.New(r.Client, broker.WithModel(model), broker.WithNotices(ns.add), broker.WithContinuation(broker.Continuation{Max: 3}),
		broker.WithPolicy(wire(r, retry.Policy{MaxAttempts: 2, BaseDelay: new(time.Second), Jitter: jitter(1)})))
	h := user("q")
	start := time.Now()
	text, err := drain(b.GenerateStream(context.Background(), &h))
	require.NoError(t, err)
	assert.Equal(t, 20*time.Second, time.Since(start), "the first-output limit fired, before the idle one would")
	assert.Equal(t, "Hi.", text)
	assert.Equal(t, []chat.Message{{Role: chat.User, Content: "q"}, {Role: chat.Assistant, Content: "Hi."}}, h)

	require.Len(t, ns.retries(), 1)
	assert.Equal(t, "retrying LLM request after first-output timeout (attempt 2/2 in 1.0s)", broker.FormatRetry(ns.retries()[0]))
	assert.Empty(t, ns.continuations(), "nothing was output: a resend, not a continuation")

	failed := rigtest.EventsOf(r.Rec.Events(), event.AttemptFailed)
	require.Len(t, failed, 1)
	f := failed[0].Failure
	assert.Equal(t, event.StallFirstOutput, f.Stall)
	assert.Equal(t, event.CategoryTransport, f.Category)
	assert.Equal(t, event.Classification{Eligible: true, Reason: event.ReasonTransient}, f.Classification)
	assert.Len(t, r.Server.Requests(), 2)
	ids, _ := logicalIDs(r.Rec.Events())
	assert.Len(t, ids, 1, "the resend belongs to the same completion")
	assert.Empty(t, rigtest.EventsOf(r.Rec.Events(), event.Interrupted))
}

// R16.2, R17.3 with the real stall layer, through a Session: the turn
// whose stream stalled after output and was continued keeps the closed
// block and the continuation as its assistant messages, each once, and
// the next turn builds on them.
func TestR17_3_SessionTurnContinuedAfterAnIdleStall(t *testing.T) {
	synctest.Test(t, testSessionTurnContinuedAfterAnIdleStall)
}

func testSessionTurnContinuedAfterAnIdleStall(t *testing.T) {
	held := []string{textDelta("Let me look "), textDelta("that up. "), toolStart("call_1", "lookup")}
	r := stallRig(t, stall.Limits{Idle: 30 * time.Second},
		recoursetest.SSE(held...).Held(),
		recoursetest.SSE(recoursetest.OpenAIStream("It is ", "sunny.")...),
		recoursetest.SSE(recoursetest.OpenAIStream("You are welcome.")...))
	tl := &toolLog{}
	b := broker.New(r.Client, broker.WithModel(model), broker.WithTools(lookup(tl)),
		broker.WithContinuation(broker.Continuation{Max: 3}),
		broker.WithPolicy(wire(r, retry.Policy{BaseDelay: new(100 * time.Millisecond), Jitter: jitter(1)})))
	s := broker.NewSession(b, system)
	start := time.Now()
	text, err := drain(s.SendStream(context.Background(), "Weather in Paris?"))
	require.NoError(t, err)
	assert.Equal(t, 30*time.Second, time.Since(start))
	assert.Equal(t, "Let me look that up. It is sunny.", text)
	assert.Equal(t, []chat.Message{
		{Role: chat.System, Content: system},
		{Role: chat.User, Content: "Weather in Paris?"},
		{Role: chat.Assistant, Content: "Let me look that up. "},
		{Role: chat.Assistant, Content: "It is sunny."},
	}, s.Messages())

	text, err = drain(s.SendStream(context.Background(), "Thanks"))
	require.NoError(t, err)
	assert.Equal(t, "You are welcome.", text)
	msgs, _ := sent(t, r)
	require.Len(t, msgs, 3)
	assert.Len(t, msgs[2], 5, "system, user, both assistant messages, user: nothing twice")
	assert.Empty(t, tl.runs())
}
