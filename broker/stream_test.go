package broker_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/recourse-dev/recourse/broker"
	"github.com/recourse-dev/recourse/chain"
	"github.com/recourse-dev/recourse/chat"
	"github.com/recourse-dev/recourse/codecs/ollama"
	"github.com/recourse-dev/recourse/codecs/openai"
	"github.com/recourse-dev/recourse/event"
	"github.com/recourse-dev/recourse/internal/rigtest"
	"github.com/recourse-dev/recourse/layer"
	"github.com/recourse-dev/recourse/layers/retry"
	"github.com/recourse-dev/recourse/recoursetest"
)

// continuing returns a broker with the lookup tool, continuation budget max
// and a policy whose continuation backoff is base 100 ms with jitter 1.
func continuing(r *rigtest.Rig, tl *toolLog, ns *notices, maxConts int, p retry.Policy) *broker.Broker {
	if p.BaseDelay == nil {
		p.BaseDelay = new(100 * time.Millisecond)
	}
	if p.Jitter == nil {
		p.Jitter = jitter(1)
	}
	return broker.New(r.Client, broker.WithModel(model), broker.WithTools(lookup(tl)), broker.WithNotices(ns.add),
		broker.WithContinuation(broker.Continuation{Max: maxConts}), broker.WithPolicy(wire(r, p)))
}

// R17.3: an HTTP error before the stream opened commits nothing and is not
// a continuation; it is retried (and here exhausted) like any completion.
func TestR17_3_PreStreamErrorAddsNoHistory(t *testing.T) {
	r := newRig(t, retry.Policy{}, repeat(gateway504(), 2)...)
	tl, ns := &toolLog{}, &notices{}
	b := continuing(r, tl, ns, 3, retry.Policy{MaxAttempts: 2})
	h := user("q")
	text, err := drain(b.GenerateStream(context.Background(), &h))
	var re *layer.RecoveryError
	require.ErrorAs(t, err, &re)
	assert.Equal(t, event.OutcomeExhausted, re.Outcome)
	var ce *broker.ContinuationError
	assert.False(t, errors.As(err, &ce))
	assert.Empty(t, text)
	assert.Equal(t, []string{"user"}, roles(h), "no partial history")
	assert.Len(t, ns.retries(), 1, "a retry notice, not a continuation")
	assert.Empty(t, ns.continuations())
}

// R17.3: text closed by the start of a tool call is committed; the
// unfinished tool call is neither committed nor executed; the next request
// of the same loop continues from the partial assistant message.
func TestR17_3_InterruptionCommitsOnlyCompletedTextAndNeverTheToolCall(t *testing.T) {
	r := newRig(t, retry.Policy{},
		broken(textDelta("Let me look "), textDelta("that up. "), toolStart("call_1", "lookup"), toolArgs(`{"city":"Par`)),
		recoursetest.SSE(recoursetest.OpenAIStream("It is ", "sunny.")...))
	tl, ns := &toolLog{}, &notices{rec: r.Rec}
	b := continuing(r, tl, ns, 3, retry.Policy{})
	h := user("Weather in Paris?")
	text, err := drain(b.GenerateStream(context.Background(), &h))
	require.NoError(t, err)
	assert.Equal(t, "Let me look that up. It is sunny.", text)
	assert.Empty(t, tl.runs(), "an incomplete tool call never runs")
	assert.Equal(t, []chat.Message{
		{Role: chat.User, Content: "Weather in Paris?"},
		{Role: chat.Assistant, Content: "Let me look that up. "},
		{Role: chat.Assistant, Content: "It is sunny."},
	}, h)

	msgs, tools := sent(t, r)
	require.Len(t, msgs, 2)
	assert.Equal(t, []wireMessage{{Role: "user", Content: "Weather in Paris?"}, {Role: "assistant", Content: "Let me look that up. "}}, msgs[1],
		"the continuation request is the history, nothing injected")
	assert.Equal(t, []int{1, 1}, tools)

	assert.Equal(t, []broker.ContinuationNotice{{Completion: 1, Attempt: 1, Max: 3, Reason: "transport error", Wait: 100 * time.Millisecond}},
		ns.continuations())
	assert.Equal(t, "LLM stream interrupted; continuing generation (1/3): transport error", broker.FormatContinuation(ns.continuations()[0]))
	assert.Equal(t, []time.Duration{100 * time.Millisecond}, r.Clock.Sleeps())
	assert.Equal(t, []string{"event:interrupted", "notice:llm_continuation", "sleep", "event:attempt_started"},
		only(r.Rec.Log(), "event:interrupted", "notice:llm_continuation", "sleep", "event:attempt_started")[1:],
		"announced before the backoff, then the next request")
	ids, _ := logicalIDs(r.Rec.Events())
	assert.Len(t, ids, 2, "the continuation is a new completion")
}

