package broker_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/recourse-dev/recourse/broker"
	"github.com/recourse-dev/recourse/chain"
	"github.com/recourse-dev/recourse/chat"
	"github.com/recourse-dev/recourse/codecs/openai/responses"
	"github.com/recourse-dev/recourse/event"
	"github.com/recourse-dev/recourse/internal/rigtest"
	"github.com/recourse-dev/recourse/layers/retry"
	"github.com/recourse-dev/recourse/recoursetest"
)

// R19.10: a background stream that stalls after output is resumed from its
// cursor, and the broker's notice says so; the answer arrives once, with no
// continuation.
func TestR19_10_BrokerNoticeSaysResumingFromTheCursor(t *testing.T) {
	const id = "resp_broker"
	evs := recoursetest.ResponsesEvents(id, "The answer ", "is ", "42.")
	r := rigtest.NewWith(t, responses.New(responses.Background()), retry.Policy{}, []chain.Option{stallAtCut(event.StallIdle)},
		recoursetest.ResponsesBackground(id, evs...).CutEvents(6), recoursetest.ResponsesResume(id))
	ns := &notices{}
	b := broker.New(r.Client, broker.WithModel(model), broker.WithNotices(ns.add),
		broker.WithPolicy(wire(r, retry.Policy{MaxAttempts: 3, BaseDelay: new(time.Second), Jitter: jitter(1)})))
	h := user("q")
	text, err := drain(b.GenerateStream(context.Background(), &h))
	require.NoError(t, err)
	assert.Equal(t, "The answer is 42.", text, "every byte once")
	require.Len(t, ns.retries(), 1)
	n := ns.retries()[0]
	require.NotNil(t, n.Resume)
	assert.Equal(t, int64(5), n.Resume.Cursor)
	assert.Equal(t, "resuming LLM stream after idle timeout (from event 5)", broker.FormatRetry(n))
	for _, x := range ns.list() {
		assert.NotEqual(t, broker.EventContinuation, x.Event, "a resume is no continuation")
	}
	raw, err := json.Marshal(n)
	require.NoError(t, err)
	assert.Contains(t, string(raw), `"resume":{"cursor":5}`)
	assert.NotContains(t, string(raw), id, "the notice holds no provider identifier")
	var back broker.RetryNotice
	require.NoError(t, json.Unmarshal(raw, &back))
	assert.Equal(t, n, back)
	assert.Equal(t, 2, r.Server.Count())
}

// R19.10: a resume before any sequence number was delivered reads from the
// start.
func TestR19_10_FormatRetryResumingFromTheStart(t *testing.T) {
	n := broker.RetryNotice{Error: "transport error", Resume: &event.Resume{Cursor: -1}}
	assert.Equal(t, "resuming LLM stream after transport error (from the start)", broker.FormatRetry(n))
}

// --- Responses API fixtures ----------------------------------------------

// respEvent is one Responses SSE event with its sequence number.
func respEvent(typ string, seq int, fields map[string]any) string {
	fields["type"], fields["sequence_number"] = typ, seq
	b, _ := json.Marshal(fields)
	return "event: " + typ + "\ndata: " + string(b) + "\n\n"
}

func respObject(id, status string, output []any) map[string]any {
	if output == nil {
		output = []any{}
	}
	return map[string]any{"id": id, "object": "response", "status": status, "model": "gpt-4.1-mini", "output": output,
		"usage": map[string]any{"input_tokens": 5, "output_tokens": 3}}
}

// toolCallEvents are the events of a response that calls lookup once with
// args, its arguments in two deltas (events 3 and 4).
func toolCallEvents(id, callID, args string) []string {
	half := len(args) / 2
	item := func(status, a string) map[string]any {
		return map[string]any{"type": "function_call", "id": "fc_1", "call_id": callID, "name": "lookup", "arguments": a, "status": status}
	}
	return []string{
		respEvent("response.created", 0, map[string]any{"response": respObject(id, "in_progress", nil)}),
		respEvent("response.in_progress", 1, map[string]any{"response": respObject(id, "in_progress", nil)}),
		respEvent("response.output_item.added", 2, map[string]any{"output_index": 0, "item": item("in_progress", "")}),
		respEvent("response.function_call_arguments.delta", 3, map[string]any{"item_id": "fc_1", "output_index": 0, "delta": args[:half]}),
		respEvent("response.function_call_arguments.delta", 4, map[string]any{"item_id": "fc_1", "output_index": 0, "delta": args[half:]}),
		respEvent("response.function_call_arguments.done", 5, map[string]any{"item_id": "fc_1", "output_index": 0, "arguments": args}),
		respEvent("response.output_item.done", 6, map[string]any{"output_index": 0, "item": item("completed", args)}),
		respEvent("response.completed", 7, map[string]any{"response": respObject(id, "completed", []any{item("completed", args)})}),
	}
}

