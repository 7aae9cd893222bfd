package fallback_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/recourse-dev/recourse/chain"
	"github.com/recourse-dev/recourse/codec"
	"github.com/recourse-dev/recourse/codecs/ollama"
	"github.com/recourse-dev/recourse/codecs/openai"
	"github.com/recourse-dev/recourse/codecs/openai/responses"
	"github.com/recourse-dev/recourse/event"
	"github.com/recourse-dev/recourse/internal/rigtest"
	"github.com/recourse-dev/recourse/layer"
	"github.com/recourse-dev/recourse/layers/fallback"
	"github.com/recourse-dev/recourse/layers/quota"
	"github.com/recourse-dev/recourse/layers/retry"
	"github.com/recourse-dev/recourse/recoursetest"
)

// A drop-in call whose model is overloaded falls back to the next model
// of the same codec: the SDK gets the second model's answer in its own
// wire format, after exactly MaxAttempts requests for the first.
func TestR20_1_DropInFallsBackToAnotherModel(t *testing.T) {
	f := newFixture(t, openai.New(), retry.Policy{MaxAttempts: 3},
		fallback.Config{Targets: []fallback.Target{{Model: "gpt-4o-mini"}}},
		unavailable(), unavailable(), unavailable(),
		recoursetest.JSON(200, recoursetest.OpenAIChat("from mini")))
	resp, lc, err := f.post(t, "/v1/chat/completions", chatBody("gpt-4o", false))
	require.NoError(t, err)
	assert.Equal(t, 200, resp.StatusCode)
	assert.Contains(t, readBody(t, resp), "from mini")
	assert.Equal(t, []string{"gpt-4o", "gpt-4o", "gpt-4o", "gpt-4o-mini"}, models(t, f.Server))
	assert.Nil(t, lc.Result.Err)
	reqs := f.Server.Requests()
	// Only the model changed: the rest of the SDK's body is byte for byte.
	assert.JSONEq(t, chatBody("gpt-4o-mini", false), string(reqs[3].Body))
	assert.Equal(t, "Bearer "+rigtest.Key, reqs[3].Header.Get("Authorization"), "the same upstream keeps the caller's credential")
}

// Another upstream of the same wire gets the credential of its target's
// function, never the caller's; the credential is in no event or error.
func TestR20_1_AnotherUpstreamGetsOnlyItsOwnCredential(t *testing.T) {
	other := recoursetest.NewServer(recoursetest.JSON(200, recoursetest.OpenAIChat("from the other upstream")))
	t.Cleanup(other.Close)
	var calls atomic.Int32
	f := newFixture(t, openai.New(), retry.Policy{MaxAttempts: 2},
		fallback.Config{Targets: []fallback.Target{{
			Upstream: other.URL + "/proxy",
			Credential: func(_ context.Context, h http.Header) error {
				calls.Add(1)
				h.Set("Authorization", "Bearer "+targetKey)
				return nil
			},
		}}},
		unavailable(), unavailable())
	resp, _, err := f.post(t, "/v1/chat/completions?x=1", chatBody("gpt-4o", false))
	require.NoError(t, err)
	assert.Contains(t, readBody(t, resp), "from the other upstream")
	require.Equal(t, 1, other.Count())
	got := other.Requests()[0]
	assert.Equal(t, "/proxy/v1/chat/completions", got.Path)
	assert.Equal(t, "x=1", got.RawQuery)
	assert.Equal(t, "Bearer "+targetKey, got.Header.Get("Authorization"))
	assert.Equal(t, int32(1), calls.Load())
	for _, r := range f.Server.Requests() {
		assert.NotContains(t, r.Header.Get("Authorization"), targetKey)
	}
	safe, _ := json.Marshal(f.rec.Events())
	assert.NotContains(t, string(safe), targetKey)
	assert.NotContains(t, string(safe), rigtest.Key)
	assert.NotContains(t, string(safe), rigtest.Prompt)
	steps := fallbacks(f.rec, event.Fallback)
	require.Len(t, steps, 1)
	assert.Equal(t, event.FallbackStep{From: "gpt-4o", To: "127.0.0.1:" + portOf(other.URL), Index: 1, Outcome: event.OutcomeExhausted, Attempts: 2}, steps[0])
}

