package retry_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/recourse-dev/recourse/chat"
	"github.com/recourse-dev/recourse/codecs/openai"
	"github.com/recourse-dev/recourse/event"
	"github.com/recourse-dev/recourse/internal/rigtest"
	"github.com/recourse-dev/recourse/layer"
	"github.com/recourse-dev/recourse/layers/retry"
)

// completeAsync runs r.Client.Complete with the canary request in a goroutine.
func completeAsync(r *rigtest.Rig, ctx context.Context) (<-chan *chat.Completion, <-chan error) {
	comp := make(chan *chat.Completion, 1)
	done := make(chan error, 1)
	go func() {
		c, err := r.Client.Complete(ctx, canaryRequest())
		comp <- c
		done <- err
	}()
	return comp, done
}

func TestR7_1_BudgetStartsAtTheFirstCompletedFailure(t *testing.T) {
	gate := make(chan struct{})
	r := rigtest.New(t, openai.New(), retry.Policy{MaxAttempts: 2, Jitter: zeroJitter, Budget: new(time.Second)},
		statusStep(503).Gated(-1, gate), okStep("ok"))

	comp, done := completeAsync(r, context.Background())
	require.Eventually(t, func() bool { return r.Server.Count() == 1 }, wait, time.Millisecond)
	r.Clock.Advance(time.Hour) // a long first attempt does not consume the budget
	close(gate)

	require.NoError(t, awaitResult(t, done))
	assert.Equal(t, "ok", (<-comp).Message.Content)
	assert.Equal(t, 2, r.Server.Count())
}

func TestR7_1_DeadlineInThePastAtTheFirstFailure(t *testing.T) {
	r := rigtest.New(t, openai.New(), retry.Policy{MaxAttempts: 3, Jitter: zeroJitter, Deadline: rigtest.Epoch.Add(-time.Second)},
		statusStep(503), okStep("never"))

	_, err := r.Client.Complete(context.Background(), canaryRequest())

	re := asRecoveryError(t, err)
	assert.Equal(t, event.OutcomeDeadline, re.Outcome)
	assert.Equal(t, 1, r.Server.Count(), "R7.2: the first attempt is still made")
	assert.Empty(t, r.Clock.Sleeps())
	assert.Equal(t, []string{"attempt_started", "attempt_failed", "exhausted"}, r.Rec.Types())
}

func TestR7_1_DeadlineRecheckedAfterTheSleep(t *testing.T) {
	// The delay (100 ms) fits the remaining 1 s, but the sleep overruns it:
	// no resend, no retry_started (R6.2, R7.1).
	var clock *rigtest.Clock
	p := retry.Policy{MaxAttempts: 3, Jitter: jitterSeq(nil, 1), Deadline: rigtest.Epoch.Add(time.Second)}
	p.Sleep = func(ctx context.Context, d time.Duration) error {
		clock.Advance(time.Hour)
		return nil
	}
	r := rigtest.New(t, openai.New(), p, statusStep(503), okStep("never"))
	clock = r.Clock

	_, err := r.Client.Complete(context.Background(), canaryRequest())

	assert.Equal(t, event.OutcomeDeadline, asRecoveryError(t, err).Outcome)
	assert.Equal(t, 1, r.Server.Count())
	assert.Equal(t, []string{"attempt_started", "attempt_failed", "delay_scheduled", "exhausted"}, r.Rec.Types())
}

func TestR7_1_BudgetRecheckedAfterTheSleep(t *testing.T) {
	var clock *rigtest.Clock
	p := retry.Policy{MaxAttempts: 3, Jitter: jitterSeq(nil, 1), Budget: new(time.Second)}
	p.Sleep = func(ctx context.Context, d time.Duration) error {
		clock.Advance(time.Hour)
		return nil
	}
	r := rigtest.New(t, openai.New(), p, statusStep(503), okStep("never"))
	clock = r.Clock

	_, err := r.Client.Complete(context.Background(), canaryRequest())

	assert.Equal(t, event.OutcomeDeadline, asRecoveryError(t, err).Outcome)
	assert.Equal(t, 1, r.Server.Count())
}

