package retry_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/recourse-dev/recourse/codecs/openai"
	"github.com/recourse-dev/recourse/event"
	"github.com/recourse-dev/recourse/layers/retry"
)

// TestR3_4_EngineAndContextKeepDeepCopies: retry.New and retry.WithPolicy
// keep a deep copy of the policy they are given, and Layer.Policy and Clone
// return one: changing a slice element or a duration through any of them
// changes none of the others; nil slices stay nil (the defaults) and the
// Clone of nil is nil.
func TestR3_4_EngineAndContextKeepDeepCopies(t *testing.T) {
	given := func() retry.Policy {
		return retry.Policy{
			MaxAttempts: 3, BaseDelay: new(time.Millisecond), DelayCeiling: new(time.Second), Budget: new(time.Minute),
			RetryableCategories: []event.Category{event.CategoryTransport, event.CategoryHTTP},
			RetryableStatuses:   []int{503, 429},
		}
	}
	spoil := func(p *retry.Policy) {
		p.RetryableStatuses[0] = 400
		p.RetryableCategories[1] = "bogus"
		*p.BaseDelay, *p.DelayCeiling, *p.Budget = time.Hour, time.Hour, time.Hour
	}
	want := given()

	p := given()
	l, err := retry.New(openai.New(), &p)
	require.NoError(t, err)
	spoil(&p)
	assert.Equal(t, &want, l.Policy(), "the engine kept its own copy")

	cp := l.Policy()
	spoil(cp)
	assert.Equal(t, &want, l.Policy(), "Policy returned a copy")

	p = given()
	ctx := retry.WithPolicy(context.Background(), &p)
	spoil(&p)
	got, ok := retry.PolicyFrom(ctx)
	require.True(t, ok)
	assert.Equal(t, &want, got, "the context kept its own copy")

	p = given()
	c := p.Clone()
	spoil(c)
	assert.Equal(t, want, p, "Clone shares nothing that can be changed")

	assert.Nil(t, (*retry.Policy)(nil).Clone())
	zero := (&retry.Policy{}).Clone()
	assert.Nil(t, zero.RetryableStatuses, "a nil slice stays the default")
	assert.Nil(t, zero.RetryableCategories)
	assert.Nil(t, zero.BaseDelay)
}
