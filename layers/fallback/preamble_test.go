package fallback_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/recourse-dev/recourse/codecs/openai"
	"github.com/recourse-dev/recourse/layers/fallback"
	"github.com/recourse-dev/recourse/layers/retry"
	"github.com/recourse-dev/recourse/recoursetest"
)

// R13.9 with fallback targets: a drop-in stream whose first attempt was
// cut after its role chunk shows the caller one role chunk, whether the
// engine resent it to the same target or the body went on to the next
// target (R20.14): the cut attempt's preamble was held and dropped.
func TestR13_9_FallbackStreamShowsOnePreamble(t *testing.T) {
	b := recoursetest.OpenAIStream("from ", "b")
	first := strings.Replace(b[0], recoursetest.OpenAIID, "chatcmpl-first", 1)
	for name, tc := range map[string]struct {
		attempts int
		models   []string
	}{
		"resent to the same target": {2, []string{"a", "a"}},
		"next target":               {1, []string{"a", "b"}},
	} {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t, openai.New(), retry.Policy{MaxAttempts: tc.attempts},
				fallback.Config{Targets: []fallback.Target{{Model: "b"}}},
				recoursetest.SSE(first).CutEvents(1), recoursetest.SSE(b...))
			resp, lc, err := f.post(t, "/v1/chat/completions", chatBody("a", true))
			require.NoError(t, err)
			require.Equal(t, 200, resp.StatusCode)
			body, rerr := readAll(resp)
			require.NoError(t, rerr)
			assert.Equal(t, strings.Join(b, ""), body, "one role chunk, the answering attempt's")
			assert.Nil(t, lc.Result.Err)
			assert.Equal(t, tc.models, models(t, f.Server))
		})
	}
}
