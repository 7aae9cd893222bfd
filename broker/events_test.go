package broker_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/recourse-dev/recourse/broker"
	"github.com/recourse-dev/recourse/chat"
	"github.com/recourse-dev/recourse/client"
	"github.com/recourse-dev/recourse/event"
	"github.com/recourse-dev/recourse/layer"
	"github.com/recourse-dev/recourse/layers/retry"
	"github.com/recourse-dev/recourse/recoursetest"
)

func collect(seq func(func(client.StreamEvent) bool)) []client.StreamEvent {
	var out []client.StreamEvent
	for ev := range seq {
		out = append(out, ev)
	}
	return out
}

// R13.7, R16, R17.1: the broker's event stream recovers a cut before
// content under the broker's policy, announces the retry, delivers each
// content event once, ends with done and appends the answer.
func TestR13_7_BrokerEventStreamRecoversAndAppends(t *testing.T) {
	r := newRig(t, retry.Policy{},
		recoursetest.Step{Status: 200, Chunks: [][]byte{[]byte(": keep-alive\n\n")}}.Cut(len(": keep-alive\n\n")),
		recoursetest.SSE(recoursetest.OpenAIStream("Hel", "lo.")...))
	ns := &notices{rec: r.Rec}
	b := broker.New(r.Client, broker.WithModel("gpt-4o-mini"), broker.WithNotices(ns.add),
		broker.WithPolicy(wire(r, retry.Policy{MaxAttempts: 2, Jitter: jitter(0)})))
	h := user("hi")
	evs := collect(b.GenerateStreamEvents(context.Background(), &h))
	var text string
	for _, ev := range evs[:len(evs)-1] {
		require.Equal(t, client.EventContent, ev.Type)
		text += ev.Text
	}
	assert.Equal(t, "Hello.", text)
	assert.Equal(t, client.EventDone, evs[len(evs)-1].Type)
	assert.Equal(t, []chat.Message{{Role: chat.User, Content: "hi"}, {Role: chat.Assistant, Content: "Hello."}}, h)
	assert.Len(t, ns.retries(), 1, "the retry is announced")
	assert.Equal(t, 2, r.Server.Count())
}

// R13.1, R16.2: a break after content is one error event whose Err has
// reason interrupted_stream and carries the typed RecoveryError; nothing
// is appended.
func TestR13_1_BrokerEventStreamInterruptedCarriesTheRecoveryError(t *testing.T) {
	r := newRig(t, retry.Policy{}, broken(textDelta("Half an ")))
	b := broker.New(r.Client, broker.WithModel("gpt-4o-mini"), broker.WithPolicy(wire(r, retry.Policy{MaxAttempts: 3, Jitter: jitter(0)})))
	h := user("hi")
	evs := collect(b.GenerateStreamEvents(context.Background(), &h))
	last := evs[len(evs)-1]
	require.Equal(t, client.EventError, last.Type)
	assert.Equal(t, layer.StreamInterrupted, last.Err.Reason)
	var re *layer.RecoveryError
	require.True(t, errors.As(last.Err, &re))
	assert.Equal(t, event.OutcomeInterrupted, re.Outcome)
	assert.Equal(t, user("hi"), h, "no incomplete assistant text is kept")
	assert.Equal(t, 1, r.Server.Count())
}

// R13.7: single-turn events take no tools: nothing is sent; an invalid
// per-call policy is the first and only item (R3.3); cancellation ends
// with reason cancelled.
func TestR13_7_BrokerEventStreamRefusesToolsPolicyErrorsAndCancels(t *testing.T) {
	r := newRig(t, retry.Policy{}, recoursetest.SSE(recoursetest.OpenAIStream("never")...))
	tools := broker.New(r.Client, broker.WithTools(broker.Tool{Spec: chat.ToolSpec{Name: "lookup"}}))
	h := user("hi")
	evs := collect(tools.GenerateStreamEvents(context.Background(), &h))
	require.Len(t, evs, 1)
	assert.ErrorIs(t, evs[0].Err, client.ErrToolsNotSupported)

	bad := broker.New(r.Client, broker.WithModel("gpt-4o-mini"), broker.WithPolicy(retry.Policy{MaxAttempts: -1}))
	evs = collect(bad.GenerateStreamEvents(context.Background(), &h))
	require.Len(t, evs, 1)
	var pe *layer.PolicyError
	assert.True(t, errors.As(evs[0].Err, &pe), "got %#v", evs[0].Err)

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	evs = collect(broker.New(r.Client, broker.WithModel("gpt-4o-mini")).GenerateStreamEvents(ctx, &h))
	require.Len(t, evs, 1)
	assert.Equal(t, layer.StreamCancelled, evs[0].Err.Reason)
	assert.Equal(t, 0, r.Server.Count(), "nothing was sent")
	assert.Equal(t, user("hi"), h)
}
