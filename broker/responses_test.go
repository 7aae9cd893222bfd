package broker_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/recourse-dev/recourse/broker"
	"github.com/recourse-dev/recourse/chain"
	"github.com/recourse-dev/recourse/codecs/openai/responses"
	"github.com/recourse-dev/recourse/internal/rigtest"
	"github.com/recourse-dev/recourse/internal/scripted"
	"github.com/recourse-dev/recourse/layer"
	"github.com/recourse-dev/recourse/layers/retry"
)

// R19.10: a background stream that stalls after output is resumed from its
// cursor, and the broker's notice says so; the answer arrives once, with no
// continuation.
func TestR19_10_BrokerNoticeSaysResumingFromTheCursor(t *testing.T) {
	const id = "resp_broker"
	evs := scripted.ResponsesEvents(id, "The answer ", "is ", "42.")
	r := rigtest.NewWith(t, responses.New(responses.Background()), retry.Policy{}, []chain.Option{stallAtCut(layer.StallIdle)},
		scripted.ResponsesBackground(id, evs...).CutEvents(6), scripted.ResponsesResume(id))
	ns := &notices{}
	b := broker.New(r.Client, broker.WithModel(model), broker.WithNotices(ns.add),
		broker.WithPolicy(wire(r, retry.Policy{MaxAttempts: 3, BaseDelay: new(time.Second), Jitter: jitter(1)})))
	h := user("q")
	text, err := drain(b.GenerateStream(context.Background(), &h))
	require.NoError(t, err)
	assert.Equal(t, "The answer is 42.", text, "every byte once")
	require.Len(t, ns.retries(), 1)
	n := ns.retries()[0]
	require.NotNil(t, n.Resume)
	assert.Equal(t, int64(5), n.Resume.Cursor)
	assert.Equal(t, "resuming LLM stream after idle timeout (from event 5)", broker.FormatRetry(n))
	for _, x := range ns.list() {
		assert.NotEqual(t, broker.EventContinuation, x.Event, "a resume is no continuation")
	}
	raw, err := json.Marshal(n)
	require.NoError(t, err)
	assert.Contains(t, string(raw), `"resume":{"cursor":5}`)
	assert.NotContains(t, string(raw), id, "the notice holds no provider identifier")
	var back broker.RetryNotice
	require.NoError(t, json.Unmarshal(raw, &back))
	assert.Equal(t, n, back)
	assert.Equal(t, 2, r.Server.Count())
}

// R19.10: a resume before any sequence number was delivered reads from the
// start.
func TestR19_10_FormatRetryResumingFromTheStart(t *testing.T) {
	n := broker.RetryNotice{Error: "transport error", Resume: &layer.Resume{Cursor: -1}}
	assert.Equal(t, "resuming LLM stream after transport error (from the start)", broker.FormatRetry(n))
}
