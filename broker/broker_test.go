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
	"github.com/recourse-dev/recourse/chat"
	"github.com/recourse-dev/recourse/event"
	"github.com/recourse-dev/recourse/internal/rigtest"
	"github.com/recourse-dev/recourse/layer"
	"github.com/recourse-dev/recourse/layers/retry"
	"github.com/recourse-dev/recourse/recoursetest"
)

// R17.1: the notice of a 504 arrives before the backoff sleep, with the
// completion index, the counters, the wait, the elapsed time and the status.
func TestR17_1_RetryNoticeFiresBeforeTheSleep(t *testing.T) {
	for _, streaming := range []bool{false, true} {
		name := map[bool]string{false: "Generate", true: "GenerateStream"}[streaming]
		t.Run(name, func(t *testing.T) {
			final := okStep("hi")
			if streaming {
				final = recoursetest.SSE(recoursetest.OpenAIStream("hi")...)
			}
			r := newRig(t, retry.Policy{}, gateway504(), final)
			pol := wire(r, retry.Policy{
				MaxAttempts: 4, BaseDelay: new(2400 * time.Millisecond), Jitter: jitter(0.5),
				Admit: func(context.Context, layer.AdmissionRequest) (layer.Decision, error) {
					r.Clock.Advance(300 * time.Millisecond) // the completion's elapsed time grows
					return layer.Allow, nil
				},
			})
			ns := &notices{rec: r.Rec}
			b := broker.New(r.Client, broker.WithModel(model), broker.WithPolicy(pol), broker.WithNotices(ns.add))
			h := user(rigtest.Prompt)
			var err error
			if streaming {
				var text string
				text, err = drain(b.GenerateStream(context.Background(), &h))
				assert.Equal(t, "hi", text)
			} else {
				_, err = b.Generate(context.Background(), &h)
			}
			require.NoError(t, err)

			require.Len(t, ns.retries(), 1)
			n := ns.retries()[0]
			assert.Equal(t, broker.RetryNotice{Completion: 1, FailedAttempt: 1, MaxAttempts: 4, Wait: 1200 * time.Millisecond,
				Elapsed: 300 * time.Millisecond, HTTPStatus: 504, Error: "HTTP 504"}, n)
			assert.Equal(t, "retrying LLM request after HTTP 504 (attempt 2/4 in 1.2s)", broker.FormatRetry(n))
			assert.Equal(t, []string{"event:delay_scheduled", "notice:llm_retry", "sleep", "event:retry_started"},
				only(r.Rec.Log(), "event:delay_scheduled", "notice:llm_retry", "sleep", "event:retry_started"),
				"the notice comes after delay_scheduled and before the sleep")
			assert.Equal(t, []time.Duration{1200 * time.Millisecond}, r.Clock.Sleeps())
			assert.Equal(t, roles(append(user(""), chat.Message{Role: chat.Assistant})), roles(h))
			assert.Equal(t, "hi", h[1].Content)
		})
	}
}

// R17.1: a failure without a status shows its kind; R1.3: without
// WithPolicy the chain's own policy recovers and notices still fire.
func TestR17_1_TransportErrorNoticeWithTheChainsOwnPolicy(t *testing.T) {
	r := newRig(t, retry.Policy{MaxAttempts: 3, BaseDelay: new(1600 * time.Millisecond), Jitter: jitter(0.5)},
		recoursetest.Reset(), okStep("fine"))
	ns := &notices{}
	b := broker.New(r.Client, broker.WithModel(model), broker.WithNotices(ns.add))
	h := user("hello")
	_, err := b.Generate(context.Background(), &h)
	require.NoError(t, err)
	require.Len(t, ns.retries(), 1)
	n := ns.retries()[0]
	assert.Equal(t, 0, n.HTTPStatus)
	assert.Equal(t, "transport error", n.Error)
	assert.Equal(t, "retrying LLM request after transport error (attempt 2/3 in 800ms)", broker.FormatRetry(n))
	assert.Equal(t, 2, r.Server.Count())
}

