package broker_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/recourse-dev/recourse/broker"
	"github.com/recourse-dev/recourse/chat"
	"github.com/recourse-dev/recourse/event"
	"github.com/recourse-dev/recourse/layer"
	"github.com/recourse-dev/recourse/layers/retry"
	"github.com/recourse-dev/recourse/recoursetest"
)

const system = "You are terse."

// R16.2: a failed Send keeps the user message and the completed tool
// history and returns the typed error; the next turn builds on it.
func TestR16_2_SendFailureKeepsUserAndToolHistory(t *testing.T) {
	r := newRig(t, retry.Policy{}, steps(toolCallStep("call_1", `{"city":"Paris"}`), repeat(gateway504(), 2), okStep("Sunny."))...)
	tl := &toolLog{}
	b := broker.New(r.Client, broker.WithModel(model), broker.WithTools(lookup(tl)),
		broker.WithPolicy(wire(r, retry.Policy{MaxAttempts: 2, Admit: allow, Jitter: jitter(0)})))
	s := broker.NewSession(b, system)
	answer, err := s.Send(context.Background(), "Weather in Paris?")
	var re *layer.RecoveryError
	require.ErrorAs(t, err, &re)
	assert.Equal(t, event.OutcomeExhausted, re.Outcome)
	assert.Empty(t, answer)
	assert.Equal(t, []string{"system", "user", "assistant(tool_calls)", "tool"}, roles(s.Messages()))
	assert.Len(t, tl.runs(), 1)

	answer, err = s.Send(context.Background(), "And now?")
	require.NoError(t, err)
	assert.Equal(t, "Sunny.", answer)
	assert.Equal(t, []string{"system", "user", "assistant(tool_calls)", "tool", "user", "assistant"}, roles(s.Messages()))
	assert.Len(t, tl.runs(), 1, "the next turn does not re-run the tool")
}

// R16.2, R13.5: SendStream cancelled mid-answer, or left by its consumer,
// keeps the user message and no partial assistant text.
func TestR16_2_SendStreamCancelledOrLeftKeepsNoPartialText(t *testing.T) {
	for _, how := range []string{"cancelled", "consumer stops"} {
		t.Run(how, func(t *testing.T) {
			events := recoursetest.OpenAIStream("Partial ", "answer")
			r := newRig(t, retry.Policy{}, recoursetest.SSE(events[:2]...).Held())
			b := broker.New(r.Client, broker.WithModel(model), broker.WithContinuation(broker.Continuation{Max: 3}),
				broker.WithPolicy(wire(r, retry.Policy{MaxAttempts: 3})))
			s := broker.NewSession(b, system)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var got []string
			var err error
			for chunk, e := range s.SendStream(ctx, "Tell me") {
				if e != nil {
					err = e
					break
				}
				got = append(got, chunk)
				if how == "consumer stops" {
					break
				}
				cancel()
			}
			assert.Equal(t, []string{"Partial "}, got)
			if how == "cancelled" {
				var re *layer.RecoveryError
				require.ErrorAs(t, err, &re)
				assert.Equal(t, event.OutcomeCancelled, re.Outcome)
				assert.ErrorIs(t, err, context.Canceled)
			} else {
				assert.NoError(t, err)
			}
			assert.Equal(t, []chat.Message{{Role: chat.System, Content: system}, {Role: chat.User, Content: "Tell me"}}, s.Messages())
		})
	}
}

// R3.3: an invalid policy is the PolicyError of Send and the first and only
// item of SendStream; the user message is kept, no assistant is added and
// nothing is sent.
func TestR3_3_PolicyErrorAddsNoAssistantMessage(t *testing.T) {
	r := newRig(t, retry.Policy{}, okStep("never"))
	b := broker.New(r.Client, broker.WithModel(model), broker.WithPolicy(retry.Policy{MaxAttempts: -1}))
	s := broker.NewSession(b, system)
	_, err := s.Send(context.Background(), "one")
	var pe *layer.PolicyError
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, "MaxAttempts", pe.Field)

	var items []error
	for chunk, e := range s.SendStream(context.Background(), "two") {
		assert.Empty(t, chunk)
		items = append(items, e)
	}
	require.Len(t, items, 1)
	require.ErrorAs(t, items[0], &pe)
	assert.Equal(t, []string{"system", "user", "user"}, roles(s.Messages()))
	assert.Equal(t, 0, r.Server.Count())
}

// R16.2: a successful SendStream keeps the whole turn, tools included.
func TestR16_2_SendStreamKeepsTheTurn(t *testing.T) {
	r := newRig(t, retry.Policy{}, toolCallStream("call_1", `{"city":"Oslo"}`), recoursetest.SSE(recoursetest.OpenAIStream("Cold", ".")...))
	tl := &toolLog{}
	b := broker.New(r.Client, broker.WithModel(model), broker.WithTools(lookup(tl)))
	s := broker.NewSession(b, "")
	text, err := drain(s.SendStream(context.Background(), "Oslo?"))
	require.NoError(t, err)
	assert.Equal(t, "Cold.", text)
	assert.Equal(t, []string{"user", "assistant(tool_calls)", "tool", "assistant"}, roles(s.Messages()))
	assert.Len(t, tl.runs(), 1)
}

// A session runs one turn at a time.
func TestSessionRefusesAConcurrentTurn(t *testing.T) {
	r := newRig(t, retry.Policy{}, recoursetest.SSE(recoursetest.OpenAIStream("a", "b")...))
	b := broker.New(r.Client, broker.WithModel(model))
	s := broker.NewSession(b, system)
	for range s.SendStream(context.Background(), "first") {
		_, err := s.Send(context.Background(), "second")
		assert.ErrorIs(t, err, broker.ErrBusy)
		_, err = drain(s.SendStream(context.Background(), "third"))
		assert.ErrorIs(t, err, broker.ErrBusy)
	}
	assert.Equal(t, []string{"system", "user", "assistant"}, roles(s.Messages()))
	assert.Equal(t, 1, r.Server.Count())
}

// Messages returns a copy: mutating it changes nothing in the session.
func TestSessionMessagesIsACopy(t *testing.T) {
	s := broker.NewSession(broker.New(nil), system)
	m := s.Messages()
	m[0].Content = "changed"
	assert.Equal(t, system, s.Messages()[0].Content)
}