func portOf(u string) string {
	for i := len(u) - 1; i >= 0; i-- {
		if u[i] == ':' {
			return u[i+1:]
		}
	}
	return ""
}

// A credential function that fails ends the call with a typed error that
// keeps neither the credential nor the function's error text.
func TestR20_1_FailingCredentialIsATypedSafeError(t *testing.T) {
	f := newFixture(t, openai.New(), retry.Policy{},
		fallback.Config{Targets: []fallback.Target{{Name: "backup", Credential: func(context.Context, http.Header) error {
			return errors.New("vault said " + targetKey)
		}}}},
		unavailable())
	_, _, err := f.post(t, "/v1/chat/completions", chatBody("gpt-4o", false))
	var ce *fallback.CredentialError
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, "backup", ce.Target)
	assert.NotContains(t, err.Error(), targetKey)
	assert.Equal(t, 1, f.Server.Count())
}

// Each target runs under its own policy (retry.WithPolicy through the
// target's Context): the fallback target here makes a single attempt.
func TestR20_1_PerTargetPolicy(t *testing.T) {
	clock := rigtest.NewClock()
	one := retry.Policy{MaxAttempts: 1, WallClock: clock.Now, MonotonicClock: clock.Mono, Sleep: clock.Sleep}
	f := newFixture(t, openai.New(), retry.Policy{MaxAttempts: 3},
		fallback.Config{Targets: []fallback.Target{{Model: "small", Context: func(ctx context.Context) context.Context {
			return retry.WithPolicy(ctx, &one)
		}}}},
		unavailable(), unavailable(), unavailable(), unavailable(), recoursetest.JSON(200, recoursetest.OpenAIChat("never")))
	resp, lc, err := f.post(t, "/v1/chat/completions", chatBody("big", false))
	require.NoError(t, err)
	assert.Equal(t, 503, resp.StatusCode, "the last target's final response is passed through")
	readBody(t, resp)
	assert.Equal(t, []string{"big", "big", "big", "small"}, models(t, f.Server))
	require.NotNil(t, lc.Result.Err)
	require.Len(t, lc.Result.Err.Targets, 2)
	assert.Len(t, lc.Result.Err.Targets[0].History, 3)
	assert.Len(t, lc.Result.Err.Targets[1].History, 1)
}

// Every outcome of R10.4 against the rules: exhausted, quota_exhausted and
// delay_ceiling fall back; interrupted only on a status the caller named;
// cancelled, deadline and the admission outcomes never.
func TestR20_2_EveryOutcomeFallsBackOrNot(t *testing.T) {
	rules := fallback.Rules{Statuses: []int{404}}
	want := map[event.Outcome]bool{
		event.OutcomeExhausted:           true,
		event.OutcomeQuotaExhausted:      true,
		event.OutcomeDelayCeiling:        true,
		event.OutcomeInterrupted:         false,
		event.OutcomeCancelled:           false,
		event.OutcomeDeadline:            false,
		event.OutcomeAdmissionRequired:   false,
		event.OutcomeAdmissionRejected:   false,
		event.OutcomeAdmissionNoDecision: false,
	}
	require.Len(t, want, len(event.Outcomes()), "every outcome is covered")
	for _, o := range event.Outcomes() {
		e := layer.NewRecoveryError(o, event.Failure{Category: event.CategoryHTTP, HTTPStatus: 503}, nil, nil)
		assert.Equal(t, want[o], rules.FallsBack(e), o)
		// The same outcome on a named status: only interrupted changes.
		e = layer.NewRecoveryError(o, event.Failure{Category: event.CategoryHTTP, HTTPStatus: 404}, nil, nil)
		assert.Equal(t, want[o] || o == event.OutcomeInterrupted, rules.FallsBack(e), o)
	}
	assert.False(t, rules.FallsBack(nil))
	assert.False(t, fallback.Rules{}.FallsBack(layer.NewRecoveryError(event.OutcomeInterrupted,
		event.Failure{Category: event.CategoryHTTP, HTTPStatus: 404}, nil, nil)), "no status falls back unless named")
}

