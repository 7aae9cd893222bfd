package retry_test

import (
	"context"
	"fmt"

	"github.com/recourse-dev/recourse/event"
	"github.com/recourse-dev/recourse/layer"
	"github.com/recourse-dev/recourse/layers/retry"
)

// AllowAll allows every resend: set it as the policy's Admit for a local
// server whose duplicated inference is acceptable.
func ExampleAllowAll() {
	p := retry.Policy{MaxAttempts: 3, Admit: retry.AllowAll()}
	d, err := p.Admit(context.Background(), layer.AdmissionRequest{NextAttempt: 2})
	fmt.Println(d, err)
	// Output:
	// allow <nil>
}

// RejectAll rejects every resend: each eligible failure ends with outcome
// admission_rejected.
func ExampleRejectAll() {
	d, err := retry.RejectAll()(context.Background(), layer.AdmissionRequest{NextAttempt: 2})
	fmt.Println(d, err)
	// Output:
	// reject <nil>
}

// An AdmissionQueue puts each admission request to the application: here a loop
// that allows resends after an HTTP 503 and rejects the rest.
func ExampleNewAdmissionQueue() {
	q := retry.NewAdmissionQueue()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		for {
			p, err := q.Next(ctx)
			if err != nil {
				return
			}
			if p.Request.Failure.HTTPStatus == 503 {
				p.Decide(layer.Allow)
			} else {
				p.Decide(layer.Reject)
			}
		}
	}()
	policy := retry.Policy{MaxAttempts: 3, Admit: q.Hook}
	for _, status := range []int{503, 500} {
		d, _ := policy.Admit(ctx, layer.AdmissionRequest{Failure: event.Failure{HTTPStatus: status}, NextAttempt: 2})
		fmt.Println(status, d)
	}
	// Output:
	// 503 allow
	// 500 reject
}