// R16.1: a tool round, then a completion that needs two retries. The tool
// runs once, the completed messages stay, and the retried completion has its
// own logical ID, shared by its three attempts only.
func TestR16_1_ToolThen504TwiceRunsTheToolOnceUnderANewLogicalID(t *testing.T) {
	r := newRig(t, retry.Policy{}, steps(toolCallStep("call_1", `{"city":"Paris"}`), repeat(gateway504(), 2), okStep("It is sunny in Paris."))...)
	tl := &toolLog{}
	ns := &notices{}
	b := broker.New(r.Client, broker.WithModel(model), broker.WithTools(lookup(tl)), broker.WithNotices(ns.add),
		broker.WithPolicy(wire(r, retry.Policy{MaxAttempts: 3, Admit: allow, Jitter: jitter(0)})))
	h := user("Weather in Paris?")
	comp, err := b.Generate(context.Background(), &h)
	require.NoError(t, err)
	assert.Equal(t, "It is sunny in Paris.", comp.Message.Content)
	assert.Equal(t, []string{`{"city":"Paris"}`}, tl.runs(), "the tool ran exactly once")
	assert.Equal(t, []string{"user", "assistant(tool_calls)", "tool", "assistant"}, roles(h))
	assert.Equal(t, "call_1", h[2].ToolCallID)
	assert.Equal(t, "lookup", h[2].ToolName)
	assert.Equal(t, "sunny "+outputCanary, h[2].Content)

	ids, attempts := logicalIDs(r.Rec.Events())
	require.Len(t, ids, 2, "one logical ID per completion")
	assert.NotEqual(t, ids[0], ids[1])
	assert.Equal(t, []int{1}, attempts[ids[0]])
	assert.Equal(t, []int{1, 2, 3}, attempts[ids[1]], "only the second completion's attempts share its ID")
	require.Len(t, ns.retries(), 2)
	for i, n := range ns.retries() {
		assert.Equal(t, 2, n.Completion, "retries of the second completion")
		assert.Equal(t, i+1, n.FailedAttempt)
		assert.Equal(t, 504, n.HTTPStatus)
	}
	msgs, _ := sent(t, r)
	require.Len(t, msgs, 4)
	assert.Equal(t, msgs[1], msgs[2], "R2.5: the resend is the same payload")
	assert.Equal(t, msgs[1], msgs[3])
	assert.Len(t, msgs[1], 3, "user, assistant(tool_calls), tool: nothing re-run, nothing repeated")
}

// R16.1: when the completion after a tool round is exhausted, the history
// keeps [user, assistant(tool_calls), tool] and the typed error is returned;
// the same for the streaming loop.
func TestR16_1_ExhaustedAfterAToolKeepsTheCompletedHistory(t *testing.T) {
	for _, streaming := range []bool{false, true} {
		name := map[bool]string{false: "Generate", true: "GenerateStream"}[streaming]
		t.Run(name, func(t *testing.T) {
			first := toolCallStep("call_1", `{"city":"Paris"}`)
			if streaming {
				first = toolCallStream("call_1", `{"city":"Paris"}`)
			}
			r := newRig(t, retry.Policy{}, steps(first, repeat(gateway504(), 3))...)
			tl := &toolLog{}
			b := broker.New(r.Client, broker.WithModel(model), broker.WithTools(lookup(tl)),
				broker.WithContinuation(broker.Continuation{Max: 3}),
				broker.WithPolicy(wire(r, retry.Policy{MaxAttempts: 3, Admit: allow, Jitter: jitter(0)})))
			h := user("Weather in Paris?")
			var err error
			if streaming {
				_, err = drain(b.GenerateStream(context.Background(), &h))
			} else {
				_, err = b.Generate(context.Background(), &h)
			}
			var re *layer.RecoveryError
			require.ErrorAs(t, err, &re)
			assert.Equal(t, event.OutcomeExhausted, re.Outcome)
			assert.Len(t, re.History, 3)
			assert.Equal(t, []string{"user", "assistant(tool_calls)", "tool"}, roles(h))
			assert.Len(t, tl.runs(), 1)
			assert.Equal(t, 4, r.Server.Count())
			ids, attempts := logicalIDs(r.Rec.Events())
			require.Len(t, ids, 2)
			assert.Equal(t, []int{1, 2, 3}, attempts[ids[1]])
		})
	}
}