// R13.4, R17.3: a tool call whose arguments and finish arrived, but whose
// stream broke before [DONE], is still not a completed call.
func TestR17_3_ToolCallWithoutTerminalFrameNeverRuns(t *testing.T) {
	r := newRig(t, retry.Policy{},
		broken(textDelta("Checking. "), toolStart("call_1", "lookup"), toolArgs(`{"city":"Paris"}`), finish("tool_calls")),
		recoursetest.SSE(recoursetest.OpenAIStream("Done.")...))
	tl, ns := &toolLog{}, &notices{}
	b := continuing(r, tl, ns, 1, retry.Policy{})
	h := user("q")
	_, err := drain(b.GenerateStream(context.Background(), &h))
	require.NoError(t, err)
	assert.Empty(t, tl.runs())
	assert.Equal(t, []string{"user", "assistant", "assistant"}, roles(h))
	assert.Equal(t, "Checking. ", h[1].Content)
	assert.Empty(t, h[1].ToolCalls)
}

// R17.3: reasoning closes when content starts, and the open text block is
// not committed. The closed reasoning is committed alone, as an assistant
// message without content: the history keeps it exactly once, the notice
// names the failure (it is a continuation, not a restart) and says how much
// delivered text was discarded. OpenAI cannot take reasoning back, so its
// encoder leaves that message out and the continuation request holds no
// empty assistant turn. The break is a transport error or an idle timeout.
func TestR17_3_ClosedReasoningAloneIsCommittedWithoutAnEmptyTurn(t *testing.T) {
	for _, c := range []struct {
		name   string
		opts   []chain.Option
		reason string
	}{
		{"transport error", nil, "transport error"},
		{"idle timeout", []chain.Option{stallAtCut(event.StallIdle)}, "idle timeout"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := rigtest.NewWith(t, openai.New(), retry.Policy{}, c.opts,
				broken(reasoningDelta("The user "), reasoningDelta("wants a greeting."), textDelta("Hel")),
				recoursetest.SSE(recoursetest.OpenAIStream("Hello!")...))
			tl, ns := &toolLog{}, &notices{}
			b := continuing(r, tl, ns, 2, retry.Policy{})
			h := user("greet me")
			text, err := drain(b.GenerateStream(context.Background(), &h))
			require.NoError(t, err)
			assert.Equal(t, "HelHello!", text, "the consumer saw the discarded text; the notice says so")
			assert.Equal(t, []chat.Message{
				{Role: chat.User, Content: "greet me"},
				{Role: chat.Assistant, Reasoning: "The user wants a greeting."},
				{Role: chat.Assistant, Content: "Hello!"},
			}, h, "the closed reasoning is kept once")
			require.Len(t, ns.continuations(), 1)
			n := ns.continuations()[0]
			assert.Equal(t, 3, n.Discarded)
			assert.Equal(t, c.reason, n.Reason, "the notice names the failure, not a restart")
			assert.Equal(t, "LLM stream interrupted; continuing generation (1/2): "+c.reason, broker.FormatContinuation(n))

			msgs, _ := sent(t, r)
			require.Len(t, msgs, 2)
			assert.Equal(t, []wireMessage{{Role: "user", Content: "greet me"}}, msgs[1],
				"no empty assistant turn is sent: OpenAI takes no reasoning back")
			reqs := r.Server.Requests()
			assert.NotContains(t, string(reqs[1].Body), "wants a greeting", "reasoning is not sent back to OpenAI")
		})
	}
}