// respInput is the input of one Responses request as sent.
type respInput struct {
	Type    string `json:"type"`
	Role    string `json:"role"`
	Content string `json:"content"`
	CallID  string `json:"call_id"`
	Name    string `json:"name"`
	Args    string `json:"arguments"`
	Output  string `json:"output"`
}

func respInputs(t *testing.T, body []byte) []respInput {
	t.Helper()
	var req struct {
		Input []respInput `json:"input"`
		Tools []any       `json:"tools"`
	}
	require.NoError(t, json.Unmarshal(body, &req))
	require.Len(t, req.Tools, 1, "the tool is offered in every request")
	return req.Input
}

// R19.7, R16.1: the broker's tool loop over the Responses API: a
// function_call runs the tool once, the next request carries the call and
// its function_call_output by call_id, and a 504 on it is resent with the
// same payload, never re-running the tool.
func TestR19_7_BrokerToolLoopOverFunctionCalls(t *testing.T) {
	call := `{"id":"resp_tc","object":"response","status":"completed","model":"gpt-4.1-mini","output":[` +
		`{"type":"function_call","id":"fc_1","call_id":"call_1","name":"lookup","arguments":"{\"city\":\"Paris\"}","status":"completed"}],` +
		`"usage":{"input_tokens":5,"output_tokens":3}}`
	r := rigtest.New(t, responses.New(), retry.Policy{},
		recoursetest.JSON(200, call), gateway504(), recoursetest.JSON(200, recoursetest.ResponsesJSON("resp_2", "It is sunny in Paris.")))
	tl := &toolLog{}
	b := broker.New(r.Client, broker.WithModel(model), broker.WithTools(lookup(tl)),
		broker.WithPolicy(wire(r, retry.Policy{MaxAttempts: 3, Jitter: jitter(0)})))
	h := user("Weather in Paris?")
	comp, err := b.Generate(context.Background(), &h)
	require.NoError(t, err)
	assert.Equal(t, "It is sunny in Paris.", comp.Message.Content)
	assert.Equal(t, []string{`{"city":"Paris"}`}, tl.runs(), "the tool ran exactly once")
	assert.Equal(t, []string{"user", "assistant(tool_calls)", "tool", "assistant"}, roles(h))
	reqs := r.Server.Requests()
	require.Len(t, reqs, 3)
	assert.Equal(t, reqs[1].Body, reqs[2].Body, "R2.5: the resend is the same payload")
	in := respInputs(t, reqs[1].Body)
	require.Len(t, in, 3)
	assert.Equal(t, respInput{Type: "message", Role: "user", Content: "Weather in Paris?"}, in[0])
	assert.Equal(t, respInput{Type: "function_call", CallID: "call_1", Name: "lookup", Args: `{"city":"Paris"}`}, in[1])
	assert.Equal(t, respInput{Type: "function_call_output", CallID: "call_1", Output: "sunny " + outputCanary}, in[2])
}

// R19.9, R16.1: a background stream cut in the middle of a function call's
// arguments is resumed, not resent: the call completes with the whole
// arguments and the tool runs exactly once.
func TestR19_9_BrokerBackgroundToolCallResumedRunsTheToolOnce(t *testing.T) {
	const id = "resp_bgtool"
	evs := toolCallEvents(id, "call_7", `{"city":"Paris"}`)
	answer := recoursetest.ResponsesEvents("resp_bg2", "It is ", "sunny.")
	r := rigtest.New(t, responses.New(responses.Background()), retry.Policy{},
		recoursetest.ResponsesBackground(id, evs...).CutEvents(4), recoursetest.ResponsesResume(id),
		recoursetest.ResponsesBackground("resp_bg2", answer...))
	tl := &toolLog{}
	ns := &notices{}
	b := broker.New(r.Client, broker.WithModel(model), broker.WithTools(lookup(tl)), broker.WithNotices(ns.add),
		broker.WithPolicy(wire(r, retry.Policy{MaxAttempts: 3, Jitter: jitter(0)})))
	h := user("Weather in Paris?")
	text, err := drain(b.GenerateStream(context.Background(), &h))
	require.NoError(t, err)
	assert.Equal(t, "It is sunny.", text)
	assert.Equal(t, []string{`{"city":"Paris"}`}, tl.runs(), "the whole arguments, once")
	reqs := r.Server.Requests()
	require.Len(t, reqs, 3, "create, resume read, the next completion")
	assert.Equal(t, "starting_after=3&stream=true", reqs[1].RawQuery)
	in := respInputs(t, reqs[2].Body)
	require.Len(t, in, 3)
	assert.Equal(t, "call_7", in[1].CallID)
	assert.Equal(t, "function_call_output", in[2].Type)
	require.Len(t, ns.retries(), 1)
	assert.Equal(t, "resuming LLM stream after transport error (from event 3)", broker.FormatRetry(ns.retries()[0]))
}

