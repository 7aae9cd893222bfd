package broker_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/recourse-dev/recourse/broker"
	"github.com/recourse-dev/recourse/event"
	"github.com/recourse-dev/recourse/internal/rigtest"
	"github.com/recourse-dev/recourse/layers/retry"
	"github.com/recourse-dev/recourse/recoursetest"
)

// R17.1 (seed 002 completion list): the notice events round-trip through
// JSON: marshal, unmarshal, equal; the wire form is {"event":…,"data":…}.
func TestR17_1_NoticeJSONRoundTrip(t *testing.T) {
	cases := []struct {
		notice broker.Notice
		wire   string
	}{
		{broker.Notice{Event: broker.EventRetry, Retry: &broker.RetryNotice{Completion: 2, FailedAttempt: 1, MaxAttempts: 4,
			Wait: 1200 * time.Millisecond, Elapsed: 350 * time.Millisecond, HTTPStatus: 504, Error: "HTTP 504"}},
			`{"event":"llm_retry","data":{"completion":2,"failed_attempt":1,"max_attempts":4,"wait_ms":1200,"elapsed_ms":350,"status":504,"error":"HTTP 504"}}`},
		{broker.Notice{Event: broker.EventRetry, Retry: &broker.RetryNotice{Completion: 1, FailedAttempt: 2, MaxAttempts: 3,
			Wait: 800 * time.Millisecond, Error: "transport error"}},
			`{"event":"llm_retry","data":{"completion":1,"failed_attempt":2,"max_attempts":3,"wait_ms":800,"elapsed_ms":0,"error":"transport error"}}`},
		{broker.Notice{Event: broker.EventContinuation, Continuation: &broker.ContinuationNotice{Completion: 3, Attempt: 1, Max: 3,
			Reason: "transport error", Wait: 100 * time.Millisecond, Discarded: 5}},
			`{"event":"llm_continuation","data":{"completion":3,"attempt":1,"max":3,"reason":"transport error","wait_ms":100,"discarded_bytes":5}}`},
		{broker.Notice{Event: broker.EventContinuation, Continuation: &broker.ContinuationNotice{Completion: 1, Attempt: 2, Max: 2, Reason: broker.ReasonRestart}},
			`{"event":"llm_continuation","data":{"completion":1,"attempt":2,"max":2,"reason":"restart","wait_ms":0}}`},
		{broker.Notice{Event: broker.EventActivity, Activity: &broker.Activity{Kind: broker.ActivityToolResult, Completion: 1}},
			`{"event":"activity","data":{"kind":"tool_result","completion":1}}`},
	}
	for _, c := range cases {
		b, err := json.Marshal(c.notice)
		require.NoError(t, err)
		assert.JSONEq(t, c.wire, string(b))
		if c.notice.Retry != nil && c.notice.Retry.HTTPStatus == 0 {
			assert.NotContains(t, string(b), `"status"`, "status is omitted when unknown")
		}
		var back broker.Notice
		require.NoError(t, json.Unmarshal(b, &back))
		assert.Equal(t, c.notice, back)
	}
	var n broker.Notice
	assert.Error(t, json.Unmarshal([]byte(`{"event":"alert","data":{}}`), &n), "unknown events are refused")
	_, err := json.Marshal(broker.Notice{Event: broker.EventRetry})
	assert.Error(t, err, "a notice without its data does not marshal")
}