// R17.3, R14.1: Ollama takes reasoning back (a message's "thinking"): the
// closed reasoning committed by a continuation is sent with the
// continuation request, as the assistant turn it is, and kept once in the
// history.
func TestR17_3_ClosedReasoningReachesOllamaAsThinking(t *testing.T) {
	line := func(msg string) string {
		return `{"model":"llama3.2","created_at":"2024-01-01T00:00:00Z","message":` + msg + `,"done":false}`
	}
	cut := recoursetest.NDJSON(line(`{"role":"assistant","content":"","thinking":"The user wants a greeting."}`),
		line(`{"role":"assistant","content":"Hel"}`))
	cut = cut.Cut(len(cut.Chunks[0]) + len(cut.Chunks[1]))
	r := rigtest.New(t, ollama.New(), retry.Policy{}, cut, recoursetest.NDJSON(recoursetest.OllamaStream("Hello!")...))
	ns := &notices{}
	b := broker.New(r.Client, broker.WithModel("llama3.2"), broker.WithNotices(ns.add),
		broker.WithContinuation(broker.Continuation{Max: 2}),
		broker.WithPolicy(wire(r, retry.Policy{Admit: allow, Jitter: jitter(0)})))
	h := user("greet me")
	text, err := drain(b.GenerateStream(context.Background(), &h))
	require.NoError(t, err)
	assert.Equal(t, "HelHello!", text)
	assert.Equal(t, []chat.Message{
		{Role: chat.User, Content: "greet me"},
		{Role: chat.Assistant, Reasoning: "The user wants a greeting."},
		{Role: chat.Assistant, Content: "Hello!"},
	}, h, "the closed reasoning is kept once")
	require.Len(t, ns.continuations(), 1)
	assert.Equal(t, "transport error", ns.continuations()[0].Reason, "the notice names the failure, not a restart")

	reqs := r.Server.Requests()
	require.Len(t, reqs, 2)
	var body struct {
		Messages []map[string]any `json:"messages"`
	}
	require.NoError(t, json.Unmarshal(reqs[1].Body, &body))
	assert.Equal(t, []map[string]any{
		{"role": "user", "content": "greet me"},
		{"role": "assistant", "content": "", "thinking": "The user wants a greeting."},
	}, body.Messages, "the continuation request carries the reasoning as thinking")
}

// R17.3: closed reasoning followed by closed text commits both; the text
// carries the turn, so the provider never sees an empty assistant message.
func TestR17_3_ClosedReasoningAndTextAreCommitted(t *testing.T) {
	r := newRig(t, retry.Policy{},
		broken(reasoningDelta("Plan."), textDelta("Checking. "), toolStart("call_1", "lookup")),
		recoursetest.SSE(recoursetest.OpenAIStream("Done.")...))
	tl, ns := &toolLog{}, &notices{}
	b := continuing(r, tl, ns, 1, retry.Policy{})
	h := user("q")
	_, err := drain(b.GenerateStream(context.Background(), &h))
	require.NoError(t, err)
	assert.Equal(t, chat.Message{Role: chat.Assistant, Content: "Checking. ", Reasoning: "Plan."}, h[1])
	reqs := r.Server.Requests()
	require.Len(t, reqs, 2)
	assert.Contains(t, string(reqs[1].Body), `"content":"Checking. "`)
}

// R17.3: a break before any block closed commits nothing; it is announced
// as a restart and the same conversation is sent again. Text stays open
// across further text and across reasoning; reasoning stays open across
// further reasoning.
func TestR17_3_BreakBeforeAnyClosedBlockIsARestart(t *testing.T) {
	cases := []struct {
		name      string
		events    []string
		discarded int
	}{
		{"one text delta", []string{textDelta("Hel")}, 3},
		{"several text deltas", []string{textDelta("Hel"), textDelta("lo, "), textDelta("wor")}, 10},
		{"reasoning after text", []string{textDelta("Hel"), reasoningDelta("hmm")}, 3},
		{"reasoning only", []string{reasoningDelta("The user "), reasoningDelta("says hi")}, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := newRig(t, retry.Policy{}, broken(c.events...), recoursetest.SSE(recoursetest.OpenAIStream("Hello")...))
			tl, ns := &toolLog{}, &notices{}
			b := continuing(r, tl, ns, 3, retry.Policy{})
			h := user("hi")
			_, err := drain(b.GenerateStream(context.Background(), &h))
			require.NoError(t, err)
			require.Len(t, ns.continuations(), 1)
			n := ns.continuations()[0]
			assert.Equal(t, broker.ReasonRestart, n.Reason)
			assert.Equal(t, c.discarded, n.Discarded)
			assert.Equal(t, []string{"user", "assistant"}, roles(h))
			assert.Equal(t, "Hello", h[1].Content)
			reqs := r.Server.Requests()
			require.Len(t, reqs, 2)
			assert.Equal(t, reqs[0].Body, reqs[1].Body, "nothing was committed")
		})
	}
}