// R19.1, R17.3: a foreground Responses stream cut after text is not
// resent by the engine; the broker's continuation asks again. The open
// text block is not committed (R17.3), so the continuation request is the
// history alone, and the history ends with the new answer.
func TestR19_1_BrokerContinuationOverTheResponsesAPI(t *testing.T) {
	first := recoursetest.ResponsesEvents("resp_c1", "Let me think. ", "More")
	r := rigtest.New(t, responses.New(), retry.Policy{},
		recoursetest.SSE(first...).CutEvents(5), recoursetest.SSE(recoursetest.ResponsesEvents("resp_c2", "It is sunny.")...))
	tl, ns := &toolLog{}, &notices{}
	b := continuing(r, tl, ns, 3, retry.Policy{})
	h := user("Weather?")
	text, err := drain(b.GenerateStream(context.Background(), &h))
	require.NoError(t, err)
	assert.Equal(t, "Let me think. It is sunny.", text, "what was shown stays shown")
	require.Len(t, ns.continuations(), 1)
	assert.Equal(t, broker.ReasonRestart, ns.continuations()[0].Reason, "nothing committed: a restart")
	reqs := r.Server.Requests()
	require.Len(t, reqs, 2)
	assert.Equal(t, []respInput{{Type: "message", Role: "user", Content: "Weather?"}}, respInputs(t, reqs[1].Body))
	assert.Equal(t, []chat.Message{{Role: chat.User, Content: "Weather?"}, {Role: chat.Assistant, Content: "It is sunny."}}, h)
}

// R19.7, R19.9: a session over the Responses API in background mode: a
// turn whose tool call is resumed runs the tool once, and the next turn
// sends the whole conversation — the system message, the call and its
// output — as input items.
func TestR19_9_SessionOverTheResponsesAPI(t *testing.T) {
	const id = "resp_s1"
	r := rigtest.New(t, responses.New(responses.Background()), retry.Policy{},
		recoursetest.ResponsesBackground(id, toolCallEvents(id, "call_s", `{"city":"Oslo"}`)...).CutEvents(5), recoursetest.ResponsesResume(id),
		recoursetest.ResponsesBackground("resp_s2", recoursetest.ResponsesEvents("resp_s2", "Snow.")...),
		recoursetest.ResponsesBackground("resp_s3", recoursetest.ResponsesEvents("resp_s3", "Bye.")...))
	tl := &toolLog{}
	b := broker.New(r.Client, broker.WithModel(model), broker.WithTools(lookup(tl)),
		broker.WithPolicy(wire(r, retry.Policy{MaxAttempts: 3, Jitter: jitter(0)})))
	s := broker.NewSession(b, "Be brief.")
	text, err := drain(s.SendStream(context.Background(), "Weather in Oslo?"))
	require.NoError(t, err)
	assert.Equal(t, "Snow.", text)
	text, err = drain(s.SendStream(context.Background(), "Thanks."))
	require.NoError(t, err)
	assert.Equal(t, "Bye.", text)
	assert.Equal(t, []string{`{"city":"Oslo"}`}, tl.runs())
	reqs := r.Server.Requests()
	require.Len(t, reqs, 4, "create, resume read, the answer, the next turn")
	in := respInputs(t, reqs[3].Body)
	var types []string
	for _, x := range in {
		types = append(types, x.Type+":"+x.Role)
	}
	assert.Equal(t, []string{"message:system", "message:user", "function_call:", "function_call_output:", "message:assistant", "message:user"}, types)
}