// R17.2: the status line's exact text.
func TestR17_2_FormatRetry(t *testing.T) {
	n := func(failed, maxAttempts int, wait time.Duration, status int, errText string) broker.RetryNotice {
		return broker.RetryNotice{Completion: 1, FailedAttempt: failed, MaxAttempts: maxAttempts, Wait: wait, HTTPStatus: status, Error: errText}
	}
	cases := []struct {
		notice broker.RetryNotice
		want   string
	}{
		{n(1, 4, 1200*time.Millisecond, 504, "HTTP 504"), "retrying LLM request after HTTP 504 (attempt 2/4 in 1.2s)"},
		{n(2, 3, 800*time.Millisecond, 0, "transport error"), "retrying LLM request after transport error (attempt 3/3 in 800ms)"},
		{n(4, 4, time.Second, 503, "HTTP 503"), "retrying LLM request after HTTP 503 (attempt 4/4 in 1.0s)"},
		{n(1, 2, 0, 429, "HTTP 429"), "retrying LLM request after HTTP 429 (attempt 2/2 in 0ms)"},
		{n(1, 5, 12345*time.Millisecond, 500, "HTTP 500"), "retrying LLM request after HTTP 500 (attempt 2/5 in 12.3s)"},
		{n(1, 3, 999*time.Millisecond, 0, "client timeout"), "retrying LLM request after client timeout (attempt 2/3 in 999ms)"},
		{n(1, 3, 1960*time.Millisecond, 200, "transport error"), "retrying LLM request after transport error (attempt 2/3 in 2.0s)"},
		{n(1, 3, 5*time.Millisecond, 0, ""), "retrying LLM request after error (attempt 2/3 in 5ms)"},
		{n(1, 4, 250*time.Millisecond, 200, "idle timeout"), "retrying LLM request after idle timeout (attempt 2/4 in 250ms)"},
		{n(2, 4, 0, 0, "header timeout"), "retrying LLM request after header timeout (attempt 3/4 in 0ms)"},
	}
	for _, c := range cases {
		assert.Equal(t, c.want, broker.FormatRetry(c.notice))
	}
	assert.Equal(t, "LLM stream interrupted; continuing generation (1/3): transport error",
		broker.FormatContinuation(broker.ContinuationNotice{Completion: 1, Attempt: 1, Max: 3, Reason: "transport error"}))
}

// R17.2: the live variant counts the wait down and never below zero.
func TestR17_2_CountdownTicksDown(t *testing.T) {
	n := broker.RetryNotice{FailedAttempt: 1, MaxAttempts: 4, Wait: 1200 * time.Millisecond, HTTPStatus: 504, Error: "HTTP 504"}
	assert.Equal(t, "retrying LLM request after HTTP 504 (attempt 2/4 in 1.2s)", broker.Countdown(n, 0))
	assert.Equal(t, "retrying LLM request after HTTP 504 (attempt 2/4 in 1.0s)", broker.Countdown(n, 200*time.Millisecond))
	assert.Equal(t, "retrying LLM request after HTTP 504 (attempt 2/4 in 500ms)", broker.Countdown(n, 700*time.Millisecond))
	assert.Equal(t, "retrying LLM request after HTTP 504 (attempt 2/4 in 0ms)", broker.Countdown(n, 5*time.Second))
	assert.Equal(t, "retrying LLM request after HTTP 504 (attempt 2/4 in 1.2s)", broker.Countdown(n, -time.Second))
}

// R17.2 (seed 002 completion list): a notice sets the transient status and
// every sign of activity clears it.
func TestR17_2_StatusSetsAndClearsOnEveryActivitySignal(t *testing.T) {
	retryN := broker.Notice{Event: broker.EventRetry, Retry: &broker.RetryNotice{Completion: 2, FailedAttempt: 1, MaxAttempts: 4,
		Wait: 1200 * time.Millisecond, HTTPStatus: 504, Error: "HTTP 504"}}
	contN := broker.Notice{Event: broker.EventContinuation, Continuation: &broker.ContinuationNotice{Completion: 1, Attempt: 1, Max: 3, Reason: "transport error"}}
	kinds := []broker.ActivityKind{broker.ActivityCompletionStarted, broker.ActivityContent, broker.ActivityReasoning,
		broker.ActivityToolCall, broker.ActivityToolResult, broker.ActivityRunEnded, broker.ActivityIdle}
	for _, set := range []broker.Notice{retryN, contN} {
		for _, k := range kinds {
			t.Run(string(set.Event)+"/"+string(k), func(t *testing.T) {
				var s broker.Status
				assert.Empty(t, s.Line())
				s.Apply(set)
				if set.Retry != nil {
					assert.Equal(t, "retrying LLM request after HTTP 504 (attempt 2/4 in 1.2s)", s.Line())
					assert.Equal(t, "retrying LLM request after HTTP 504 (attempt 2/4 in 400ms)", s.Live(800*time.Millisecond))
				} else {
					assert.Equal(t, "LLM stream interrupted; continuing generation (1/3): transport error", s.Line())
					assert.Equal(t, s.Line(), s.Live(time.Second))
				}
				s.Apply(broker.Notice{Event: broker.EventActivity, Activity: &broker.Activity{Kind: k, Completion: 2}})
				assert.Empty(t, s.Line(), "cleared by %s", k)
				assert.Empty(t, s.Live(0))
			})
		}
	}
	var s broker.Status
	s.Apply(retryN)
	s.Apply(contN)
	assert.Equal(t, "LLM stream interrupted; continuing generation (1/3): transport error", s.Line(), "the newest notice wins")
}

