package retry_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"net/http"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/recourse-dev/recourse/chain"
	"github.com/recourse-dev/recourse/chat"
	"github.com/recourse-dev/recourse/client"
	"github.com/recourse-dev/recourse/codec"
	"github.com/recourse-dev/recourse/codecs/openai"
	"github.com/recourse-dev/recourse/event"
	"github.com/recourse-dev/recourse/internal/rigtest"
	"github.com/recourse-dev/recourse/layer"
	"github.com/recourse-dev/recourse/layers/retry"
	"github.com/recourse-dev/recourse/recoursetest"
)

// policyErrorCases are the invalid fields of R3.1 with the supplied values
// that must not appear in the error.
func policyErrorCases() []struct {
	name   string
	field  string
	mutate func(*retry.Policy)
	values []string
} {
	neg := -1234567 * time.Nanosecond
	over := layer.MaxDuration + time.Millisecond
	durValues := func(d time.Duration) []string {
		return []string{d.String(), strconv.FormatInt(int64(d), 10), strconv.FormatInt(d.Milliseconds(), 10)}
	}
	type row = struct {
		name   string
		field  string
		mutate func(*retry.Policy)
		values []string
	}
	rows := []row{
		{"MaxAttempts=-1", "MaxAttempts", func(p *retry.Policy) { p.MaxAttempts = -1 }, []string{"-1"}},
		{"MaxAttempts=-7654321", "MaxAttempts", func(p *retry.Policy) { p.MaxAttempts = -7654321 }, []string{"7654321"}},
		{"RetryableCategories unknown", "RetryableCategories", func(p *retry.Policy) {
			p.RetryableCategories = []event.Category{event.CategoryHTTP, "bogus_category_q"}
		}, []string{"bogus_category_q"}},
		{"RetryableCategories prompt", "RetryableCategories", func(p *retry.Policy) {
			p.RetryableCategories = []event.Category{event.Category(rigtest.Prompt)}
		}, []string{rigtest.Prompt}},
		{"RetryableStatuses 0", "RetryableStatuses", func(p *retry.Policy) { p.RetryableStatuses = []int{503, 0} }, []string{"0", "503"}},
		{"RetryableStatuses 600", "RetryableStatuses", func(p *retry.Policy) { p.RetryableStatuses = []int{600} }, []string{"600"}},
	}
	for _, f := range []struct {
		name string
		set  func(*retry.Policy, time.Duration)
	}{
		{"BaseDelay", func(p *retry.Policy, d time.Duration) { p.BaseDelay = new(d) }},
		{"DelayCeiling", func(p *retry.Policy, d time.Duration) { p.DelayCeiling = new(d) }},
		{"Budget", func(p *retry.Policy, d time.Duration) { p.Budget = new(d) }},
	} {
		for _, d := range []time.Duration{neg, over} {
			set, d := f.set, d
			rows = append(rows, row{f.name + "=" + d.String(), f.name, func(p *retry.Policy) { set(p, d) }, durValues(d)})
		}
	}
	return rows
}

// checkPolicyError asserts the R3.1 shape of err: a *layer.PolicyError with
// the code and field, whose safe texts hold none of values.
func checkPolicyError(t *testing.T, err error, field string, values []string) {
	t.Helper()
	var pe *layer.PolicyError
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, layer.PolicyErrorCode, pe.Code)
	assert.Equal(t, "RECOVERY_POLICY_ERROR", pe.Code)
	assert.Equal(t, field, pe.Field)
	js, jerr := json.Marshal(pe)
	require.NoError(t, jerr)
	// The PolicyError's own texts (an http.Client wraps it in a *url.Error
	// whose text adds the request URL).
	for _, text := range []string{pe.Error(), fmt.Sprintf("%v %+v", pe, pe), string(js)} {
		for _, v := range append(values, rigtest.Key, rigtest.Prompt) {
			assert.NotContains(t, text, v, "R3.1: no supplied value in the error")
		}
	}
}

