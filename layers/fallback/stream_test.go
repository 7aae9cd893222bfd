package fallback_test

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/recourse-dev/recourse/codecs/openai"
	"github.com/recourse-dev/recourse/event"
	"github.com/recourse-dev/recourse/internal/rigtest"
	"github.com/recourse-dev/recourse/layer"
	"github.com/recourse-dev/recourse/layers/fallback"
	"github.com/recourse-dev/recourse/layers/retry"
	"github.com/recourse-dev/recourse/recoursetest"
)

// cutStream is an OpenAI stream whose connection drops after its first
// content (output delivered) or, without output, after one byte of its
// first event.
func cutStream(output bool) recoursetest.Step {
	evs := recoursetest.OpenAIStream("partial ", "answer")
	s := recoursetest.SSE(evs...)
	s.CutAfter = 1
	if output {
		s.CutAfter = len(evs[0]) + len(evs[1]) + 4
	}
	return s
}

// A fallback target whose stream opened and then failed — after its output
// or before it, however the last target failed — ends the call with an
// error that keeps every target's outcome and history (R20.7): in the
// call's Result, in the body's read error and in the in-band error frame
// the SDK reads.
func TestR20_7_FallbackStreamThatFailsKeepsEveryTarget(t *testing.T) {
	for name, steps := range map[string][]recoursetest.Step{
		"after output":  {unavailable(), unavailable(), cutStream(true)},
		"before output": {unavailable(), unavailable(), cutStream(false), cutStream(false)},
	} {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t, openai.New(), retry.Policy{MaxAttempts: 2},
				fallback.Config{Targets: []fallback.Target{{Model: "b"}}}, steps...)
			resp, lc, err := f.post(t, "/v1/chat/completions", chatBody("a", true))
			require.NoError(t, err)
			require.Equal(t, 200, resp.StatusCode, "the fallback target's stream opened")
			body, rerr := readAll(resp)
			require.Error(t, rerr)
			assert.Equal(t, len(steps), f.Server.Count())
			var re *layer.RecoveryError
			require.True(t, errors.As(rerr, &re), "%T", rerr)
			e := lc.Result.Err
			require.NotNil(t, e)
			for _, x := range []*layer.RecoveryError{e, re} {
				require.Len(t, x.Targets, 2)
				assert.Equal(t, "a", x.Targets[0].Target)
				assert.Equal(t, event.OutcomeExhausted, x.Targets[0].Outcome)
				assert.Len(t, x.Targets[0].History, 2)
				assert.Equal(t, "b", x.Targets[1].Target)
				assert.Equal(t, x.Outcome, x.Targets[1].Outcome)
				assert.Equal(t, x.History, x.Targets[1].History, "the error's own history is the last target's")
			}
			assert.Contains(t, e.Error(), "2 fallback targets tried: a (exhausted) → b ("+string(e.Outcome)+")")
			assert.Contains(t, body, "2 fallback targets tried", "the in-band error frame carries the whole walk")
			assert.NotContains(t, e.Error(), rigtest.Key)
			assert.NotContains(t, e.Error(), rigtest.Prompt)
		})
	}
}
