package retry_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/recourse-dev/recourse/layer"
	"github.com/recourse-dev/recourse/layers/retry"
)

// clock is a test clock: Sleep advances it instead of waiting.
type clock struct {
	now    time.Time
	mono   time.Duration
	sleeps []time.Duration
}

func newClock() *clock {
	return &clock{now: time.Date(2026, 10, 10, 0, 0, 0, 0, time.UTC)}
}

func (c *clock) policy(p retry.Policy) retry.Policy {
	p.WallClock = func() time.Time { return c.now }
	p.MonotonicClock = func() time.Duration { return c.mono }
	p.Sleep = func(ctx context.Context, d time.Duration) error {
		c.sleeps = append(c.sleeps, d)
		c.now, c.mono = c.now.Add(d), c.mono+d
		return ctx.Err()
	}
	return p
}

type recorder struct{ types []layer.EventType }

func (r *recorder) emit(typ layer.EventType, _ *layer.Failure, _ time.Duration, _ int) error {
	r.types = append(r.types, typ)
	return nil
}

func eligible503() *layer.Failure {
	return &layer.Failure{Category: layer.CategoryHTTP, HTTPStatus: 503, Acceptance: layer.AcceptanceUnknown,
		RetryAfter:     layer.RetryAfter{Kind: layer.RetryAfterAbsent},
		Classification: layer.Classification{Eligible: true, Reason: layer.ReasonTransient}}
}

func one() float64 { return 1 }

// R6.1, R6.2: a resend is announced with its delay, then slept, then
// started; the custom jitter is pre-sampled once per possible resend.
func TestR6_2_ResendSchedulesSleepsAndStarts(t *testing.T) {
	c := newClock()
	samples := 0
	p := c.policy(retry.Policy{MaxAttempts: 3, Jitter: func() float64 { samples++; return 1 }})
	d, err := p.NewDecider(layer.Facts{}, 2)
	if err != nil {
		t.Fatal(err)
	}
	if samples != 2 {
		t.Fatalf("jitter sampled %d times before anything, want 2 (R3.2)", samples)
	}
	var r recorder
	for n, want := range []time.Duration{100 * time.Millisecond, 200 * time.Millisecond} {
		d.Failed()
		if o, err := d.Resend(context.Background(), eligible503(), n+1, n+2, r.emit); o != "" || err != nil {
			t.Fatalf("resend %d = %q, %v", n+1, o, err)
		}
		if got := c.sleeps[n]; got != want {
			t.Errorf("resend %d slept %v, want %v", n+1, got, want)
		}
	}
	want := []layer.EventType{layer.EventDelayScheduled, layer.EventRetryStarted, layer.EventDelayScheduled, layer.EventRetryStarted}
	if len(r.types) != len(want) {
		t.Fatalf("events %v, want %v", r.types, want)
	}
	for i := range want {
		if r.types[i] != want[i] {
			t.Fatalf("events %v, want %v", r.types, want)
		}
	}
	if samples != 2 {
		t.Errorf("jitter sampled %d times in all, want 2", samples)
	}
}

// R8.3: without a hook, the codec's facts decide; nothing provably sent
// needs no admission.
func TestR8_3_DefaultRuleComesFromTheCodecFacts(t *testing.T) {
	for _, tc := range []struct {
		facts layer.Facts
		acc   layer.Acceptance
		want  layer.Outcome
	}{
		{layer.Facts{}, layer.AcceptanceUnknown, ""},
		{layer.Facts{LocalInference: true}, layer.AcceptanceUnknown, layer.OutcomeAdmissionRequired},
		{layer.Facts{LocalInference: true}, layer.AcceptanceNo, ""},
	} {
		p := newClock().policy(retry.Policy{MaxAttempts: 2, Jitter: one})
		d, err := p.NewDecider(tc.facts, 1)
		if err != nil {
			t.Fatal(err)
		}
		f := eligible503()
		f.Acceptance = tc.acc
		d.Failed()
		var r recorder
		if o, _ := d.Resend(context.Background(), f, 1, 2, r.emit); o != tc.want {
			t.Errorf("%+v, acceptance %s: outcome %q, want %q", tc.facts, tc.acc, o, tc.want)
		}
	}
}