func TestR3_1_InvalidFieldFromDefault(t *testing.T) {
	for _, tc := range policyErrorCases() {
		t.Run(tc.name, func(t *testing.T) {
			p := retry.Policy{MaxAttempts: 3}
			rec := wired(&p)
			tc.mutate(&p)
			ch, err := chain.Default(openai.New(), chain.WithPolicy(p))
			assert.Nil(t, ch)
			checkPolicyError(t, err, tc.field, tc.values)
			assert.Empty(t, rec.Log(), "R3.1: no event, no capture")
		})
	}
}

func TestR3_1_InvalidFieldFromPerCallPolicy(t *testing.T) {
	for _, tc := range policyErrorCases() {
		t.Run(tc.name, func(t *testing.T) {
			r := rigtest.New(t, openai.New(), retry.Policy{MaxAttempts: 3}, okStep("never"), okStep("never"))
			p := retry.Policy{MaxAttempts: 3, Sleep: r.Clock.Sleep, WallClock: r.Clock.Now, MonotonicClock: r.Clock.Mono}
			rec := wired(&p)
			tc.mutate(&p)
			ctx := retry.WithPolicy(context.Background(), &p)

			_, err := r.Client.Complete(ctx, canaryRequest())
			checkPolicyError(t, err, tc.field, tc.values)

			// The same through a plain http.Client over the chain.
			req, rerr := http.NewRequestWithContext(ctx, http.MethodPost, r.Server.URL+completionsPath, bytes.NewReader(encoded(t, canaryRequest())))
			require.NoError(t, rerr)
			resp, err := r.HTTP.Do(req)
			if resp != nil {
				resp.Body.Close()
			}
			checkPolicyError(t, err, tc.field, tc.values)

			assert.Equal(t, 0, r.Server.Count(), "R3.1: zero POSTs")
			assert.Empty(t, rec.Log(), "R3.1: zero events, zero captures")
			assert.Empty(t, r.Rec.Log())
		})
	}
}

func TestR3_2_JitterSampledMaxAttemptsMinusOneTimesBeforeAnything(t *testing.T) {
	p := retry.Policy{MaxAttempts: 4, BaseDelay: new(100 * time.Millisecond), DelayCeiling: new(250 * time.Millisecond)}
	rec := wired(&p)
	p.Jitter = jitterSeq(func() { rec.Note("jitter") }, 0, 0.5, 1)
	r := rigtest.New(t, openai.New(), p, repeat(statusStep(503), 5)...)

	_, err := r.Client.Complete(context.Background(), canaryRequest())

	re := asRecoveryError(t, err)
	assert.Equal(t, event.OutcomeExhausted, re.Outcome)
	assert.Equal(t, 4, r.Server.Count())
	log := rec.Log()
	require.GreaterOrEqual(t, len(log), 3)
	assert.Equal(t, []string{"jitter", "jitter", "jitter"}, log[:3], "R3.2: every sample before any capture or event")
	assert.Equal(t, 3, count(log, "jitter"), "R3.2: exactly MaxAttempts-1 samples")
	// Used in retry order: jitter 0, 0.5, 1 for failed attempts 1, 2, 3.
	assert.Equal(t, []time.Duration{0, 100 * time.Millisecond, 250 * time.Millisecond}, r.Clock.Sleeps(), "R3.2/R6.1")
	var delays []time.Duration
	for _, e := range eventsOf(rec.Events(), event.DelayScheduled) {
		delays = append(delays, e.Delay)
	}
	assert.Equal(t, []time.Duration{0, 100 * time.Millisecond, 250 * time.Millisecond}, delays)
}

func TestR3_2_BadLaterSampleIsPolicyErrorBeforeAnything(t *testing.T) {
	for _, bad := range []float64{math.NaN(), -0.1, 1.1, math.Inf(1), math.Inf(-1)} {
		t.Run(strconv.FormatFloat(bad, 'g', -1, 64), func(t *testing.T) {
			p := retry.Policy{MaxAttempts: 4}
			rec := wired(&p)
			p.Jitter = jitterSeq(func() { rec.Note("jitter") }, 0.5, bad, 0.5)
			r := rigtest.New(t, openai.New(), p, statusStep(503), okStep("never"))

			_, err := r.Client.Complete(context.Background(), canaryRequest())

			checkPolicyError(t, err, "Jitter", []string{strconv.FormatFloat(bad, 'g', -1, 64)})
			assert.Equal(t, 0, r.Server.Count(), "R3.2: nothing sent")
			for _, l := range rec.Log() {
				assert.Equal(t, "jitter", l, "R3.2: no capture and no event")
			}
		})
	}
}

