package fallback_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/recourse-dev/recourse/codecs/gemini"
	"github.com/recourse-dev/recourse/internal/rigtest"
	"github.com/recourse-dev/recourse/layers/fallback"
	"github.com/recourse-dev/recourse/layers/retry"
	"github.com/recourse-dev/recourse/recoursetest"
)

const geminiBody = `{"contents":[{"role":"user","parts":[{"text":"hi"}]}],"safetySettings":[{"category":"HARM_CATEGORY_HARASSMENT","threshold":"BLOCK_NONE"}]}`

// R23.1: a drop-in Gemini call falls back to another Gemini model by its
// path: the method and the query stay, the body is sent byte for byte, and
// the key in the query follows to the same upstream only.
func TestR23_1_DropInFallbackToAnotherGeminiModelRewritesThePath(t *testing.T) {
	overloaded := recoursetest.JSON(503, recoursetest.GeminiError(503, "UNAVAILABLE", "The model is overloaded."))
	other := recoursetest.NewServer(recoursetest.SSE(recoursetest.GeminiStream("from the other upstream")...))
	t.Cleanup(other.Close)
	f := newFixture(t, gemini.New(), retry.Policy{MaxAttempts: 2},
		fallback.Config{Targets: []fallback.Target{{Model: "gemini-2.5-flash"}, {Upstream: other.URL, Model: "gemini-2.0-flash"}}},
		overloaded, overloaded, overloaded, overloaded)
	resp, _, err := f.post(t, "/v1beta/models/gemini-2.5-pro:streamGenerateContent?alt=sse&key="+rigtest.Key, geminiBody)
	require.NoError(t, err)
	assert.Contains(t, readBody(t, resp), "from the other upstream")
	reqs := f.Server.Requests()
	require.Len(t, reqs, 4)
	var paths []string
	for _, r := range reqs {
		paths = append(paths, r.Path)
		assert.Equal(t, geminiBody, string(r.Body), "every field passed through exactly")
		assert.Equal(t, "alt=sse&key="+rigtest.Key, r.RawQuery)
	}
	assert.Equal(t, []string{
		"/v1beta/models/gemini-2.5-pro:streamGenerateContent", "/v1beta/models/gemini-2.5-pro:streamGenerateContent",
		"/v1beta/models/gemini-2.5-flash:streamGenerateContent", "/v1beta/models/gemini-2.5-flash:streamGenerateContent",
	}, paths)
	require.Equal(t, 1, other.Count())
	got := other.Requests()[0]
	assert.Equal(t, "/v1beta/models/gemini-2.0-flash:streamGenerateContent", got.Path)
	assert.Equal(t, "alt=sse", got.RawQuery, "the key stays with its own upstream (R23.4)")
	safe, _ := json.Marshal(f.rec.Events())
	assert.NotContains(t, string(safe), rigtest.Key)
}