// R7.3, R6.2: an admission wait is bounded by the budget on the policy's
// clocks with the library's own timer; the Sleep hook runs only for the
// scheduled backoff. An instant Allow therefore never races the budget.
func TestR7_3_AdmissionWaitDoesNotUseTheSleepHook(t *testing.T) {
	c := newClock()
	p := c.policy(retry.Policy{MaxAttempts: 2, Jitter: one, Budget: new(time.Second),
		Admit: func(context.Context, layer.AdmissionRequest) (layer.Decision, error) { return layer.Allow, nil }})
	d, err := p.NewDecider(layer.Facts{LocalInference: true}, 1)
	if err != nil {
		t.Fatal(err)
	}
	d.Failed()
	var r recorder
	o, err := d.Resend(context.Background(), eligible503(), 1, 2, r.emit)
	if o != "" || err != nil {
		t.Fatalf("outcome %q, %v; want the resend to go", o, err)
	}
	if len(c.sleeps) != 1 || c.sleeps[0] != 100*time.Millisecond {
		t.Fatalf("Sleep ran %v, want once, for the 100ms backoff", c.sleeps)
	}
	if r.types[0] != layer.EventAdmissionPending || r.types[1] != layer.EventAdmissionAllowed || r.types[2] != layer.EventDelayScheduled {
		t.Fatalf("events %v", r.types)
	}
}

// R7.3: a hook that never decides ends with outcome deadline once the
// budget runs out, and its context is cancelled.
func TestR7_3_PendingAdmissionEndsAtTheBudget(t *testing.T) {
	hookDone := make(chan error, 1)
	p := retry.Policy{MaxAttempts: 2, Jitter: one, Budget: new(10 * time.Millisecond),
		Admit: func(ctx context.Context, _ layer.AdmissionRequest) (layer.Decision, error) {
			<-ctx.Done()
			hookDone <- ctx.Err()
			return "", ctx.Err()
		}}
	d, err := p.NewDecider(layer.Facts{}, 1)
	if err != nil {
		t.Fatal(err)
	}
	d.Failed()
	var r recorder
	if o, _ := d.Resend(context.Background(), eligible503(), 1, 2, r.emit); o != layer.OutcomeDeadline {
		t.Fatalf("outcome %q, want deadline", o)
	}
	if err := <-hookDone; !errors.Is(err, context.Canceled) {
		t.Fatalf("the hook's context ended with %v, want cancelled", err)
	}
}

// R5.5: a Retry-After minimum above the ceiling refuses the resend; one
// above the time left refuses it with deadline; a valid one below both is a
// minimum of the delay.
func TestR5_5_RetryAfterIsAMinimumCheckedAgainstCeilingAndBudget(t *testing.T) {
	for _, tc := range []struct {
		ra    time.Duration
		want  layer.Outcome
		slept time.Duration
	}{
		{40 * time.Second, layer.OutcomeDelayCeiling, 0},
		{2 * time.Second, layer.OutcomeDeadline, 0},
		{500 * time.Millisecond, "", 500 * time.Millisecond},
	} {
		c := newClock()
		p := c.policy(retry.Policy{MaxAttempts: 2, Jitter: one, Budget: new(time.Second)})
		d, err := p.NewDecider(layer.Facts{}, 1)
		if err != nil {
			t.Fatal(err)
		}
		d.Failed()
		f := eligible503()
		f.RetryAfter = layer.RetryAfter{Kind: layer.RetryAfterSeconds, Delay: tc.ra}
		var r recorder
		if o, _ := d.Resend(context.Background(), f, 1, 2, r.emit); o != tc.want {
			t.Errorf("Retry-After %v: outcome %q, want %q", tc.ra, o, tc.want)
		}
		if tc.slept != 0 && (len(c.sleeps) != 1 || c.sleeps[0] != tc.slept) {
			t.Errorf("Retry-After %v: slept %v, want %v", tc.ra, c.sleeps, tc.slept)
		}
	}
}