// R17.2 end to end: a Status fed with the broker's notices shows the retry
// while the backoff sleeps and the continuation while it waits, and is
// clear when the run ends.
func TestR17_2_StatusFedByTheBroker(t *testing.T) {
	r := newRig(t, retry.Policy{}, gateway504(),
		broken(textDelta("Checking. "), toolStart("call_1", "lookup")),
		recoursetest.SSE(recoursetest.OpenAIStream("Done.")...))
	var status broker.Status
	var during []string
	pol := wire(r, retry.Policy{MaxAttempts: 2, Admit: allow, BaseDelay: new(time.Second), Jitter: jitter(1),
		Sleep: func(ctx context.Context, d time.Duration) error {
			during = append(during, status.Line())
			return r.Clock.Sleep(ctx, d)
		}})
	b := broker.New(r.Client, broker.WithModel(model), broker.WithTools(lookup(&toolLog{})), broker.WithPolicy(pol),
		broker.WithNotices(status.Apply), broker.WithContinuation(broker.Continuation{Max: 2}))
	h := user("q")
	_, err := drain(b.GenerateStream(context.Background(), &h))
	require.NoError(t, err)
	assert.Equal(t, []string{
		"retrying LLM request after HTTP 504 (attempt 2/2 in 1.0s)",
		"LLM stream interrupted; continuing generation (1/2): transport error",
	}, during)
	assert.Empty(t, status.Line(), "the run ended")
}

// R17.1, R10.5: no notice, formatted line or returned error carries the
// key, the prompt, tool arguments or tool output — even when the provider
// echoes them in an error body.
func TestR17_1_NoticesAndErrorsAreSafe(t *testing.T) {
	r := newRig(t, retry.Policy{},
		toolCallStream("call_1", `{"city":"`+argsCanary+`"}`),
		gateway504(),
		broken(textDelta("About "+argsCanary+": "), toolStart("call_2", "lookup"), toolArgs(`{"city":"`+argsCanary)),
		recoursetest.Reset(),
		broken(textDelta(rigtest.Prompt), toolStart("call_3", "lookup")))
	ns := &notices{}
	tl := &toolLog{}
	b := broker.New(r.Client, broker.WithModel(model), broker.WithTools(lookup(tl)), broker.WithNotices(ns.add),
		broker.WithContinuation(broker.Continuation{Max: 1}),
		broker.WithPolicy(wire(r, retry.Policy{MaxAttempts: 3, Admit: allow, Jitter: jitter(0.5)})))
	h := user(rigtest.Prompt)
	_, err := drain(b.GenerateStream(context.Background(), &h))
	var ce *broker.ContinuationError
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, event.OutcomeExhausted, ce.Outcome)
	require.Len(t, tl.runs(), 1)
	require.Len(t, ns.retries(), 2)
	require.Len(t, ns.continuations(), 1)

	var texts []string
	for _, n := range ns.list() {
		j, err := json.Marshal(n)
		require.NoError(t, err)
		texts = append(texts, string(j))
		if n.Retry != nil {
			texts = append(texts, broker.FormatRetry(*n.Retry), broker.Countdown(*n.Retry, time.Millisecond))
		}
		if n.Continuation != nil {
			texts = append(texts, broker.FormatContinuation(*n.Continuation))
		}
	}
	texts = append(texts, err.Error())
	for _, s := range texts {
		for _, canary := range []string{rigtest.Key, rigtest.Prompt, argsCanary, outputCanary, "sk-"} {
			assert.NotContains(t, s, canary)
		}
	}
	assert.Equal(t, "HTTP 504", ns.retries()[0].Error)
	assert.Equal(t, "transport error", ns.retries()[1].Error)
}