func TestR3_2_OneAttemptSamplesNothing(t *testing.T) {
	for _, max := range []int{0, 1} {
		t.Run(strconv.Itoa(max), func(t *testing.T) {
			p := retry.Policy{MaxAttempts: max}
			rec := wired(&p)
			p.Jitter = jitterSeq(func() { rec.Note("jitter") }, 0.5)
			r := rigtest.New(t, openai.New(), p, statusStep(503), okStep("never"))

			_, err := r.Client.Complete(context.Background(), canaryRequest())

			assert.Equal(t, event.OutcomeExhausted, asRecoveryError(t, err).Outcome)
			assert.Equal(t, 0, count(rec.Log(), "jitter"), "R3.2: MaxAttempts 1 samples nothing")
			assert.Equal(t, 1, r.Server.Count())
		})
	}
}

func TestR3_2_JitterSampledPerLogicalCallEvenOnSuccess(t *testing.T) {
	p := retry.Policy{MaxAttempts: 3}
	rec := wired(&p)
	p.Jitter = jitterSeq(func() { rec.Note("jitter") }, 0.25)
	r := rigtest.New(t, openai.New(), p, okStep("a"), okStep("b"))

	for range 2 {
		_, err := r.Client.Complete(context.Background(), canaryRequest())
		require.NoError(t, err)
	}
	log := rec.Log()
	assert.Equal(t, 4, count(log, "jitter"), "R3.2: MaxAttempts-1 samples per logical call")
	assert.Equal(t, []string{"jitter", "jitter", "wire:request"}, log[:3])
}

func TestR6_1_BackoffVerbatimExample(t *testing.T) {
	base, ceiling := 100*time.Millisecond, 250*time.Millisecond
	assert.Equal(t, time.Duration(0), retry.Backoff(1, base, ceiling, 0))
	assert.Equal(t, 100*time.Millisecond, retry.Backoff(2, base, ceiling, 0.5))
	assert.Equal(t, 250*time.Millisecond, retry.Backoff(3, base, ceiling, 1))
}

// expBackoff is R6.1 computed with big integers: jitter 1 * min(ceiling, base*2^(n-1)).
func expBackoff(n int, base, ceiling time.Duration) time.Duration {
	v := new(big.Int).Lsh(big.NewInt(int64(base)), uint(n-1))
	if v.Cmp(big.NewInt(int64(ceiling))) > 0 {
		return ceiling
	}
	return time.Duration(v.Int64())
}

func TestR6_1_BackoffTable(t *testing.T) {
	near := layer.MaxDuration - time.Nanosecond
	rows := []struct {
		n             int
		base, ceiling time.Duration
		jitter        float64
		want          time.Duration
	}{
		{1, 0, 30 * time.Second, 1, 0},
		{7, 0, 30 * time.Second, 1, 0},
		{10_000, 0, layer.MaxDuration, 1, 0},
		{10_000, 100 * time.Millisecond, 30 * time.Second, 1, 30 * time.Second},
		{10_000, 100 * time.Millisecond, 30 * time.Second, 0.5, 15 * time.Second},
		{10_000, 100 * time.Millisecond, 30 * time.Second, 0, 0},
		{10_000, time.Nanosecond, layer.MaxDuration, 1, layer.MaxDuration},
		{64, time.Nanosecond, layer.MaxDuration, 1, layer.MaxDuration},
		{1, layer.MaxDuration, layer.MaxDuration, 1, layer.MaxDuration},
		{2, near, layer.MaxDuration, 1, layer.MaxDuration},
		{10_000, near, layer.MaxDuration, 1, layer.MaxDuration},
		{1, near, layer.MaxDuration, 1, near},
		{1, time.Second, 250 * time.Millisecond, 1, 250 * time.Millisecond},
		{1, 100 * time.Millisecond, 0, 1, 0},
	}
	for _, r := range rows {
		t.Run(fmt.Sprintf("n=%d/base=%v/ceiling=%v/jitter=%v", r.n, r.base, r.ceiling, r.jitter), func(t *testing.T) {
			assert.Equal(t, r.want, retry.Backoff(r.n, r.base, r.ceiling, r.jitter))
		})
	}
	for n := 1; n <= 70; n++ {
		base, ceiling := 100*time.Millisecond, 30*time.Second
		assert.Equal(t, expBackoff(n, base, ceiling), retry.Backoff(n, base, ceiling, 1), "n=%d", n)
		assert.Equal(t, expBackoff(n, time.Nanosecond, layer.MaxDuration), retry.Backoff(n, time.Nanosecond, layer.MaxDuration, 1), "n=%d", n)
	}
}