// End to end, through a real loopback provider: which failures move the
// call to the next target and which end it where it is.
func TestR20_2_OutcomesEndToEnd(t *testing.T) {
	answer := recoursetest.JSON(200, recoursetest.OpenAIChat("from b"))
	notFound := recoursetest.JSON(404, recoursetest.OpenAIError("invalid_request_error", "model_not_found", "no such model"))
	for _, tc := range []struct {
		name    string
		p       retry.Policy
		rules   fallback.Rules
		steps   []recoursetest.Step
		falls   bool
		outcome event.Outcome
	}{
		{"exhausted", retry.Policy{MaxAttempts: 2}, fallback.Rules{}, []recoursetest.Step{unavailable(), unavailable(), answer}, true, event.OutcomeExhausted},
		{"delay_ceiling", retry.Policy{MaxAttempts: 3, DelayCeiling: new(time.Second)}, fallback.Rules{},
			[]recoursetest.Step{unavailable().WithHeader("Retry-After", "60"), answer}, true, event.OutcomeDelayCeiling},
		{"named 404", retry.Policy{MaxAttempts: 3}, fallback.Rules{Statuses: []int{404}}, []recoursetest.Step{notFound, answer}, true, event.OutcomeInterrupted},
		{"unnamed 404", retry.Policy{MaxAttempts: 3}, fallback.Rules{}, []recoursetest.Step{notFound, answer}, false, event.OutcomeInterrupted},
		{"permanent 400", retry.Policy{MaxAttempts: 3}, fallback.Rules{Statuses: []int{404}},
			[]recoursetest.Step{recoursetest.JSON(400, recoursetest.OpenAIError("invalid_request_error", "", "bad")), answer}, false, event.OutcomeInterrupted},
		{"deadline", retry.Policy{MaxAttempts: 3, Budget: new(time.Duration(0))}, fallback.Rules{}, []recoursetest.Step{unavailable(), answer}, false, event.OutcomeDeadline},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, openai.New(), tc.p, fallback.Config{Rules: tc.rules, Targets: []fallback.Target{{Model: "b"}}}, tc.steps...)
			resp, lc, err := f.post(t, "/v1/chat/completions", chatBody("a", false))
			require.NoError(t, err)
			body := readBody(t, resp)
			steps := fallbacks(f.rec, event.Fallback)
			if tc.falls {
				assert.Contains(t, body, "from b")
				require.Len(t, steps, 1)
				assert.Equal(t, tc.outcome, steps[0].Outcome)
				assert.Equal(t, "b", models(t, f.Server)[f.Server.Count()-1])
				return
			}
			assert.Empty(t, steps)
			assert.NotContains(t, models(t, f.Server), "b", "the next target is never contacted")
			require.NotNil(t, lc.Result.Err)
			assert.Equal(t, tc.outcome, lc.Result.Err.Outcome)
			assert.Nil(t, lc.Result.Err.Targets, "one target tried")
		})
	}
}

// A cancelled call never falls back: the next target is not contacted.
func TestR20_2_CancelledNeverFallsBack(t *testing.T) {
	clock := rigtest.NewClock()
	clock.Block = true
	ctx, cancel := context.WithCancel(t.Context())
	p := retry.Policy{MaxAttempts: 3, WallClock: clock.Now, MonotonicClock: clock.Mono,
		Sleep: func(c context.Context, d time.Duration) error { cancel(); return clock.Sleep(c, d) }}
	f := newFixture(t, openai.New(), p, fallback.Config{Targets: []fallback.Target{{Model: "b"}}},
		unavailable(), recoursetest.JSON(200, recoursetest.OpenAIChat("from b")))
	lc := &layer.Call{}
	req, err := http.NewRequestWithContext(layer.WithCall(ctx, lc), http.MethodPost, f.Server.URL+"/v1/chat/completions",
		stringsReader(chatBody("a", false)))
	require.NoError(t, err)
	_, err = f.HTTP.Do(req)
	require.Error(t, err)
	assert.ErrorIs(t, err, context.Canceled)
	assert.Equal(t, 1, f.Server.Count())
	assert.Empty(t, fallbacks(f.rec, event.Fallback))
	require.NotNil(t, lc.Result.Err)
	assert.Equal(t, event.OutcomeCancelled, lc.Result.Err.Outcome)
}