// R17.3: the budget holds and ends with a typed error wrapping the last
// RecoveryError; each continuation backs off like a retry (100, 200 ms).
func TestR17_3_ContinuationCapEndsWithATypedError(t *testing.T) {
	part := func(s string) recoursetest.Step { return broken(textDelta(s), toolStart("call_1", "lookup")) }
	r := newRig(t, retry.Policy{}, part("one "), part("two "), part("three "), recoursetest.SSE(recoursetest.OpenAIStream("never")...))
	tl, ns := &toolLog{}, &notices{}
	b := continuing(r, tl, ns, 2, retry.Policy{})
	h := user("q")
	_, err := drain(b.GenerateStream(context.Background(), &h))
	var ce *broker.ContinuationError
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, event.OutcomeExhausted, ce.Outcome)
	assert.Equal(t, 2, ce.Continuations)
	assert.Equal(t, 2, ce.Max)
	assert.Equal(t, 3, ce.Completion)
	var re *layer.RecoveryError
	require.ErrorAs(t, err, &re)
	assert.Same(t, ce.Err, re)
	assert.Equal(t, event.OutcomeInterrupted, re.Outcome)
	assert.Equal(t, 3, r.Server.Count())
	assert.Equal(t, []string{"user", "assistant", "assistant"}, roles(h), "the third part is not committed")
	assert.Equal(t, "one ", h[1].Content)
	assert.Equal(t, "two ", h[2].Content)
	assert.Empty(t, tl.runs())
	assert.Equal(t, []time.Duration{100 * time.Millisecond, 200 * time.Millisecond}, r.Clock.Sleeps())
	require.Len(t, ns.continuations(), 2)
	assert.Equal(t, 2, ns.continuations()[1].Attempt)
	assert.NotContains(t, err.Error(), "one ")
}

// R17.3: the budget bounds consecutive continuations of one answer; a
// completion that ends normally resets it.
func TestR17_3_ANormalCompletionResetsTheBudget(t *testing.T) {
	r := newRig(t, retry.Policy{},
		broken(textDelta("A "), toolStart("call_1", "lookup")),
		toolCallStream("call_2", `{"city":"Oslo"}`),
		broken(textDelta("B "), toolStart("call_3", "lookup")),
		recoursetest.SSE(recoursetest.OpenAIStream("cold")...))
	tl, ns := &toolLog{}, &notices{}
	b := continuing(r, tl, ns, 1, retry.Policy{})
	h := user("q")
	_, err := drain(b.GenerateStream(context.Background(), &h))
	require.NoError(t, err)
	assert.Equal(t, []string{`{"city":"Oslo"}`}, tl.runs())
	assert.Equal(t, []string{"user", "assistant", "assistant(tool_calls)", "tool", "assistant", "assistant"}, roles(h))
	require.Len(t, ns.continuations(), 2)
	assert.Equal(t, 1, ns.continuations()[0].Completion)
	assert.Equal(t, 3, ns.continuations()[1].Completion)
	assert.Equal(t, 1, ns.continuations()[1].Attempt)
}

