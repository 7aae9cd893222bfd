package retry_test

import (
	"errors"
	"fmt"
	"time"

	"github.com/recourse-dev/recourse/codecs/openai"
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