// A stream that delivered content and then broke is never answered again
// by another target: the caller would read two answers.
func TestR20_3_NoSecondAnswerAfterOutput(t *testing.T) {
	events := recoursetest.OpenAIStream("first ", "half")
	cut := recoursetest.SSE(events...)
	cut.CutAfter = len(events[0]) + len(events[1]) + 4
	f := newFixture(t, openai.New(), retry.Policy{MaxAttempts: 3},
		fallback.Config{Rules: fallback.Rules{Statuses: []int{502}}, Targets: []fallback.Target{{Model: "b"}}},
		cut, recoursetest.SSE(recoursetest.OpenAIStream("second answer")...))
	resp, lc, err := f.post(t, "/v1/chat/completions", chatBody("a", true))
	require.NoError(t, err)
	b, rerr := readAll(resp)
	require.Error(t, rerr)
	assert.NotContains(t, b, "second answer")
	assert.Equal(t, 1, f.Server.Count(), "nothing was sent after output reached the caller")
	assert.Empty(t, fallbacks(f.rec, event.Fallback))
	require.NotNil(t, lc.Result.Err)

	// The rule itself: output delivered by any attempt forbids a fallback.
	e := layer.NewRecoveryError(event.OutcomeExhausted, event.Failure{Category: event.CategoryTransport},
		[]event.Failure{{Progress: event.Progress{Delivered: codec.Counts{ContentBytes: 1}}}, {Category: event.CategoryTransport}}, nil)
	assert.False(t, fallback.Rules{}.FallsBack(e))
	assert.False(t, fallback.Rules{Statuses: []int{200}}.FallsBack(e), "not even when the caller's rules name the answer's status")
}

// After an ambiguous failure of a local target the admission hook is asked
// first, told that this is a fallback; without a hook the call stops with
// admission_required and the next target is never contacted.
func TestR20_4_AdmissionBeforeFallbackFromLocalTarget(t *testing.T) {
	answer := recoursetest.NDJSON(recoursetest.OllamaStream("from b")...)
	body := `{"model":"llama3","messages":[{"role":"user","content":"` + rigtest.Prompt + `"}],"stream":false}`
	run := func(t *testing.T, admit layer.AdmissionHook) (*fixture, *layer.Call) {
		f := newFixture(t, ollama.New(), retry.Policy{MaxAttempts: 1},
			fallback.Config{Rules: fallback.Rules{Admit: admit}, Targets: []fallback.Target{{Model: "qwen3"}}},
			recoursetest.Reset(), recoursetest.JSON(200, recoursetest.OllamaChat("from b")), answer)
		resp, lc, err := f.post(t, "/api/chat", body)
		if err == nil {
			readBody(t, resp)
		}
		return f, lc
	}
	t.Run("no hook", func(t *testing.T) {
		f, lc := run(t, nil)
		assert.Equal(t, 1, f.Server.Count())
		require.NotNil(t, lc.Result.Err)
		assert.Equal(t, event.OutcomeAdmissionRequired, lc.Result.Err.Outcome)
		assert.Contains(t, f.rec.Types(), string(event.AdmissionRequired))
	})
	t.Run("allow", func(t *testing.T) {
		var asked []layer.AdmissionRequest
		f, lc := run(t, func(_ context.Context, r layer.AdmissionRequest) (layer.Decision, error) {
			asked = append(asked, r)
			return layer.Allow, nil
		})
		require.Len(t, asked, 1)
		require.NotNil(t, asked[0].Fallback, "the hook is told that this is a fallback")
		assert.Equal(t, "llama3", asked[0].Fallback.From)
		assert.Equal(t, "qwen3", asked[0].Fallback.To)
		assert.Equal(t, event.CategoryTransport, asked[0].Failure.Category)
		assert.Equal(t, []string{"llama3", "qwen3"}, models(t, f.Server))
		assert.Nil(t, lc.Result.Err)
		types := f.rec.Types()
		assert.Less(t, indexOf(types, string(event.AdmissionPending)), indexOf(types, string(event.Fallback)))
	})
	t.Run("reject", func(t *testing.T) {
		f, lc := run(t, func(context.Context, layer.AdmissionRequest) (layer.Decision, error) { return layer.Reject, nil })
		assert.Equal(t, 1, f.Server.Count())
		require.NotNil(t, lc.Result.Err)
		assert.Equal(t, event.OutcomeAdmissionRejected, lc.Result.Err.Outcome)
	})
	t.Run("panic", func(t *testing.T) {
		f, lc := run(t, func(context.Context, layer.AdmissionRequest) (layer.Decision, error) { panic("hook") })
		assert.Equal(t, 1, f.Server.Count())
		require.NotNil(t, lc.Result.Err)
		assert.Equal(t, event.OutcomeAdmissionNoDecision, lc.Result.Err.Outcome)
	})
}

