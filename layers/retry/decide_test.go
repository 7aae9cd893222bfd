package retry_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/recourse-dev/recourse/codec"
	"github.com/recourse-dev/recourse/event"
	"github.com/recourse-dev/recourse/layer"
	"github.com/recourse-dev/recourse/layers/retry"
)

// The Decider tests run in a synctest bubble with the policy's clocks
// left nil wherever they only need time to pass: the bubble fakes the
// default clocks and timers. A test keeps a Sleep hook only where it is
// about that public seam.

type recorder struct{ types []event.Type }

func (r *recorder) emit(typ event.Type, _ *event.Failure, _ time.Duration, _ int) error {
	r.types = append(r.types, typ)
	return nil
}

func eligible503() *event.Failure {
	return &event.Failure{Category: event.CategoryHTTP, HTTPStatus: 503, Acceptance: event.AcceptanceUnknown,
		RetryAfter:     event.RetryAfter{Kind: event.RetryAfterAbsent},
		Classification: event.Classification{Eligible: true, Reason: event.ReasonTransient}}
}

func one() float64 { return 1 }

// R6.1, R6.2: a resend is announced with its delay, then slept on the
// default timer, then started; the custom jitter is pre-sampled once per
// possible resend.
func TestR6_2_ResendSchedulesSleepsAndStarts(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		samples := 0
		p := retry.Policy{MaxAttempts: 3, Jitter: func() float64 { samples++; return 1 }}
		d, err := p.NewDecider(codec.Facts{}, 2)
		require.NoError(t, err)
		require.Equal(t, 2, samples, "jitter sampled before anything (R3.2)")
		var r recorder
		for n, want := range []time.Duration{100 * time.Millisecond, 200 * time.Millisecond} {
			d.Failed()
			start := time.Now()
			o, err := d.Resend(context.Background(), eligible503(), n+1, n+2, r.emit)
			require.NoError(t, err)
			require.Equal(t, event.Outcome(""), o, "resend %d", n+1)
			assert.Equal(t, want, time.Since(start), "resend %d slept its backoff", n+1)
		}
		assert.Equal(t, []event.Type{event.DelayScheduled, event.RetryStarted,
			event.DelayScheduled, event.RetryStarted}, r.types)
		assert.Equal(t, 2, samples, "and never again")
	})
}

// R8.3: without a hook, the codec's facts decide; nothing provably sent
// needs no admission.
func TestR8_3_DefaultRuleComesFromTheCodecFacts(t *testing.T) {
	for _, tc := range []struct {
		facts codec.Facts
		acc   event.Acceptance
		want  event.Outcome
	}{
		{codec.Facts{}, event.AcceptanceUnknown, ""},
		{codec.Facts{LocalInference: true}, event.AcceptanceUnknown, event.OutcomeAdmissionRequired},
		{codec.Facts{LocalInference: true}, event.AcceptanceNo, ""},
	} {
		synctest.Test(t, func(t *testing.T) {
			p := retry.Policy{MaxAttempts: 2, Jitter: one}
			d, err := p.NewDecider(tc.facts, 1)
			require.NoError(t, err)
			f := eligible503()
			f.Acceptance = tc.acc
			d.Failed()
			var r recorder
			o, err := d.Resend(context.Background(), f, 1, 2, r.emit)
			require.NoError(t, err)
			assert.Equal(t, tc.want, o, "%+v, acceptance %s", tc.facts, tc.acc)
		})
	}
}