// R16.1: the depth limit stops a model that keeps asking for tools with a
// typed error; the response that asked is neither run nor appended.
func TestR16_1_ToolDepthLimit(t *testing.T) {
	r := newRig(t, retry.Policy{}, repeat(toolCallStep("call_x", `{"city":"Rome"}`), 3)...)
	tl := &toolLog{}
	b := broker.New(r.Client, broker.WithModel(model), broker.WithTools(lookup(tl)), broker.WithMaxToolDepth(2))
	h := user("loop")
	_, err := b.Generate(context.Background(), &h)
	var de *broker.ToolDepthError
	require.ErrorAs(t, err, &de)
	assert.Equal(t, 2, de.Max)
	assert.Equal(t, 3, de.Completion)
	assert.Len(t, tl.runs(), 2)
	assert.Equal(t, []string{"user", "assistant(tool_calls)", "tool", "assistant(tool_calls)", "tool"}, roles(h))
}

// R13.3, R13.4: tool calls of a length-terminated response never run, in
// the ordinary and the streaming loop, and nothing of it is appended;
// continuation does not apply to a length finish.
func TestR13_3_LengthTerminatedToolCallsNeverRun(t *testing.T) {
	t.Run("Generate", func(t *testing.T) {
		r := newRig(t, retry.Policy{}, recoursetest.JSON(200, toolCallBody("call_1", `{"city":"Par`, "length")))
		tl := &toolLog{}
		b := broker.New(r.Client, broker.WithModel(model), broker.WithTools(lookup(tl)))
		h := user("q")
		_, err := b.Generate(context.Background(), &h)
		var ie *broker.IncompleteError
		require.ErrorAs(t, err, &ie)
		assert.Equal(t, "length", ie.FinishReason)
		assert.Empty(t, tl.runs())
		assert.Equal(t, []string{"user"}, roles(h))
	})
	t.Run("GenerateStream", func(t *testing.T) {
		r := newRig(t, retry.Policy{}, recoursetest.SSE(textDelta("Let me "), toolStart("call_1", "lookup"), toolArgs(`{"city":"Par`), finish("length")).Held())
		tl := &toolLog{}
		ns := &notices{}
		b := broker.New(r.Client, broker.WithModel(model), broker.WithTools(lookup(tl)), broker.WithNotices(ns.add),
			broker.WithContinuation(broker.Continuation{Max: 3}), broker.WithPolicy(wire(r, retry.Policy{MaxAttempts: 3})))
		h := user("q")
		_, err := drain(b.GenerateStream(context.Background(), &h))
		var re *layer.RecoveryError
		require.ErrorAs(t, err, &re)
		var ce *broker.ContinuationError
		assert.False(t, errors.As(err, &ce), "a length finish is not continued")
		assert.Empty(t, tl.runs())
		assert.Empty(t, ns.continuations())
		assert.Equal(t, []string{"user"}, roles(h))
		assert.Equal(t, 1, r.Server.Count())
	})
}

