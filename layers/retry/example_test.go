package retry_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/recourse-dev/recourse/codec"
	"github.com/recourse-dev/recourse/codecs/openai"
	"github.com/recourse-dev/recourse/event"
	"github.com/recourse-dev/recourse/layer"
	"github.com/recourse-dev/recourse/layers/retry"
)

// New validates the policy before anything is sent: an invalid field is a
// *layer.PolicyError that names the field and never its value.
func ExampleNew() {
	_, err := retry.New(openai.New(), &retry.Policy{MaxAttempts: -1})
	var pe *layer.PolicyError
	fmt.Println(errors.As(err, &pe), pe.Code, pe.Field)

	l, err := retry.New(openai.New(), &retry.Policy{MaxAttempts: 3})
	fmt.Println(l.Name(), l.Position(), l.Enabled(), err)
	// Output:
	// true RECOVERY_POLICY_ERROR MaxAttempts
	// retry engine true <nil>
}

// Backoff is full jitter over a capped exponential (R6.1).
func ExampleBackoff() {
	base, ceiling := 100*time.Millisecond, 250*time.Millisecond
	for n, j := range []float64{0, 0.5, 1} {
		fmt.Println(retry.Backoff(n+1, base, ceiling, j))
	}
	// Output:
	// 0s
	// 100ms
	// 250ms
}

// Recommended is the starting policy of a chain that retries: four
// attempts, every other field at its default.
func ExampleRecommended() {
	p := retry.Recommended()
	fmt.Println(p.MaxAttempts, p.Validate())
	// Output:
	// 4 <nil>
}

// NewDecider is the decision plane on its own: here, after a 503, the
// first resend waits the full-jitter delay of attempt 1 and may go.
func ExamplePolicy_NewDecider() {
	p := retry.Policy{MaxAttempts: 2, Jitter: func() float64 { return 1 },
		Sleep: func(context.Context, time.Duration) error { return nil }}
	d, err := p.NewDecider(codec.Facts{}, 1)
	if err != nil {
		panic(err)
	}
	f := &event.Failure{Category: event.CategoryHTTP, HTTPStatus: 503}
	f.Classification = d.Classify(f, false, false)
	d.Failed()
	o, err := d.Resend(context.Background(), f, 1, 2, func(typ event.Type, _ *event.Failure, delay time.Duration, next int) error {
		fmt.Println(typ, delay, next)
		return nil
	})
	fmt.Printf("eligible=%v outcome=%q err=%v\n", f.Classification.Eligible, o, err)
	// Output:
	// delay_scheduled 100ms 2
	// retry_started 0s 2
	// eligible=true outcome="" err=<nil>
}

// Policy.Clone is a deep copy: changing the clone's statuses or delays
// leaves the original as it was (R3.4).
func ExamplePolicy_Clone() {
	p := retry.Policy{RetryableStatuses: []int{503}, BaseDelay: new(time.Second)}
	c := p.Clone()
	c.RetryableStatuses[0] = 429
	*c.BaseDelay = time.Minute
	fmt.Println(p.RetryableStatuses, *p.BaseDelay, c.RetryableStatuses, *c.BaseDelay)
	// Output: [503] 1s [429] 1m0s
}
