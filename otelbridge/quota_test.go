package otelbridge_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/recourse-dev/recourse/codecs/openai"
	"github.com/recourse-dev/recourse/layer"
	"github.com/recourse-dev/recourse/layers/quota"
	"github.com/recourse-dev/recourse/layers/retry"
)

// A resend the retry quota refuses shows as recourse.quota.refused (with
// the quota's upstream and count) before the terminal recourse.exhausted,
// and the logical span keeps the exact outcome quota_exhausted.
func TestR18_3_QuotaExhaustedOutcome(t *testing.T) {
	q, err := quota.New(quota.WithFloor(0), quota.WithRatio(0), quota.WithStore(quota.NewMemoryStore()))
	require.NoError(t, err)
	f := newFixtureWith(t, openai.New(), retry.Policy{MaxAttempts: 3}, nil, []layer.Layer{q}, busy())
	_, err = f.client.Complete(context.Background(), request(model))
	require.Error(t, err)
	logical, _ := f.tree()
	scan(t, logical)
	la := attrs(logical.Attributes())
	assert.Equal(t, "quota_exhausted", la["recourse.outcome"].AsString())
	names := eventNames(logical)
	require.GreaterOrEqual(t, len(names), 3)
	assert.Equal(t, []string{"recourse.quota.refused", "recourse.breaker", "recourse.exhausted"}, names[len(names)-3:])
	ev := attrs(logical.Events()[len(names)-3].Attributes)
	assert.Equal(t, int64(0), ev["recourse.quota.resends"].AsInt64())
	assert.NotEmpty(t, ev["recourse.quota.upstream"].AsString())
	// The breaker's change is on the span too: its resends are refused
	// (R20.13).
	br := attrs(logical.Events()[len(names)-2].Attributes)
	assert.True(t, br["recourse.breaker.refusing"].AsBool())
	assert.Equal(t, ev["recourse.quota.upstream"].AsString(), br["recourse.breaker.upstream"].AsString())
}