// R16.3: a structured call keeps its schema, gains no tools and appends
// its answer.
func TestR16_3_GenerateObjectKeepsTheSchemaAndGainsNoTools(t *testing.T) {
	r := newRig(t, retry.Policy{}, okStep(`{"city":"Paris"}`))
	b := broker.New(r.Client, broker.WithModel(model), broker.WithTools(lookup(&toolLog{})))
	h := user("city?")
	schema := chat.Schema{Name: "answer", Schema: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}}}`), Strict: true}
	comp, err := b.GenerateObject(context.Background(), &h, schema)
	require.NoError(t, err)
	assert.Equal(t, `{"city":"Paris"}`, comp.Message.Content)
	assert.Equal(t, []string{"user", "assistant"}, roles(h))
	var body struct {
		Tools          []any `json:"tools"`
		ResponseFormat struct {
			Type       string `json:"type"`
			JSONSchema struct {
				Name   string          `json:"name"`
				Schema json.RawMessage `json:"schema"`
			} `json:"json_schema"`
		} `json:"response_format"`
	}
	require.NoError(t, json.Unmarshal(r.Server.Requests()[0].Body, &body))
	assert.Empty(t, body.Tools)
	assert.Equal(t, "json_schema", body.ResponseFormat.Type)
	assert.Equal(t, "answer", body.ResponseFormat.JSONSchema.Name)
	assert.JSONEq(t, string(schema.Schema), string(body.ResponseFormat.JSONSchema.Schema))
}

// The activity signals of a tool loop, in order.
func TestR17_2_ActivitySignalsOfAToolLoop(t *testing.T) {
	r := newRig(t, retry.Policy{}, toolCallStep("call_1", `{"city":"Oslo"}`), okStep("cold"))
	ns := &notices{}
	b := broker.New(r.Client, broker.WithModel(model), broker.WithTools(lookup(&toolLog{})), broker.WithNotices(ns.add))
	h := user("Oslo?")
	_, err := b.Generate(context.Background(), &h)
	require.NoError(t, err)
	assert.Equal(t, []broker.Activity{
		{Kind: broker.ActivityCompletionStarted, Completion: 1},
		{Kind: broker.ActivityToolCall, Completion: 1},
		{Kind: broker.ActivityToolResult, Completion: 1},
		{Kind: broker.ActivityCompletionStarted, Completion: 2},
		{Kind: broker.ActivityContent, Completion: 2},
		{Kind: broker.ActivityRunEnded, Completion: 2},
	}, ns.activity())
}

func TestR16_1_UnknownToolAndToolErrorsBecomeToolMessages(t *testing.T) {
	r := newRig(t, retry.Policy{},
		recoursetest.JSON(200, `{"id":"c","object":"chat.completion","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[`+
			`{"id":"a","type":"function","function":{"name":"nope","arguments":"{}"}},`+
			`{"id":"b","type":"function","function":{"name":"lookup","arguments":"{}"}}]},"finish_reason":"tool_calls"}]}`),
		okStep("ok"))
	failing := broker.Tool{Spec: chat.ToolSpec{Name: "lookup"}, Run: func(context.Context, json.RawMessage) (string, error) {
		return "", errString("city missing")
	}}
	b := broker.New(r.Client, broker.WithModel(model), broker.WithTools(failing))
	h := user("q")
	_, err := b.Generate(context.Background(), &h)
	require.NoError(t, err)
	require.Equal(t, []string{"user", "assistant(tool_calls)", "tool", "tool", "assistant"}, roles(h))
	assert.Equal(t, chat.Message{Role: chat.Tool, Content: "error: unknown tool", ToolCallID: "a", ToolName: "nope"}, h[2])
	assert.Equal(t, chat.Message{Role: chat.Tool, Content: "error: city missing", ToolCallID: "b", ToolName: "lookup"}, h[3])
}

func TestNilHistory(t *testing.T) {
	b := broker.New(nil)
	_, err := b.Generate(context.Background(), nil)
	assert.ErrorIs(t, err, broker.ErrNilHistory)
	_, err = drain(b.GenerateStream(context.Background(), nil))
	assert.ErrorIs(t, err, broker.ErrNilHistory)
	_, err = b.GenerateObject(context.Background(), nil, chat.Schema{})
	assert.ErrorIs(t, err, broker.ErrNilHistory)
}

type errString string

func (e errString) Error() string { return string(e) }

// R9, R16.1: a tool round cancelled part-way answers every call (the
// calls not run say so), runs no tool after the cancellation and sends
// nothing more: the next completion ends with the typed cancellation.
func TestR16_1_CancelledDuringAToolRound(t *testing.T) {
	r := newRig(t, retry.Policy{},
		recoursetest.JSON(200, `{"id":"c","object":"chat.completion","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[`+
			`{"id":"a","type":"function","function":{"name":"stop","arguments":"{}"}},`+
			`{"id":"b","type":"function","function":{"name":"lookup","arguments":"{}"}}]},"finish_reason":"tool_calls"}]}`),
		okStep("never"))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	tl := &toolLog{}
	stop := broker.Tool{Spec: chat.ToolSpec{Name: "stop"}, Run: func(context.Context, json.RawMessage) (string, error) {
		cancel()
		return "stopped", nil
	}}
	b := broker.New(r.Client, broker.WithModel(model), broker.WithTools(stop, lookup(tl)), broker.WithPolicy(wire(r, retry.Policy{})))
	h := user("q")
	_, err := b.Generate(ctx, &h)
	var re *layer.RecoveryError
	require.ErrorAs(t, err, &re)
	assert.Equal(t, event.OutcomeCancelled, re.Outcome)
	assert.Empty(t, tl.runs())
	require.Equal(t, []string{"user", "assistant(tool_calls)", "tool", "tool"}, roles(h))
	assert.Equal(t, "stopped", h[2].Content)
	assert.Equal(t, "error: the tool was not run because the request was cancelled", h[3].Content)
	assert.Equal(t, 1, r.Server.Count())
}