// R3.1, R3.2: an invalid policy or jitter sample is a PolicyError before
// anything; MaxAttempts has a documented upper bound.
func TestR3_1_NewDeciderValidates(t *testing.T) {
	for name, p := range map[string]retry.Policy{
		"MaxAttempts":  {MaxAttempts: retry.MaxAttemptsLimit + 1},
		"Jitter":       {MaxAttempts: 3, Jitter: func() float64 { return 2 }},
		"BaseDelay":    {BaseDelay: new(-time.Second)},
		"DelayCeiling": {DelayCeiling: new(retry.MaxDuration + 1)},
	} {
		var pe *layer.PolicyError
		if _, err := p.NewDecider(layer.Facts{}, max(p.MaxAttempts, 1)-1); !errors.As(err, &pe) || pe.Field != name {
			t.Errorf("%s: err = %v, want a PolicyError for %s", name, err, name)
		}
	}
}

// R9.1: a cancelled context ends a resend during its backoff with outcome
// cancelled; a Sleep hook that fails otherwise is interrupted with the
// error kept as the failure's DelayCause.
func TestR9_1_ResendHonoursCancellationAndSleepFailures(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	p := retry.Policy{MaxAttempts: 2, Jitter: one}
	d, _ := p.NewDecider(layer.Facts{}, 1)
	var r recorder
	if o, _ := d.Resend(ctx, eligible503(), 1, 2, r.emit); o != layer.OutcomeCancelled {
		t.Fatalf("outcome %q, want cancelled", o)
	}
	broken := errors.New("broken sleep")
	p.Sleep = func(context.Context, time.Duration) error { return broken }
	d, _ = p.NewDecider(layer.Facts{}, 1)
	f := eligible503()
	if o, _ := d.Resend(context.Background(), f, 1, 2, r.emit); o != layer.OutcomeInterrupted {
		t.Fatalf("outcome %q, want interrupted", o)
	}
	if ev := layer.Inspect(f); ev == nil || ev.DelayCause != broken {
		t.Fatalf("DelayCause = %v, want the Sleep error", ev)
	}
	p.Sleep = func(context.Context, time.Duration) error { panic("x") }
	d, _ = p.NewDecider(layer.Facts{}, 1)
	f = eligible503()
	if o, _ := d.Resend(context.Background(), f, 1, 2, r.emit); o != layer.OutcomeInterrupted {
		t.Fatalf("a panicking Sleep: outcome %q, want interrupted", o)
	}
	var pe *retry.PanicError
	if ev := layer.Inspect(f); ev == nil || !errors.As(ev.DelayCause, &pe) {
		t.Fatalf("DelayCause = %v, want a *retry.PanicError", ev)
	}
}

// R3.1, R3.2: a MaxAttempts above MaxAttemptsLimit is a PolicyError naming
// the field, even with a custom Jitter, before any jitter is sampled: the
// pre-sampling stays bounded in memory and never panics.
func TestR3_1_HugeMaxAttemptsIsAPolicyErrorBeforeSampling(t *testing.T) {
	for _, n := range []int{retry.MaxAttemptsLimit + 1, 1 << 31, 1 << 62} {
		sampled := 0
		p := retry.Policy{MaxAttempts: n, Jitter: func() float64 { sampled++; return 0 }}
		var pe *layer.PolicyError
		if _, err := retry.New(nil, &p); !errors.As(err, &pe) || pe.Field != "MaxAttempts" {
			t.Errorf("MaxAttempts %d: New = %v, want a PolicyError for MaxAttempts", n, err)
		}
		if _, err := p.NewDecider(layer.Facts{}, n-1); !errors.As(err, &pe) || pe.Field != "MaxAttempts" {
			t.Errorf("MaxAttempts %d: NewDecider = %v, want a PolicyError for MaxAttempts", n, err)
		}
		if sampled != 0 {
			t.Errorf("MaxAttempts %d: jitter sampled %d times", n, sampled)
		}
	}
	p := retry.Policy{MaxAttempts: retry.MaxAttemptsLimit, Jitter: func() float64 { return 0.5 }}
	if _, err := p.NewDecider(layer.Facts{}, retry.MaxAttemptsLimit-1); err != nil {
		t.Errorf("MaxAttempts at the limit: %v", err)
	}
}
