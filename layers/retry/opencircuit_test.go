package retry_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/recourse-dev/recourse/codecs/openai"
	"github.com/recourse-dev/recourse/event"
	"github.com/recourse-dev/recourse/internal/rigtest"
	"github.com/recourse-dev/recourse/layer"
	"github.com/recourse-dev/recourse/layers/retry"
	"github.com/recourse-dev/recourse/recoursetest"
)

// horizonGate is a resend gate whose shared cooldown horizon is fixed.
type horizonGate struct{ at time.Time }

func (g horizonGate) Bind(*url.URL, string, http.Header) layer.UpstreamGate { return g }
func (horizonGate) Deposit()                                                {}
func (g horizonGate) Horizon() time.Time                                    { return g.at }
func (horizonGate) Peek(context.Context) layer.GateVerdict                  { return layer.GateVerdict{} }
func (horizonGate) Reserve(context.Context) (layer.Reservation, layer.GateVerdict) {
	return nil, layer.GateVerdict{}
}
func (horizonGate) Cooldown(context.Context, time.Time) bool { return false }

// With SkipOpenCircuit, a first attempt whose upstream's shared cooldown
// lies beyond the delay ceiling is not sent: delay_ceiling, wire attempt 0,
// acceptance no, no history. Without it the attempt goes at once (R18.4).
func TestR20_5_EngineSkipsAnOpenCircuit(t *testing.T) {
	for _, skip := range []bool{true, false} {
		r := rigtest.New(t, openai.New(), retry.Policy{MaxAttempts: 3, DelayCeiling: new(time.Second)},
			recoursetest.JSON(200, recoursetest.OpenAIChat("ok")))
		lc := &layer.Call{Gate: horizonGate{at: rigtest.Epoch.Add(time.Minute)}, SkipOpenCircuit: skip}
		req, err := http.NewRequestWithContext(layer.WithCall(t.Context(), lc), http.MethodPost, r.Server.URL+"/v1/chat/completions",
			strings.NewReader(`{"model":"a","messages":[{"role":"user","content":"hi"}]}`))
		require.NoError(t, err)
		resp, err := r.HTTP.Do(req)
		if !skip {
			require.NoError(t, err)
			resp.Body.Close()
			assert.Equal(t, 1, r.Server.Count())
			continue
		}
		require.Error(t, err)
		assert.Equal(t, 0, r.Server.Count(), "nothing sent")
		e := lc.Result.Err
		require.NotNil(t, e)
		assert.Equal(t, event.OutcomeDelayCeiling, e.Outcome)
		assert.Equal(t, 0, e.Failure.WireAttempt)
		assert.Equal(t, event.AcceptanceNo, e.Failure.Acceptance)
		assert.Empty(t, e.History)
		assert.Equal(t, []string{"exhausted"}, r.Rec.Types())
		assert.Contains(t, e.Error(), "shared cooldown lasts beyond the delay ceiling")
	}
}
