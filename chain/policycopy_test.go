package chain_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/recourse-dev/recourse/chain"
	"github.com/recourse-dev/recourse/client"
	"github.com/recourse-dev/recourse/codecs/openai"
	"github.com/recourse-dev/recourse/event"
	"github.com/recourse-dev/recourse/layers/retry"
)

// copyPolicy is a policy whose every shared part can be changed from
// outside: two retryable categories, one retryable status, a base delay.
// Its Sleep records the delays the engine asks for and returns at once.
func copyPolicy(slept *[]time.Duration) retry.Policy {
	return retry.Policy{
		MaxAttempts:         2,
		BaseDelay:           new(time.Millisecond),
		RetryableCategories: []event.Category{event.CategoryTransport, event.CategoryHTTP},
		RetryableStatuses:   []int{503},
		Jitter:              func() float64 { return 1 },
		Sleep: func(_ context.Context, d time.Duration) error {
			*slept = append(*slept, d)
			return nil
		},
	}
}

// spoil changes every shared part of p in place, as a caller holding its
// slices and pointers could.
func spoil(p *retry.Policy) {
	p.RetryableStatuses[0] = 400
	*p.BaseDelay = time.Hour
	p.RetryableCategories[1] = "bogus"
}

// recovers503 makes one call against a 503 then a success and checks that
// the policy in force is the one given at construction: the 503 is
// retried (status and category unchanged), the policy is still valid, and
// the backoff used the original base delay.
func recovers503(t *testing.T, ctx context.Context, ch *chain.Chain, slept *[]time.Duration) {
	t.Helper()
	srv := startServer(t, statusStep(503), okStep("recovered"))
	cl, err := client.New(srv.URL, ch)
	require.NoError(t, err)
	*slept = nil
	comp, err := cl.Complete(ctx, canaryRequest())
	require.NoError(t, err, "the 503 is retried under the policy the chain was given")
	assert.Equal(t, "recovered", comp.Message.Content)
	assert.Equal(t, 2, srv.Count(), "one resend")
	require.Len(t, *slept, 1)
	assert.Less(t, (*slept)[0], time.Second, "the backoff used the base delay given at construction")
}

// TestR3_4_ChainPolicyReturnsADeepCopy: changing the slices and pointers of
// what Chain.Policy returned changes neither the chain's policy nor what
// its calls retry.
func TestR3_4_ChainPolicyReturnsADeepCopy(t *testing.T) {
	var slept []time.Duration
	ch, err := chain.Default(openai.New(), chain.WithTransport(newTransport(t)), chain.WithPolicy(copyPolicy(&slept)))
	require.NoError(t, err)

	cp := ch.Policy()
	spoil(cp)

	again := ch.Policy()
	assert.Equal(t, []int{503}, again.RetryableStatuses)
	assert.Equal(t, []event.Category{event.CategoryTransport, event.CategoryHTTP}, again.RetryableCategories)
	assert.Equal(t, time.Millisecond, *again.BaseDelay)
	recovers503(t, context.Background(), ch, &slept)
}

// TestR3_4_ChainKeepsADeepCopyOfItsPolicy: changing the slices and
// pointers of the policy given to chain.WithPolicy after the chain is built
// changes nothing.
func TestR3_4_ChainKeepsADeepCopyOfItsPolicy(t *testing.T) {
	var slept []time.Duration
	p := copyPolicy(&slept)
	ch, err := chain.Default(openai.New(), chain.WithTransport(newTransport(t)), chain.WithPolicy(p))
	require.NoError(t, err)

	spoil(&p)

	recovers503(t, context.Background(), ch, &slept)
}

// TestR3_4_CallPolicyIsADeepCopy: changing the slices and pointers of a
// per-call policy after retry.WithPolicy placed it in the context
// changes nothing for the calls made with that context.
func TestR3_4_CallPolicyIsADeepCopy(t *testing.T) {
	var slept []time.Duration
	ch, err := chain.Default(openai.New(), chain.WithTransport(newTransport(t)), chain.WithoutRecovery())
	require.NoError(t, err)
	p := copyPolicy(&slept)
	ctx := retry.WithPolicy(context.Background(), &p)

	spoil(&p)

	recovers503(t, ctx, ch, &slept)
	got, ok := retry.PolicyFrom(ctx)
	require.True(t, ok)
	assert.Equal(t, []int{503}, got.RetryableStatuses, "the context kept its own copy")
}
