//go:build proxye2e

package gemininode

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/recourse-dev/recourse/proxy/e2e/internal/nodetest"
	"github.com/recourse-dev/recourse/recoursetest"
)

// heldKey is the Gemini key the team's proxy holds; the clients' own
// apiKey ('e2e-test-key' in client.mjs) is their proxy key.
const heldKey = "AIza-HELD-e2e-CANARY"

// R21.15, R21.12: Gemini's clients at their defaults, through a team's
// proxy of two routes (OpenAI's and Gemini's) that holds Gemini's key and
// admits clients by proxy key: each client sends its API key as it always
// does (x-goog-api-key), which the proxy takes as its proxy key; the 503
// is recovered, the upstream sees only the held key, and a client with
// another key gets a 401 and reaches nothing.
func TestR21_15_NodeClientsThroughATeamsRouter(t *testing.T) {
	for _, c := range []struct {
		mode   string
		admits bool
	}{{"genai-generate", true}, {"genai-stream", true}, {"ai-generate", true}, {"genai-generate", false}} {
		name := c.mode
		if !c.admits {
			name += "-unknown-key"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			answer := recoursetest.JSON(200, recoursetest.GeminiChat("Hello, world!"))
			if c.mode == "genai-stream" {
				answer = recoursetest.SSE(recoursetest.GeminiStream("Hello", ", world", "!")...)
			}
			clientKey := "e2e-test-key"
			if !c.admits {
				clientKey = "another-proxy-key"
			}
			team := nodetest.NewTeam(t, "gemini", clientKey, heldKey, overloaded, answer)
			var res result
			nodeRun(t, team.URL, c.mode, &res)
			if !c.admits {
				require.NotNil(t, res.Error)
				require.NotNil(t, res.Error.Status, "%+v", res.Error)
				assert.Equal(t, http.StatusUnauthorized, *res.Error.Status)
				assert.Zero(t, team.Up.Count())
				return
			}
			require.Nil(t, res.Error, "%+v", res.Error)
			assert.Equal(t, "Hello, world!", res.Text)
			require.Equal(t, 2, team.Up.Count())
			team.CheckHeld(t, "X-Goog-Api-Key", "e2e-test-key")
		})
	}
}