// A target whose shared cooldown lies beyond the delay ceiling (its
// circuit is open) is skipped without a request until the horizon passes.
func TestR20_5_OpenCircuitSkippedWithoutRequest(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q, err := quota.New(quota.ByModel(), quota.WithStore(quota.NewMemoryStore()))
		require.NoError(t, err)
		answer := func(s string) recoursetest.Step { return recoursetest.JSON(200, recoursetest.OpenAIChat(s)) }
		p := retry.Policy{MaxAttempts: 3, DelayCeiling: new(10 * time.Second)}
		f := newMemoryFixture(t, openai.New(), p, fallback.Config{Targets: []fallback.Target{{Model: "b"}}}, []layer.Layer{q},
			unavailable().WithHeader("Retry-After", "60"), answer("b 1"), answer("b 2"), answer("a again"))

		resp, _, err := f.post(t, "/v1/chat/completions", chatBody("a", false))
		require.NoError(t, err)
		assert.Contains(t, readBody(t, resp), "b 1")
		assert.Equal(t, []string{"a", "b"}, models(t, f.Server))

		// 49 s later a's cooldown still lasts 11 s, beyond the 10 s delay
		// ceiling: its circuit is open, so the call goes to b without a
		// request to a.
		time.Sleep(49 * time.Second)
		resp, lc, err := f.post(t, "/v1/chat/completions", chatBody("a", false))
		require.NoError(t, err)
		assert.Contains(t, readBody(t, resp), "b 2")
		assert.Equal(t, []string{"a", "b", "b"}, models(t, f.Server))
		assert.Nil(t, lc.Result.Err)
		steps := fallbacks(f.rec, event.Fallback)
		require.Len(t, steps, 2)
		assert.Equal(t, event.FallbackStep{From: "a", To: "b", Index: 1, Outcome: event.OutcomeDelayCeiling, Skipped: true}, steps[1])
		// The breaker counts the call that went straight to b (R20.13),
		// and its cooldown was an event once, with its horizon.
		snap := q.Breakers(time.Now())
		require.Len(t, snap, 1, "a and b share one upstream host")
		assert.Equal(t, int64(1), snap[0].Skipped)
		assert.True(t, snap[0].CooldownUntil.After(time.Now()))
		var seen int
		for _, ev := range f.rec.Events() {
			if ev.Type == event.Breaker && ev.Breaker != nil && !ev.Breaker.CooldownUntil.IsZero() {
				seen++
			}
		}
		assert.Equal(t, 1, seen, "the cooldown is reported once, not per call")

		// Once the horizon passed, a is contacted again.
		time.Sleep(12 * time.Second)
		resp, _, err = f.post(t, "/v1/chat/completions", chatBody("a", false))
		require.NoError(t, err)
		assert.Contains(t, readBody(t, resp), "a again")
		assert.Equal(t, []string{"a", "b", "b", "a"}, models(t, f.Server))
	})
}

