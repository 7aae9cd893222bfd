package admission_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/recourse-dev/recourse/layer"
	"github.com/recourse-dev/recourse/layers/admission"
)

// New configures the retry layer's gate; Wait shows how decisions map to
// verdicts: only an explicit Allow permits a resend.
func ExampleNew() {
	l := admission.New(func(ctx context.Context, r admission.Request) (admission.Decision, error) {
		if r.Failure.HTTPStatus == 503 {
			return admission.Allow, nil
		}
		return admission.Reject, nil
	})
	fmt.Println(l.Kind())
	for _, status := range []int{503, 500} {
		v, _ := admission.Wait(context.Background(), l.Hook(), admission.Request{Failure: layer.Failure{HTTPStatus: status}, NextAttempt: 2})
		fmt.Println(status, v == admission.Allowed)
	}
	v, cause := admission.Wait(context.Background(), func(context.Context, admission.Request) (admission.Decision, error) {
		return "", errors.New("approval service down")
	}, admission.Request{})
	fmt.Println(v == admission.NoDecision, cause)
	// Output:
	// admission
	// 503 true
	// 500 false
	// true approval service down
}