// R17.3, R9: cancellation wins over continuation — during the backoff and
// during admission — and then nothing is committed or sent.
func TestR17_3_CancellationBeatsContinuation(t *testing.T) {
	brk := func() recoursetest.Step { return broken(textDelta("Done: "), toolStart("call_1", "lookup")) }
	t.Run("backoff", func(t *testing.T) {
		r := newRig(t, retry.Policy{}, brk(), recoursetest.SSE(recoursetest.OpenAIStream("never")...))
		r.Clock.Block = true // the backoff sleeps until its context is done
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		tl := &toolLog{}
		ns := &notices{hook: func(n broker.Notice) {
			if n.Event == broker.EventContinuation {
				go cancel()
			}
		}}
		b := continuing(r, tl, ns, 3, retry.Policy{})
		h := user("q")
		_, err := drain(b.GenerateStream(ctx, &h))
		var ce *broker.ContinuationError
		require.ErrorAs(t, err, &ce)
		assert.Equal(t, event.OutcomeCancelled, ce.Outcome)
		assert.ErrorIs(t, err, context.Canceled)
		assert.Equal(t, 1, r.Server.Count(), "no continuation request")
		assert.Equal(t, []string{"user"}, roles(h), "nothing committed")
	})
	t.Run("admission", func(t *testing.T) {
		r := newRig(t, retry.Policy{}, brk(), recoursetest.SSE(recoursetest.OpenAIStream("never")...))
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		ns := &notices{}
		hook := func(hctx context.Context, _ layer.AdmissionRequest) (layer.Decision, error) {
			cancel()
			<-hctx.Done()
			return layer.Allow, nil // too late: the wait ended
		}
		b := continuing(r, &toolLog{}, ns, 3, retry.Policy{Admit: hook})
		h := user("q")
		_, err := drain(b.GenerateStream(ctx, &h))
		var ce *broker.ContinuationError
		require.ErrorAs(t, err, &ce)
		assert.Equal(t, event.OutcomeCancelled, ce.Outcome)
		assert.ErrorIs(t, err, context.Canceled)
		assert.Empty(t, ns.continuations())
		assert.Equal(t, 1, r.Server.Count())
		assert.Equal(t, []string{"user"}, roles(h))
	})
	t.Run("mid-stream", func(t *testing.T) {
		events := recoursetest.OpenAIStream("Hi", "there")
		r := newRig(t, retry.Policy{}, recoursetest.SSE(events[:2]...).Held())
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		ns := &notices{}
		b := continuing(r, &toolLog{}, ns, 3, retry.Policy{})
		h := user("q")
		var err error
		for s, e := range b.GenerateStream(ctx, &h) {
			if e != nil {
				err = e
				break
			}
			assert.Equal(t, "Hi", s)
			cancel()
		}
		var re *layer.RecoveryError
		require.ErrorAs(t, err, &re)
		assert.Equal(t, event.OutcomeCancelled, re.Outcome)
		assert.Empty(t, ns.continuations())
		assert.Equal(t, []string{"user"}, roles(h))
	})
}

// R17.3, R8: a continuation passes the same admission as a retry: the hook
// sees the safe failure; a rejection stops it; without a hook an Ollama
// break needs admission.
func TestR17_3_ContinuationAdmission(t *testing.T) {
	brk := func() recoursetest.Step { return broken(textDelta("Part. "), toolStart("call_1", "lookup")) }
	t.Run("allowed", func(t *testing.T) {
		r := newRig(t, retry.Policy{}, brk(), recoursetest.SSE(recoursetest.OpenAIStream("Rest.")...))
		var asked []layer.AdmissionRequest
		hook := func(_ context.Context, req layer.AdmissionRequest) (layer.Decision, error) {
			asked = append(asked, req)
			return layer.Allow, nil
		}
		b := continuing(r, &toolLog{}, &notices{}, 3, retry.Policy{Admit: hook})
		h := user("q")
		_, err := drain(b.GenerateStream(context.Background(), &h))
		require.NoError(t, err)
		require.Len(t, asked, 1)
		assert.Equal(t, event.ReasonSemanticOutput, asked[0].Failure.Classification.Reason)
		assert.Equal(t, 1, asked[0].NextAttempt)
	})
	t.Run("rejected", func(t *testing.T) {
		r := newRig(t, retry.Policy{}, brk(), recoursetest.SSE(recoursetest.OpenAIStream("Rest.")...))
		hook := func(context.Context, layer.AdmissionRequest) (layer.Decision, error) { return layer.Reject, nil }
		ns := &notices{}
		b := continuing(r, &toolLog{}, ns, 3, retry.Policy{Admit: hook})
		h := user("q")
		_, err := drain(b.GenerateStream(context.Background(), &h))
		var ce *broker.ContinuationError
		require.ErrorAs(t, err, &ce)
		assert.Equal(t, event.OutcomeAdmissionRejected, ce.Outcome)
		assert.Empty(t, ns.continuations())
		assert.Equal(t, 1, r.Server.Count())
		assert.Equal(t, []string{"user"}, roles(h))
	})
	t.Run("ollama without a hook", func(t *testing.T) {
		line := func(msg string) string {
			return `{"model":"llama3.2","created_at":"2024-01-01T00:00:00Z","message":` + msg + `,"done":false}`
		}
		cut := recoursetest.NDJSON(line(`{"role":"assistant","content":"","thinking":"hmm"}`), line(`{"role":"assistant","content":"Hel"}`))
		cut = cut.Cut(len(cut.Chunks[0]) + len(cut.Chunks[1]))
		r := rigtest.New(t, ollama.New(), retry.Policy{}, cut)
		b := broker.New(r.Client, broker.WithModel("llama3.2"), broker.WithContinuation(broker.Continuation{Max: 3}),
			broker.WithPolicy(wire(r, retry.Policy{})))
		h := user("q")
		_, err := drain(b.GenerateStream(context.Background(), &h))
		var ce *broker.ContinuationError
		require.ErrorAs(t, err, &ce)
		assert.Equal(t, event.OutcomeAdmissionRequired, ce.Outcome)
		assert.Equal(t, 1, r.Server.Count())
		assert.Equal(t, []string{"user"}, roles(h))
	})
}