// Every step is a lifecycle event: target_started for each target, then
// fallback naming both targets and the outcome, in the order they happen.
func TestR20_6_EventsNameBothTargets(t *testing.T) {
	f := newFixture(t, openai.New(), retry.Policy{MaxAttempts: 2},
		fallback.Config{Targets: []fallback.Target{{Model: "gpt-4o-mini"}}},
		unavailable(), unavailable(), recoursetest.JSON(200, recoursetest.OpenAIChat("ok")))
	resp, _, err := f.post(t, "/v1/chat/completions", chatBody("gpt-4o", false))
	require.NoError(t, err)
	readBody(t, resp)
	assert.Equal(t, []string{
		"target_started", "attempt_started", "attempt_failed", "delay_scheduled", "retry_started",
		"attempt_started", "attempt_failed", "exhausted", "fallback",
		"target_started", "attempt_started", "attempt_succeeded",
	}, f.rec.Types())
	var fb event.Event
	for _, ev := range f.rec.Events() {
		if ev.Type == event.Fallback {
			fb = ev
		}
	}
	require.NotNil(t, fb.Failure)
	assert.Equal(t, 503, fb.Failure.HTTPStatus)
	assert.Equal(t, "gpt-4o", fb.Model, "the event is about the target left")
	assert.NotEmpty(t, fb.LogicalID)
	assert.Equal(t, []event.FallbackStep{{To: "gpt-4o", Index: 0},
		{From: "gpt-4o", To: "gpt-4o-mini", Index: 1, Outcome: event.OutcomeExhausted, Attempts: 2}},
		fallbacks(f.rec, event.TargetStarted))
	js, err := json.Marshal(fb)
	require.NoError(t, err)
	assert.Contains(t, string(js), `"fallback":{"from":"gpt-4o","to":"gpt-4o-mini","index":1,"outcome":"exhausted","attempts":2}`)
}

// An observer's error on a fallback event ends the call with that error,
// never with another target's request (R11.4).
func TestR20_6_ObserverErrorEndsTheCall(t *testing.T) {
	boom := errors.New("boom")
	rec := &rigtest.Recorder{}
	l, err := fallback.New(fallback.Config{Codec: openai.New(), Targets: []fallback.Target{{Model: "b"}},
		OnEvent: func(ev event.Event) error {
			if ev.Type == event.Fallback {
				return boom
			}
			return nil
		}})
	require.NoError(t, err)
	r := rigtest.NewWith(t, openai.New(), retry.Policy{OnEvent: rec.OnEvent}, []chain.Option{chain.WithPerCall(l)},
		unavailable(), recoursetest.JSON(200, recoursetest.OpenAIChat("never")))
	f := &fixture{Rig: r, rec: rec}
	_, _, err = f.post(t, "/v1/chat/completions", chatBody("a", false))
	var oe *layer.ObserverError
	require.ErrorAs(t, err, &oe)
	assert.ErrorIs(t, err, boom)
	assert.Equal(t, 1, f.Server.Count())
}

// When every target fails the typed error keeps each target's outcome and
// history, and its safe text names the targets, never a credential or the
// prompt.
func TestR20_7_FinalErrorKeepsEveryTargetsHistory(t *testing.T) {
	f := newFixture(t, openai.New(), retry.Policy{MaxAttempts: 2},
		fallback.Config{Targets: []fallback.Target{{Model: "b", Credential: func(_ context.Context, h http.Header) error {
			h.Set("Authorization", "Bearer "+targetKey)
			return nil
		}}}},
		unavailable(), unavailable(), unavailable(), unavailable())
	resp, lc, err := f.post(t, "/v1/chat/completions", chatBody("a", false))
	require.NoError(t, err)
	assert.Equal(t, 503, resp.StatusCode)
	assert.Equal(t, "exhausted", resp.Header.Get("X-Recourse-Outcome"))
	readBody(t, resp)
	e := lc.Result.Err
	require.NotNil(t, e)
	assert.Equal(t, event.OutcomeExhausted, e.Outcome)
	require.Len(t, e.Targets, 2)
	assert.Equal(t, "a", e.Targets[0].Target)
	assert.Equal(t, "b", e.Targets[1].Target)
	assert.Len(t, e.Targets[0].History, 2)
	assert.Len(t, e.Targets[1].History, 2)
	assert.Equal(t, e.History, e.Targets[1].History, "the error's own history is the last target's")
	assert.Contains(t, e.Error(), "2 fallback targets tried: a (exhausted) → b (exhausted)")
	js, err := json.Marshal(e)
	require.NoError(t, err)
	for _, s := range []string{e.Error(), string(js)} {
		assert.NotContains(t, s, targetKey)
		assert.NotContains(t, s, rigtest.Key)
		assert.NotContains(t, s, rigtest.Prompt)
	}
}

