package quota_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/recourse-dev/recourse/chain"
	"github.com/recourse-dev/recourse/chat"
	"github.com/recourse-dev/recourse/client"
	"github.com/recourse-dev/recourse/codecs/openai"
	"github.com/recourse-dev/recourse/event"
	"github.com/recourse-dev/recourse/layer"
	"github.com/recourse-dev/recourse/layers/quota"
	"github.com/recourse-dev/recourse/layers/retry"
	"github.com/recourse-dev/recourse/recoursetest"
)

// A stream resumed after a keepalive-only failure is a resend: it
// withdraws from the quota, and the quota refuses the resume that would
// exceed it (the stream's error is quota_exhausted).
func TestR18_1_StreamResumeWithdraws(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const ping = ": keepalive\n\n"
		cut := recoursetest.SSE(append([]string{ping}, recoursetest.OpenAIStream("never")...)...).Cut(len(ping))
		srv := newProvider(t, cut, cut, recoursetest.SSE(recoursetest.OpenAIStream("never")...))
		q := mustQuota(t, quota.WithFloor(1), quota.WithRatio(0), quota.WithStore(quota.NewMemoryStore()))
		p := retry.Policy{MaxAttempts: 3, BaseDelay: new(time.Duration(0))}
		ch, err := chain.Default(openai.New(), chain.WithPolicy(p), chain.WithPerCall(q), chain.WithTransport(srv.Transport()))
		require.NoError(t, err)
		cl, err := client.New(srv.URL, ch)
		require.NoError(t, err)
		var serr error
		for _, err := range cl.Stream(context.Background(), &chat.Request{Model: "gpt-test", Messages: []chat.Message{{Role: chat.User, Content: "hi"}}}) {
			if err != nil {
				serr = err
			}
		}
		var re *layer.RecoveryError
		require.True(t, errors.As(serr, &re), "%v", serr)
		assert.Equal(t, event.OutcomeQuotaExhausted, re.Outcome)
		require.NotNil(t, re.Quota, "a quota refused")
		assert.Equal(t, 1, re.Quota.Resends, "the first resume withdrew")
		assert.Equal(t, 2, srv.Count())
	})
}

// NewMemoryStore is the in-process Store: a horizon only rises, and a cap
// counts reservations in the window until they are refunded or age out.
func ExampleNewMemoryStore() {
	ctx := context.Background()
	s := quota.NewMemoryStore()
	t0 := time.Date(2026, 10, 10, 0, 0, 0, 0, time.UTC)
	key := "https://api.openai.com:443"
	_ = s.SetHorizon(ctx, key, t0.Add(5*time.Second))
	_ = s.SetHorizon(ctx, key, t0.Add(time.Second)) // never lowered
	fmt.Println(s.Horizon(key).Sub(t0))
	a, _ := s.Reserve(ctx, key, t0, 2, time.Minute)
	b, _ := s.Reserve(ctx, key, t0, 2, time.Minute)
	c, _ := s.Reserve(ctx, key, t0, 2, time.Minute)
	fmt.Println(a.OK, b.OK, c.OK, c.Count)
	_ = s.Refund(ctx, key, a.ID)
	n, _ := s.Peek(ctx, key, t0, time.Minute)
	later, _ := s.Peek(ctx, key, t0.Add(2*time.Minute), time.Minute)
	fmt.Println(n, later)
	// Output:
	// 5s
	// true true false 2
	// 1 0
}

// Sweep keeps what a key's own window still counts and drops what has
// passed: nothing is kept after the window.
func TestMemoryStoreSweep(t *testing.T) {
	ctx := context.Background()
	s := quota.NewMemoryStore()
	t0 := time.Date(2026, 10, 10, 0, 0, 0, 0, time.UTC)
	_, _ = s.Reserve(ctx, "long", t0, 5, time.Hour)
	_ = s.SetHorizon(ctx, "cool", t0.Add(time.Minute))
	s.Sweep(t0.Add(2*time.Second), time.Second) // a short-window quota sweeping
	n, _ := s.Peek(ctx, "long", t0.Add(2*time.Second), time.Hour)
	assert.Equal(t, 1, n, "the long window still counts its resend")
	assert.False(t, s.Horizon("cool").IsZero())
	s.Sweep(t0.Add(2*time.Hour), time.Second)
	n, _ = s.Peek(ctx, "long", t0.Add(2*time.Hour), time.Hour)
	assert.Zero(t, n)
	assert.True(t, s.Horizon("cool").IsZero(), "dropped once passed")
}