// R17.3: continuation is off by default: a broken stream ends the run with
// the chain's interrupted error and commits nothing.
func TestR17_3_OffByDefault(t *testing.T) {
	r := newRig(t, retry.Policy{MaxAttempts: 3}, broken(textDelta("Part. "), toolStart("call_1", "lookup")))
	ns := &notices{}
	b := broker.New(r.Client, broker.WithModel(model), broker.WithTools(lookup(&toolLog{})), broker.WithNotices(ns.add))
	h := user("q")
	text, err := drain(b.GenerateStream(context.Background(), &h))
	assert.Equal(t, "Part. ", text)
	var re *layer.RecoveryError
	require.ErrorAs(t, err, &re)
	assert.Equal(t, event.OutcomeInterrupted, re.Outcome)
	assert.Equal(t, []string{"user"}, roles(h))
	assert.Equal(t, 1, r.Server.Count())
	assert.Empty(t, ns.continuations())
}

// R17.3: "a stream that completes normally takes exactly the normal success
// path" — a text answer and a tool-call answer give the same history, the
// same tool runs and the same requests with every feature on as with none.
func TestR17_3_NormalResponsesBehaveExactlyAsWithoutTheFeatures(t *testing.T) {
	type scenario struct {
		name      string
		streaming bool
		steps     func() []recoursetest.Step
	}
	scenarios := []scenario{
		{"text/Generate", false, func() []recoursetest.Step { return []recoursetest.Step{okStep("Hello there.")} }},
		{"tools/Generate", false, func() []recoursetest.Step {
			return []recoursetest.Step{toolCallStep("call_1", `{"city":"Oslo"}`), okStep("Cold.")}
		}},
		{"text/GenerateStream", true, func() []recoursetest.Step {
			return []recoursetest.Step{stream("stop", reasoningDelta("think"), textDelta("Hello "), textDelta("there."))}
		}},
		{"tools/GenerateStream", true, func() []recoursetest.Step {
			return []recoursetest.Step{stream("tool_calls", textDelta("Checking. "), toolStart("call_1", "lookup"), toolArgs(`{"city":`), toolArgs(`"Oslo"}`)),
				recoursetest.SSE(recoursetest.OpenAIStream("Cold.")...)}
		}},
	}
	type result struct {
		history []chat.Message
		runs    []string
		bodies  [][]byte
		text    string
	}
	play := func(t *testing.T, s scenario, featured bool) result {
		r := newRig(t, retry.Policy{}, s.steps()...)
		tl := &toolLog{}
		opts := []broker.Option{broker.WithModel(model), broker.WithTools(lookup(tl))}
		if featured {
			opts = append(opts, broker.WithNotices((&notices{}).add), broker.WithContinuation(broker.Continuation{Max: 3}),
				broker.WithPolicy(wire(r, retry.Policy{MaxAttempts: 4, Admit: allow})))
		}
		b := broker.New(r.Client, opts...)
		h := user("Weather?")
		var res result
		var err error
		if s.streaming {
			res.text, err = drain(b.GenerateStream(context.Background(), &h))
		} else {
			var comp *chat.Completion
			comp, err = b.Generate(context.Background(), &h)
			if comp != nil {
				res.text = comp.Message.Content
			}
		}
		require.NoError(t, err)
		res.history, res.runs = h, tl.runs()
		for _, q := range r.Server.Requests() {
			res.bodies = append(res.bodies, q.Body)
		}
		return res
	}
	for _, s := range scenarios {
		t.Run(s.name, func(t *testing.T) {
			plain, featured := play(t, s, false), play(t, s, true)
			assert.Equal(t, plain, featured)
			assert.NotEmpty(t, plain.text)
		})
	}
}