// blockUntilDone is an admission hook that waits for its context and then
// returns as a well-behaved hook does: no decision, the context's error.
func blockUntilDone(saw chan<- struct{}) layer.AdmissionHook {
	return func(ctx context.Context, _ layer.AdmissionRequest) (layer.Decision, error) {
		<-ctx.Done()
		close(saw)
		return "", ctx.Err()
	}
}

// TestR7_3_AdmissionWaitEndsAtTheDeadline: the engine bounds the admission
// wait by the time left on the policy's clocks, with its own timer (never
// the Sleep hook, which is the backoff's); a short bound passes while the
// hook is still pending. The hook's context must be
// cancelled and the outcome must be deadline (R7.3; R8.2: deadlines keep
// their own outcome), also when the hook, as a well-behaved hook does,
// returns ctx.Err() right after its context is cancelled. That return races
// the end of the wait inside the engine, so the call is repeated.
func TestR7_3_AdmissionWaitEndsAtTheDeadline(t *testing.T) {
	const calls = 40
	bounds := []struct {
		name  string
		bound func(*retry.Policy)
	}{
		{"deadline", func(p *retry.Policy) { p.Deadline = rigtest.Epoch.Add(2 * time.Millisecond) }},
		{"budget", func(p *retry.Policy) { p.Budget = new(2 * time.Millisecond) }},
	}
	for _, b := range bounds {
		t.Run(b.name, func(t *testing.T) {
			for i := range calls {
				t.Run(strconv.Itoa(i), func(t *testing.T) {
					saw := make(chan struct{})
					p := retry.Policy{MaxAttempts: 3, Jitter: zeroJitter, Admit: blockUntilDone(saw)}
					b.bound(&p)
					r := rigtest.New(t, openai.New(), p, statusStep(503), okStep("never"))

					_, done := completeAsync(r, context.Background())
					err := awaitResult(t, done)

					select {
					case <-saw:
					case <-time.After(wait):
						t.Fatal("R8.2: the hook's context was never cancelled")
					}
					re := asRecoveryError(t, err)
					assert.Equal(t, event.OutcomeDeadline, re.Outcome, "R7.3")
					assert.Equal(t, []string{"attempt_started", "attempt_failed", "admission_pending", "exhausted"}, r.Rec.Types())
					assert.Equal(t, 1, r.Server.Count())
				})
				if t.Failed() {
					return
				}
			}
		})
	}
}

func TestR7_2_FirstAttemptSucceedsAfterTheDeadlinePassed(t *testing.T) {
	gate := make(chan struct{})
	r := rigtest.New(t, openai.New(), retry.Policy{MaxAttempts: 3, Deadline: rigtest.Epoch.Add(time.Second), Budget: new(time.Second)},
		okStep("late but fine").Gated(-1, gate))

	comp, done := completeAsync(r, context.Background())
	require.Eventually(t, func() bool { return r.Server.Count() == 1 }, wait, time.Millisecond)
	r.Clock.Advance(time.Hour)
	close(gate)

	require.NoError(t, awaitResult(t, done), "R7.2: active generation is never timed out")
	assert.Equal(t, "late but fine", (<-comp).Message.Content)
}

func TestR7_2_AdmittedAttemptSucceedsAfterTheDeadlinePassed(t *testing.T) {
	gate := make(chan struct{})
	r := rigtest.New(t, openai.New(), retry.Policy{MaxAttempts: 3, Jitter: zeroJitter, Deadline: rigtest.Epoch.Add(10 * time.Second)},
		statusStep(503), okStep("late but fine").Gated(0, gate))

	comp, done := completeAsync(r, context.Background())
	require.Eventually(t, func() bool { return r.Server.Count() == 2 }, wait, time.Millisecond)
	r.Clock.Advance(time.Hour)
	close(gate)

	require.NoError(t, awaitResult(t, done), "R7.2")
	assert.Equal(t, "late but fine", (<-comp).Message.Content)
	assert.Equal(t, 2, r.Server.Count())
}