// A drop-in chain refuses a target of another wire at construction, and
// the other configuration mistakes too, each with a typed error.
func TestR20_8_CrossWireRefusedAtConstruction(t *testing.T) {
	_, err := fallback.New(fallback.Config{Codec: openai.New(), Targets: []fallback.Target{{Model: "m"}, {Codec: ollama.New(), Model: "llama3"}}})
	var cw *fallback.CrossWireError
	require.ErrorAs(t, err, &cw)
	assert.Equal(t, 1, cw.Index)
	assert.Equal(t, codec.Ollama, cw.Got)
	assert.Equal(t, codec.OpenAI, cw.Want)
	assert.Contains(t, err.Error(), "client.WithFallback")

	_, err = fallback.New(fallback.Config{Codec: openai.New(), Targets: []fallback.Target{{Codec: openai.New(), Model: "m"}}})
	assert.NoError(t, err, "a target of the same wire is welcome")

	for _, cfg := range []fallback.Config{
		{},
		{Codec: openai.New(), Targets: []fallback.Target{{Upstream: "ftp://x"}}},
		{Codec: openai.New(), Targets: []fallback.Target{{Upstream: "https://user:" + targetKey + "@host"}}},
		{Codec: openai.New(), Targets: []fallback.Target{{Upstream: "https://host?q=1"}}},
		{Codec: openai.New(), Rules: fallback.Rules{Statuses: []int{99}}},
		{Codec: noRewrite{openai.New()}, Targets: []fallback.Target{{Model: "m"}}},
	} {
		_, err := fallback.New(cfg)
		var ce *fallback.ConfigError
		require.ErrorAs(t, err, &ce)
		assert.NotContains(t, err.Error(), targetKey)
	}
}

// noRewrite hides the codec's ModelRewriter.
type noRewrite struct{ codec.Codec }

// The caller's credential headers never follow the request to another
// upstream: a target without a credential function sends none.
func TestR20_1_CallersCredentialNeverFollowsToAnotherUpstream(t *testing.T) {
	other := recoursetest.NewServer(recoursetest.JSON(200, recoursetest.OpenAIChat("ok")))
	t.Cleanup(other.Close)
	f := newFixture(t, openai.New(), retry.Policy{}, fallback.Config{Targets: []fallback.Target{{Upstream: other.URL}}}, unavailable())
	lc := &layer.Call{}
	req, err := http.NewRequestWithContext(layer.WithCall(t.Context(), lc), http.MethodPost,
		f.Server.URL+"/v1/chat/completions?api-version=2024-10-21&key="+rigtest.Key+"&api-key="+rigtest.Key,
		stringsReader(chatBody("a", false)))
	require.NoError(t, err)
	for _, h := range []string{"Authorization", "Api-Key", "X-Api-Key", "Cookie", "Proxy-Authorization"} {
		req.Header.Set(h, rigtest.Key)
	}
	req.Header.Set("OpenAI-Organization", "org-1")
	resp, err := f.HTTP.Do(req)
	require.NoError(t, err)
	readBody(t, resp)
	require.Equal(t, 1, other.Count())
	got := other.Requests()[0].Header
	for name, vs := range got {
		for _, v := range vs {
			assert.NotContains(t, v, rigtest.Key, name)
		}
	}
	assert.Equal(t, "org-1", got.Get("OpenAI-Organization"), "other headers are kept")
	assert.Equal(t, "api-version=2024-10-21", other.Requests()[0].RawQuery, "a key in the query stays behind; other parameters are kept")
	assert.Equal(t, rigtest.Key, f.Server.Requests()[0].Header.Get("Api-Key"), "the caller's own upstream got them")
}

