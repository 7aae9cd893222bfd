package broker_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/recourse-dev/recourse/broker"
	"github.com/recourse-dev/recourse/chain"
	"github.com/recourse-dev/recourse/codecs/openai"
	"github.com/recourse-dev/recourse/event"
	"github.com/recourse-dev/recourse/internal/rigtest"
	"github.com/recourse-dev/recourse/layer"
	"github.com/recourse-dev/recourse/layers/quota"
	"github.com/recourse-dev/recourse/layers/retry"
	"github.com/recourse-dev/recourse/recoursetest"
)

// quotaRig is a rig whose chain has a retry quota allowing floor resends
// per window and nothing by ratio.
func quotaRig(t *testing.T, floor int, s ...recoursetest.Step) *rigtest.Rig {
	t.Helper()
	q, err := quota.New(quota.WithFloor(floor), quota.WithRatio(0), quota.WithStore(quota.NewMemoryStore()))
	require.NoError(t, err)
	return rigtest.NewWith(t, openai.New(), retry.Policy{}, []chain.Option{chain.WithPerCall(q)}, s...)
}

// A completion whose resend the quota refuses is announced with a quota
// notice (llm_quota_exhausted), shown on the status line, and the run
// ends with the typed quota_exhausted error.
func TestR18_3_QuotaNoticeAndStatusLine(t *testing.T) {
	r := quotaRig(t, 0, gateway504())
	ns := &notices{}
	var st broker.Status
	b := broker.New(r.Client, broker.WithModel(model), broker.WithNotices(func(n broker.Notice) {
		ns.add(n)
		if n.Event == broker.EventQuotaExhausted {
			st.Apply(n)
			assert.Equal(t, "not retrying LLM request after HTTP 504: retry quota for "+r.Server.URL[len("http://"):]+
				" exhausted: 0 resends in the last 60 s", st.Line())
		}
	}), broker.WithPolicy(wire(r, retry.Policy{MaxAttempts: 3})))
	h := user("q")
	_, err := b.Generate(context.Background(), &h)
	var re *layer.RecoveryError
	require.ErrorAs(t, err, &re)
	assert.Equal(t, event.OutcomeQuotaExhausted, re.Outcome)
	var qn []broker.QuotaNotice
	for _, n := range ns.list() {
		if n.Quota != nil {
			qn = append(qn, *n.Quota)
			b, err := json.Marshal(n)
			require.NoError(t, err)
			var back broker.Notice
			require.NoError(t, json.Unmarshal(b, &back))
			assert.Equal(t, n, back, "JSON round trip of %s", b)
		}
	}
	require.Len(t, qn, 1)
	assert.Equal(t, 1, qn[0].Completion)
	assert.Equal(t, 1, qn[0].FailedAttempt)
	assert.Equal(t, 504, qn[0].HTTPStatus)
	assert.Equal(t, time.Minute, qn[0].Quota.Window)
	assert.Empty(t, ns.retries(), "no retry is announced")
	assert.Equal(t, 1, r.Server.Count())
	assert.NotEmpty(t, st.Line(), "the line stays until the next activity")
	st.Apply(broker.Notice{Event: broker.EventActivity, Activity: &broker.Activity{Kind: broker.ActivityRunEnded}})
	assert.Empty(t, st.Line())
}

// The cooldown line counts down like a retry's.
func TestCooldownStatusLine(t *testing.T) {
	var st broker.Status
	st.Apply(broker.Notice{Event: broker.EventCooldown, Cooldown: &broker.CooldownNotice{Completion: 1, Wait: 4 * time.Second}})
	assert.Equal(t, "LLM provider cooling down: sending in 4.0s", st.Line())
	assert.Equal(t, "LLM provider cooling down: sending in 1.5s", st.Live(2500*time.Millisecond))
	b, err := json.Marshal(broker.Notice{Event: broker.EventCooldown, Cooldown: &broker.CooldownNotice{Completion: 1, Wait: 4 * time.Second}})
	require.NoError(t, err)
	assert.JSONEq(t, `{"event":"llm_cooldown","data":{"completion":1,"wait_ms":4000}}`, string(b))
}

// A continuation is a resend: it withdraws from the chain's quota, and
// one the quota refuses ends the run with a ContinuationError of outcome
// quota_exhausted, the broken stream's error kept.
func TestR18_1_ContinuationWithdraws(t *testing.T) {
	part := func(s string) recoursetest.Step { return broken(textDelta(s), toolStart("call_1", "lookup")) }
	r := quotaRig(t, 1, part("one "), part("two "), recoursetest.SSE(recoursetest.OpenAIStream("never")...))
	tl, ns := &toolLog{}, &notices{}
	b := continuing(r, tl, ns, 3, retry.Policy{})
	h := user("q")
	_, err := drain(b.GenerateStream(context.Background(), &h))
	var ce *broker.ContinuationError
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, event.OutcomeQuotaExhausted, ce.Outcome)
	assert.Equal(t, 1, ce.Continuations)
	assert.Equal(t, 2, r.Server.Count(), "the second continuation was refused")
	assert.Len(t, ns.continuations(), 1)
	require.NotNil(t, ce.Quota)
	assert.Contains(t, ce.Error(), "continuation quota_exhausted after 1/3 continuations (retry quota for ")
	assert.NotContains(t, ce.Error(), "one ")
	var re *layer.RecoveryError
	assert.True(t, errors.As(err, &re))
}

// FormatQuota renders the status line of a refused resend.
func ExampleFormatQuota() {
	fmt.Println(broker.FormatQuota(broker.QuotaNotice{Completion: 1, FailedAttempt: 2, HTTPStatus: 503,
		Quota: event.QuotaRefusal{Upstream: "api.openai.com", Resends: 14, Window: time.Minute}}))
	fmt.Println(broker.FormatCooldown(broker.CooldownNotice{Completion: 1, Wait: 1200 * time.Millisecond}))
	// Output:
	// not retrying LLM request after HTTP 503: retry quota for api.openai.com exhausted: 14 resends in the last 60 s
	// LLM provider cooling down: sending in 1.2s
}