func TestR6_2_DelayScheduledBeforeSleepRetryStartedAfter(t *testing.T) {
	p := retry.Policy{MaxAttempts: 2, Jitter: jitterSeq(nil, 1)}
	rec := wired(&p)
	var clock *rigtest.Clock
	p.Sleep = func(ctx context.Context, d time.Duration) error {
		rec.Note("sleep " + d.String())
		return clock.Sleep(ctx, d)
	}
	r := rigtest.New(t, openai.New(), p, statusStep(503), okStep("ok"))
	clock = r.Clock

	_, err := r.Client.Complete(context.Background(), canaryRequest())
	require.NoError(t, err)

	log := rec.Log()
	i := slices.Index(log, "event:delay_scheduled")
	require.GreaterOrEqual(t, i, 0, "%v", log)
	assert.Equal(t, []string{"event:delay_scheduled", "sleep 100ms", "event:retry_started", "wire:request", "event:attempt_started"}, log[i:i+5])
	ds := eventsOf(rec.Events(), event.DelayScheduled)
	require.Len(t, ds, 1)
	assert.Equal(t, 100*time.Millisecond, ds[0].Delay, "R6.2: the event carries the delay")
	assert.Equal(t, 2, ds[0].NextAttempt)
	js, err := json.Marshal(ds[0])
	require.NoError(t, err)
	assert.Contains(t, string(js), `"delay_ms":100`)
	rs := eventsOf(rec.Events(), event.RetryStarted)
	require.Len(t, rs, 1)
	assert.Equal(t, 2, rs[0].NextAttempt)
}

// R1.3 (non-streaming scope): the same policy applies to structured calls.
func TestR1_3_StructuredCallRecoversWithTheSamePolicy(t *testing.T) {
	r := rigtest.New(t, openai.New(), retry.Policy{MaxAttempts: 2, Jitter: zeroJitter},
		statusStep(503), okStep(`{"answer":42}`))
	comp, err := r.Client.CompleteStructured(context.Background(), canaryRequest(),
		chat.Schema{Name: "answer", Schema: json.RawMessage(`{"type":"object"}`)})
	require.NoError(t, err)
	assert.Equal(t, `{"answer":42}`, comp.Message.Content)
	assert.Equal(t, 2, r.Server.Count())
	f := firstFailed(t, r.Rec.Events())
	assert.Equal(t, codec.Structured, f.Operation, "R10.2: operation")
}

func TestR3_1_BoundaryValuesAreValid(t *testing.T) {
	rows := map[string]func(*retry.Policy){
		"BaseDelay 0":            func(p *retry.Policy) { p.BaseDelay = new(time.Duration(0)) },
		"BaseDelay MaxDuration":  func(p *retry.Policy) { p.BaseDelay = new(layer.MaxDuration) },
		"DelayCeiling 0":         func(p *retry.Policy) { p.DelayCeiling = new(time.Duration(0)) },
		"DelayCeiling max":       func(p *retry.Policy) { p.DelayCeiling = new(layer.MaxDuration) },
		"Budget max":             func(p *retry.Policy) { p.Budget = new(layer.MaxDuration) },
		"MaxAttempts 0 means 1":  func(p *retry.Policy) { p.MaxAttempts = 0 },
		"every category":         func(p *retry.Policy) { p.RetryableCategories = event.Categories() },
		"statuses 100 and 599":   func(p *retry.Policy) { p.RetryableStatuses = []int{100, 599} },
		"jitter 0 and 1 samples": func(p *retry.Policy) { p.MaxAttempts, p.Jitter = 3, jitterSeq(nil, 0, 1) },
	}
	for name, set := range rows {
		t.Run(name, func(t *testing.T) {
			p := retry.Policy{MaxAttempts: 2}
			set(&p)
			_, err := chain.Default(openai.New(), chain.WithPolicy(p))
			require.NoError(t, err)
			r := rigtest.New(t, openai.New(), p, okStep("ok"))
			_, err = r.Client.Complete(context.Background(), canaryRequest())
			require.NoError(t, err)
			assert.Equal(t, 1, r.Server.Count())
		})
	}
}