// R17.1 (seed 002): notices never enter the history, the model context or
// the session's conversation.
func TestR17_1_NoticesNeverEnterHistoryOrContext(t *testing.T) {
	r := newRig(t, retry.Policy{},
		gateway504(),
		broken(textDelta("Part one. "), toolStart("call_1", "lookup")),
		recoursetest.SSE(recoursetest.OpenAIStream("Part two.")...))
	ns := &notices{}
	b := broker.New(r.Client, broker.WithModel(model), broker.WithTools(lookup(&toolLog{})), broker.WithNotices(ns.add),
		broker.WithContinuation(broker.Continuation{Max: 2}),
		broker.WithPolicy(wire(r, retry.Policy{MaxAttempts: 2, Admit: allow, Jitter: jitter(0.5)})))
	s := broker.NewSession(b, system)
	_, err := drain(s.SendStream(context.Background(), "q"))
	require.NoError(t, err)
	require.Len(t, ns.retries(), 1)
	require.Len(t, ns.continuations(), 1)

	hist, err := json.Marshal(s.Messages())
	require.NoError(t, err)
	places := []string{string(hist)}
	for _, q := range r.Server.Requests() {
		places = append(places, string(q.Body))
	}
	for _, p := range places {
		for _, marker := range []string{"retrying", "LLM stream interrupted", "llm_retry", "llm_continuation", "restart", "HTTP 504", "transport error", "continuing"} {
			assert.NotContains(t, p, marker)
		}
	}
	assert.Equal(t, []string{"system", "user", "assistant", "assistant"}, roles(s.Messages()))
	assert.True(t, strings.HasPrefix(s.Messages()[2].Content, "Part one."))
}

func TestR17_1_FailureTextIsSafeAndShort(t *testing.T) {
	cases := map[string]*event.Failure{
		"HTTP 504":             {Category: event.CategoryHTTP, HTTPStatus: 504},
		"transport error":      {Category: event.CategoryTransport},
		"client timeout":       {Category: event.CategoryClientTimeout},
		"error":                nil,
		"idle timeout":         {Category: event.CategoryTransport, HTTPStatus: 200, Stall: event.StallIdle},
		"header timeout":       {Category: event.CategoryTransport, Stall: event.StallHeader},
		"first-output timeout": {Category: event.CategoryTransport, HTTPStatus: 200, Stall: event.StallFirstOutput},
		"cancelled":            {Category: event.CategoryCancellation, Stall: event.StallIdle},
	}
	for want, f := range cases {
		if got := broker.FailureText(f); got != want {
			t.Errorf("FailureText(%+v) = %q, want %q", f, got, want)
		}
	}
}

func TestR17_2_StatusClear(t *testing.T) {
	var s broker.Status
	s.Apply(broker.Notice{Event: broker.EventRetry, Retry: &broker.RetryNotice{FailedAttempt: 1, MaxAttempts: 4, Wait: 1200 * time.Millisecond, HTTPStatus: 504}})
	if s.Line() == "" {
		t.Fatal("a retry notice sets the line")
	}
	s.Clear()
	if got := s.Line(); got != "" {
		t.Errorf("after Clear the line is %q", got)
	}
}