// R7.3, R6.2: an admission wait is bounded by the budget with the
// library's own timer; the Sleep hook runs only for the scheduled backoff.
// An instant Allow therefore never races the budget. The Sleep hook stays
// here: the test is about that public seam (a user whose test talks to a
// real socket cannot use a bubble).
func TestR7_3_AdmissionWaitDoesNotUseTheSleepHook(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var sleeps []time.Duration
		p := retry.Policy{MaxAttempts: 2, Jitter: one, Budget: new(time.Second),
			Admit: func(context.Context, layer.AdmissionRequest) (layer.Decision, error) { return layer.Allow, nil },
			Sleep: func(ctx context.Context, d time.Duration) error {
				sleeps = append(sleeps, d)
				return ctx.Err()
			}}
		d, err := p.NewDecider(codec.Facts{LocalInference: true}, 1)
		require.NoError(t, err)
		d.Failed()
		var r recorder
		o, err := d.Resend(context.Background(), eligible503(), 1, 2, r.emit)
		require.NoError(t, err)
		require.Equal(t, event.Outcome(""), o, "the resend goes")
		assert.Equal(t, []time.Duration{100 * time.Millisecond}, sleeps, "Sleep ran once, for the 100ms backoff")
		require.GreaterOrEqual(t, len(r.types), 3)
		assert.Equal(t, []event.Type{event.AdmissionPending, event.AdmissionAllowed, event.DelayScheduled}, r.types[:3])
	})
}

// R7.3: a hook that never decides ends with outcome deadline exactly when
// the budget runs out, and its context is cancelled.
func TestR7_3_PendingAdmissionEndsAtTheBudget(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		hookDone := make(chan error, 1)
		p := retry.Policy{MaxAttempts: 2, Jitter: one, Budget: new(10 * time.Millisecond),
			Admit: func(ctx context.Context, _ layer.AdmissionRequest) (layer.Decision, error) {
				<-ctx.Done()
				hookDone <- ctx.Err()
				return "", ctx.Err()
			}}
		d, err := p.NewDecider(codec.Facts{}, 1)
		require.NoError(t, err)
		d.Failed()
		start := time.Now()
		var r recorder
		o, err := d.Resend(context.Background(), eligible503(), 1, 2, r.emit)
		require.NoError(t, err)
		assert.Equal(t, event.OutcomeDeadline, o)
		assert.Equal(t, 10*time.Millisecond, time.Since(start), "the wait ends at the budget")
		assert.ErrorIs(t, <-hookDone, context.Canceled, "the hook's context is cancelled")
	})
}

// R5.5: a Retry-After minimum above the ceiling refuses the resend; one
// above the time left refuses it with deadline; a valid one below both is a
// minimum of the delay. A refusal waits for nothing.
func TestR5_5_RetryAfterIsAMinimumCheckedAgainstCeilingAndBudget(t *testing.T) {
	for _, tc := range []struct {
		ra    time.Duration
		want  event.Outcome
		slept time.Duration
	}{
		{40 * time.Second, event.OutcomeDelayCeiling, 0},
		{2 * time.Second, event.OutcomeDeadline, 0},
		{500 * time.Millisecond, "", 500 * time.Millisecond},
	} {
		synctest.Test(t, func(t *testing.T) {
			p := retry.Policy{MaxAttempts: 2, Jitter: one, Budget: new(time.Second)}
			d, err := p.NewDecider(codec.Facts{}, 1)
			require.NoError(t, err)
			d.Failed()
			f := eligible503()
			f.RetryAfter = event.RetryAfter{Kind: event.RetryAfterSeconds, Delay: tc.ra}
			start := time.Now()
			var r recorder
			o, err := d.Resend(context.Background(), f, 1, 2, r.emit)
			require.NoError(t, err)
			assert.Equal(t, tc.want, o, "Retry-After %v", tc.ra)
			assert.Equal(t, tc.slept, time.Since(start), "Retry-After %v", tc.ra)
		})
	}
}

// R3.1, R3.2: an invalid policy or jitter sample is a PolicyError before
// anything; MaxAttempts has a documented upper bound.
func TestR3_1_NewDeciderValidates(t *testing.T) {
	for name, p := range map[string]retry.Policy{
		"MaxAttempts":  {MaxAttempts: retry.MaxAttemptsLimit + 1},
		"Jitter":       {MaxAttempts: 3, Jitter: func() float64 { return 2 }},
		"BaseDelay":    {BaseDelay: new(-time.Second)},
		"DelayCeiling": {DelayCeiling: new(layer.MaxDuration + 1)},
	} {
		var pe *layer.PolicyError
		_, err := p.NewDecider(codec.Facts{}, max(p.MaxAttempts, 1)-1)
		require.ErrorAs(t, err, &pe, name)
		assert.Equal(t, name, pe.Field)
	}
}