// R3/R7: a zero budget is valid and leaves no time for a resend.
func TestR7_1_ZeroBudgetRefusesEveryResend(t *testing.T) {
	r := rigtest.New(t, openai.New(), retry.Policy{MaxAttempts: 3, Jitter: zeroJitter, Budget: new(time.Duration(0))},
		statusStep(503), okStep("never"))
	_, err := r.Client.Complete(context.Background(), canaryRequest())
	assert.Equal(t, event.OutcomeDeadline, asRecoveryError(t, err).Outcome)
	assert.Equal(t, 1, r.Server.Count())
	assert.Empty(t, r.Clock.Sleeps())
}

func TestR3_2_JitterThatPanicsIsAPolicyError(t *testing.T) {
	r := rigtest.New(t, openai.New(), retry.Policy{MaxAttempts: 2, Jitter: func() float64 { panic("boom") }},
		okStep("never"))
	_, err := r.Client.Complete(context.Background(), userRequest())
	var pe *layer.PolicyError
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, "Jitter", pe.Field)
	assert.Equal(t, 0, r.Server.Count())
	assert.Empty(t, r.Rec.Types())
}

func TestR6_2_SleepThatPanicsEndsInterruptedWithTheDelayCause(t *testing.T) {
	r := rigtest.New(t, openai.New(), retry.Policy{MaxAttempts: 2,
		Sleep: func(context.Context, time.Duration) error { panic("sleep broke") }},
		statusStep(503), okStep("never"))
	_, err := r.Client.Complete(context.Background(), userRequest())
	re := recoveryError(t, err)
	assert.Equal(t, event.OutcomeInterrupted, re.Outcome)
	var pe *retry.PanicError
	require.ErrorAs(t, event.Inspect(&re.Failure).DelayCause, &pe)
	assert.Equal(t, "sleep broke", pe.Value)
	assert.NotContains(t, err.Error(), "sleep broke")
	assert.Equal(t, 1, r.Server.Count())
}

// TestR3_1_DefaultsCannotBeChangedByAnImporter: the default statuses and
// categories are handed out as copies: overwriting every entry of the
// returned slices changes no policy — a 503 and a transport failure are
// still retried under the defaults — nor the next copy.
func TestR3_1_DefaultsCannotBeChangedByAnImporter(t *testing.T) {
	statuses, cats := retry.DefaultRetryableStatuses(), retry.DefaultRetryableCategories()
	require.Equal(t, []int{429, 500, 502, 503, 504}, statuses)
	require.Equal(t, []event.Category{event.CategoryTransport, event.CategoryHTTP}, cats)
	for i := range statuses {
		statuses[i] = 999
	}
	for i := range cats {
		cats[i] = event.CategoryCancellation
	}
	assert.Equal(t, []int{429, 500, 502, 503, 504}, retry.DefaultRetryableStatuses())
	assert.Equal(t, []event.Category{event.CategoryTransport, event.CategoryHTTP}, retry.DefaultRetryableCategories())

	srv := startServer(t, statusStep(503), recoursetest.Reset(), okStep("third"))
	ch, err := chain.Default(openai.New(), chain.WithTransport(newTransport(t)), chain.WithPolicy(retry.Policy{MaxAttempts: 3, Jitter: zeroJitter}))
	require.NoError(t, err)
	cl, err := client.New(srv.URL, ch)
	require.NoError(t, err)
	comp, err := cl.Complete(context.Background(), canaryRequest())
	require.NoError(t, err, "the 503 and the reset are still retried")
	assert.Equal(t, "third", comp.Message.Content)
	assert.Equal(t, 3, srv.Count())
}