// A body in which the next target's model cannot be set ends the call
// with a typed error when it would fall back; nothing is sent there.
func TestR20_1_BodyThatIsNotAnObjectIsATypedError(t *testing.T) {
	f := newFixture(t, openai.New(), retry.Policy{}, fallback.Config{Targets: []fallback.Target{{Model: "b"}}},
		unavailable(), recoursetest.JSON(200, recoursetest.OpenAIChat("never")))
	_, _, err := f.post(t, "/v1/chat/completions", `["`+rigtest.Prompt+`"]`)
	var be *fallback.BodyError
	require.ErrorAs(t, err, &be)
	assert.Equal(t, "b", be.Target)
	assert.NotContains(t, err.Error(), rigtest.Prompt)
	assert.Equal(t, 1, f.Server.Count())
}

// A resend the retry quota refuses ends the target with quota_exhausted,
// and the call falls back; the first attempt to the next target is never
// refused.
func TestR20_2_QuotaExhaustedFallsBack(t *testing.T) {
	q, err := quota.New(quota.WithFloor(0), quota.WithRatio(0))
	require.NoError(t, err)
	f := newFixtureWith(t, openai.New(), retry.Policy{MaxAttempts: 3}, fallback.Config{Targets: []fallback.Target{{Model: "b"}}},
		[]layer.Layer{q}, unavailable(), recoursetest.JSON(200, recoursetest.OpenAIChat("from b")))
	resp, lc, err := f.post(t, "/v1/chat/completions", chatBody("a", false))
	require.NoError(t, err)
	assert.Contains(t, readBody(t, resp), "from b")
	assert.Nil(t, lc.Result.Err)
	assert.Equal(t, []string{"a", "b"}, models(t, f.Server))
	steps := fallbacks(f.rec, event.Fallback)
	require.Len(t, steps, 1)
	assert.Equal(t, event.OutcomeQuotaExhausted, steps[0].Outcome)
}

// A target that would be the one before it again, and a named status that
// is not a failure answer, are refused at construction.
func TestR20_2_PointlessTargetsAndStatusesAreRefused(t *testing.T) {
	t.Parallel()
	for name, cfg := range map[string]fallback.Config{
		"zero target": {Codec: openai.New(), Targets: []fallback.Target{{Model: "b"}, {}}},
		"named 200":   {Codec: openai.New(), Rules: fallback.Rules{Statuses: []int{200}}, Targets: []fallback.Target{{Model: "b"}}},
		"named 307":   {Codec: openai.New(), Rules: fallback.Rules{Statuses: []int{307}}, Targets: []fallback.Target{{Model: "b"}}},
		"named 600":   {Codec: openai.New(), Rules: fallback.Rules{Statuses: []int{600}}, Targets: []fallback.Target{{Model: "b"}}},
	} {
		_, err := fallback.New(cfg)
		var ce *fallback.ConfigError
		require.ErrorAs(t, err, &ce, name)
	}
	_, err := fallback.New(fallback.Config{Codec: openai.New(), Rules: fallback.Rules{Statuses: []int{404, 400}},
		Targets: []fallback.Target{{Credential: func(context.Context, http.Header) error { return nil }}}})
	require.NoError(t, err, "another credential on the same upstream is a target")
}

// A read of a stored response (a GET) is never sent to another target: it
// belongs to the upstream that holds the response, so only the engine
// recovers it and its final answer is the caller's.
func TestR20_2_ReadsNeverFallBack(t *testing.T) {
	busy := recoursetest.JSON(503, recoursetest.OpenAIError("server_error", "server_error", "busy"))
	f := newFixture(t, responses.New(), retry.Policy{MaxAttempts: 2},
		fallback.Config{Targets: []fallback.Target{{Model: "b"}, {Upstream: "http://127.0.0.1:9"}}},
		busy, busy, recoursetest.JSON(200, `{"id":"resp_1","status":"completed"}`))
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, f.Server.URL+"/v1/responses/resp_1", nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+rigtest.Key)
	resp, err := f.HTTP.Do(req)
	require.NoError(t, err)
	readBody(t, resp)
	assert.Equal(t, http.StatusServiceUnavailable, resp.StatusCode, "the read's own final answer")
	assert.Equal(t, 2, f.Server.Count(), "MaxAttempts reads, and nothing sent to another target")
	assert.Empty(t, fallbacks(f.rec, event.Fallback))
}