// Options: a later tool of the same name replaces an earlier one, and the
// request carries the broker's model and options.
func TestOptionsShapeTheRequest(t *testing.T) {
	r := newRig(t, retry.Policy{}, toolCallStep("call_1", `{}`), okStep("ok"))
	temp := 0.25
	var ran []string
	first := broker.Tool{Spec: chat.ToolSpec{Name: "lookup"}, Run: func(context.Context, json.RawMessage) (string, error) {
		ran = append(ran, "first")
		return "", nil
	}}
	second := broker.Tool{Spec: chat.ToolSpec{Name: "lookup", Description: "second"}, Run: func(context.Context, json.RawMessage) (string, error) {
		ran = append(ran, "second")
		return "", nil
	}}
	b := broker.New(r.Client, broker.WithModel("my-model"), broker.WithRequestOptions(chat.Options{Temperature: &temp}),
		broker.WithTools(first), broker.WithTools(second))
	h := user("q")
	_, err := b.Generate(context.Background(), &h)
	require.NoError(t, err)
	assert.Equal(t, []string{"second"}, ran)
	var body struct {
		Model       string  `json:"model"`
		Temperature float64 `json:"temperature"`
		Tools       []struct {
			Function struct {
				Description string `json:"description"`
			} `json:"function"`
		} `json:"tools"`
	}
	require.NoError(t, json.Unmarshal(r.Server.Requests()[0].Body, &body))
	assert.Equal(t, "my-model", body.Model)
	assert.Equal(t, 0.25, body.Temperature)
	require.Len(t, body.Tools, 1)
	assert.Equal(t, "second", body.Tools[0].Function.Description)
}

// The broker's own errors have fixed, safe texts.
func TestErrorTexts(t *testing.T) {
	assert.Equal(t, "broker: tool depth limit 8 reached at completion 9", (&broker.ToolDepthError{Max: 8, Completion: 9}).Error())
	assert.Equal(t, `broker: completion 2 ended with finish reason "length"; its tool calls were not executed`,
		(&broker.IncompleteError{Completion: 2, FinishReason: "length"}).Error())
}

// A tool that panics does not take the run down: its call still gets a tool
// message (without the panic value), the other call's result is kept and
// the loop goes on.
func TestR16_1_ToolPanicBecomesAToolMessage(t *testing.T) {
	r := newRig(t, retry.Policy{},
		recoursetest.JSON(200, `{"id":"c","object":"chat.completion","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[`+
			`{"id":"a","type":"function","function":{"name":"boom","arguments":"{}"}},`+
			`{"id":"b","type":"function","function":{"name":"lookup","arguments":"{}"}}]},"finish_reason":"tool_calls"}]}`),
		okStep("ok"))
	boom := broker.Tool{Spec: chat.ToolSpec{Name: "boom"}, Run: func(context.Context, json.RawMessage) (string, error) {
		panic("secret panic value " + rigtest.Key)
	}}
	lookup := broker.Tool{Spec: chat.ToolSpec{Name: "lookup"}, Run: func(context.Context, json.RawMessage) (string, error) {
		return "42", nil
	}}
	b := broker.New(r.Client, broker.WithModel(model), broker.WithTools(boom, lookup))
	h := user("q")
	_, err := b.Generate(context.Background(), &h)
	require.NoError(t, err)
	require.Equal(t, []string{"user", "assistant(tool_calls)", "tool", "tool", "assistant"}, roles(h))
	assert.Equal(t, "error: the tool failed", h[2].Content)
	assert.Equal(t, "42", h[3].Content)
	assert.NotContains(t, string(r.Server.Requests()[1].Body), rigtest.Key, "the panic value never reaches the model")
}