// R9.1, R6.2: a cancelled context ends a resend during its backoff with
// outcome cancelled; a Sleep hook that fails otherwise is interrupted with
// the error kept as the failure's DelayCause. The failing Sleep hooks stay:
// the test is about that public seam (a user whose test talks to a real
// socket cannot use a bubble).
func TestR9_1_ResendHonoursCancellationAndSleepFailures(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	p := retry.Policy{MaxAttempts: 2, Jitter: one}
	d, err := p.NewDecider(codec.Facts{}, 1)
	require.NoError(t, err)
	var r recorder
	o, _ := d.Resend(ctx, eligible503(), 1, 2, r.emit)
	assert.Equal(t, event.OutcomeCancelled, o)

	broken := errors.New("broken sleep")
	p.Sleep = func(context.Context, time.Duration) error { return broken }
	d, err = p.NewDecider(codec.Facts{}, 1)
	require.NoError(t, err)
	f := eligible503()
	o, _ = d.Resend(context.Background(), f, 1, 2, r.emit)
	assert.Equal(t, event.OutcomeInterrupted, o)
	ev := event.Inspect(f)
	require.NotNil(t, ev)
	assert.Same(t, broken, ev.DelayCause, "the Sleep error is the DelayCause")

	p.Sleep = func(context.Context, time.Duration) error { panic("x") }
	d, err = p.NewDecider(codec.Facts{}, 1)
	require.NoError(t, err)
	f = eligible503()
	o, _ = d.Resend(context.Background(), f, 1, 2, r.emit)
	assert.Equal(t, event.OutcomeInterrupted, o, "a panicking Sleep")
	ev = event.Inspect(f)
	require.NotNil(t, ev)
	var pe *retry.PanicError
	assert.ErrorAs(t, ev.DelayCause, &pe)
}

// R9.1: a context cancelled during the default timer's backoff ends the
// resend cancelled at that instant, without retry_started.
func TestR9_1_ResendCancelledDuringTheDefaultTimer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		time.AfterFunc(30*time.Millisecond, cancel)
		p := retry.Policy{MaxAttempts: 2, Jitter: one}
		d, err := p.NewDecider(codec.Facts{}, 1)
		require.NoError(t, err)
		start := time.Now()
		var r recorder
		o, err := d.Resend(ctx, eligible503(), 1, 2, r.emit)
		require.NoError(t, err)
		assert.Equal(t, event.OutcomeCancelled, o)
		assert.Equal(t, 30*time.Millisecond, time.Since(start))
		assert.Equal(t, []event.Type{event.DelayScheduled}, r.types)
	})
}

// R3.1, R3.2: a MaxAttempts above MaxAttemptsLimit is a PolicyError naming
// the field, even with a custom Jitter, before any jitter is sampled: the
// pre-sampling stays bounded in memory and never panics.
func TestR3_1_HugeMaxAttemptsIsAPolicyErrorBeforeSampling(t *testing.T) {
	for _, n := range []int{retry.MaxAttemptsLimit + 1, 1 << 31, 1 << 62} {
		sampled := 0
		p := retry.Policy{MaxAttempts: n, Jitter: func() float64 { sampled++; return 0 }}
		var pe *layer.PolicyError
		_, err := retry.New(nil, &p)
		require.ErrorAs(t, err, &pe, "MaxAttempts %d: New", n)
		assert.Equal(t, "MaxAttempts", pe.Field)
		_, err = p.NewDecider(codec.Facts{}, n-1)
		require.ErrorAs(t, err, &pe, "MaxAttempts %d: NewDecider", n)
		assert.Equal(t, "MaxAttempts", pe.Field)
		assert.Equal(t, 0, sampled, "MaxAttempts %d: no jitter sampled", n)
	}
	p := retry.Policy{MaxAttempts: retry.MaxAttemptsLimit, Jitter: func() float64 { return 0.5 }}
	_, err := p.NewDecider(codec.Facts{}, retry.MaxAttemptsLimit-1)
	assert.NoError(t, err, "MaxAttempts at the limit")
}