// R17.3 with R7, R8.1, R3.2: the continuation's decision plane — a deadline
// that leaves no room for the backoff, a hook without a decision, a failing
// Sleep hook and an invalid jitter sample — each ends the run without
// committing or sending anything.
func TestR17_3_ContinuationStops(t *testing.T) {
	brk := func() recoursetest.Step { return broken(textDelta("Part. "), toolStart("call_1", "lookup")) }
	sleepFailed := errString("sleep hook failed")
	cases := []struct {
		name    string
		policy  func(r *rigtest.Rig) retry.Policy
		outcome event.Outcome
		policyE bool
	}{
		{"deadline", func(r *rigtest.Rig) retry.Policy {
			return retry.Policy{Deadline: rigtest.Epoch.Add(50 * time.Millisecond)} // the backoff is 100 ms
		}, event.OutcomeDeadline, false},
		{"no decision", func(*rigtest.Rig) retry.Policy {
			return retry.Policy{Admit: func(context.Context, layer.AdmissionRequest) (layer.Decision, error) { return "maybe", nil }}
		}, event.OutcomeAdmissionNoDecision, false},
		{"hook error", func(*rigtest.Rig) retry.Policy {
			return retry.Policy{Admit: func(context.Context, layer.AdmissionRequest) (layer.Decision, error) {
				return layer.Allow, errString("store down")
			}}
		}, event.OutcomeAdmissionNoDecision, false},
		{"sleep hook fails", func(*rigtest.Rig) retry.Policy {
			return retry.Policy{Sleep: func(context.Context, time.Duration) error { return sleepFailed }}
		}, event.OutcomeInterrupted, false},
		{"invalid jitter", func(*rigtest.Rig) retry.Policy {
			return retry.Policy{Jitter: jitter(1.5)}
		}, "", true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := newRig(t, retry.Policy{}, brk(), recoursetest.SSE(recoursetest.OpenAIStream("never")...))
			b := continuing(r, &toolLog{}, &notices{}, 3, c.policy(r))
			h := user("q")
			_, err := drain(b.GenerateStream(context.Background(), &h))
			if c.policyE {
				var pe *layer.PolicyError
				require.ErrorAs(t, err, &pe)
				assert.Equal(t, "Jitter", pe.Field)
			} else {
				var ce *broker.ContinuationError
				require.ErrorAs(t, err, &ce)
				assert.Equal(t, c.outcome, ce.Outcome)
				if c.outcome == event.OutcomeInterrupted {
					assert.ErrorIs(t, err, sleepFailed)
					assert.NotContains(t, err.Error(), "sleep hook failed", "the hook's error stays out of the safe text")
				}
			}
			assert.Equal(t, 1, r.Server.Count())
			assert.Equal(t, []string{"user"}, roles(h))
		})
	}
}

// R17.3: without WithPolicy a continuation uses the policy defaults (no
// hook: OpenAI may continue; base 100 ms, real timer).
func TestR17_3_ContinuationWithThePolicyDefaults(t *testing.T) {
	r := newRig(t, retry.Policy{}, broken(textDelta("Part. "), toolStart("call_1", "lookup")), recoursetest.SSE(recoursetest.OpenAIStream("Rest.")...))
	ns := &notices{}
	b := broker.New(r.Client, broker.WithModel(model), broker.WithNotices(ns.add), broker.WithContinuation(broker.Continuation{Max: 1}))
	h := user("q")
	text, err := drain(b.GenerateStream(context.Background(), &h))
	require.NoError(t, err)
	assert.Equal(t, "Part. Rest.", text)
	require.Len(t, ns.continuations(), 1)
	assert.LessOrEqual(t, ns.continuations()[0].Wait, retry.DefaultBaseDelay)
	assert.Equal(t, []string{"user", "assistant", "assistant"}, roles(h))
}
