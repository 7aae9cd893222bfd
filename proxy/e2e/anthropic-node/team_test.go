//go:build proxye2e

package anthropicnode

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/recourse-dev/recourse/proxy/e2e/internal/nodetest"
	"github.com/recourse-dev/recourse/recoursetest"
)

// heldKey is the Claude key the team's proxy holds; the clients' own
// apiKey ('sk-ant-e2e-test' in client.mjs) is their proxy key.
const heldKey = "sk-ant-HELD-e2e-CANARY"

// R21.15, R21.12: Claude's clients at their defaults, through a team's
// proxy of two routes (OpenAI's and Claude's) that holds Claude's key and
// admits clients by proxy key: each client sends its API key as it always
// does (x-api-key), which the proxy takes as its proxy key; the 529 is
// recovered, the upstream sees only the held key, and a client with
// another key gets a 401 in Claude's shape and reaches nothing.
func TestR21_15_NodeClientsThroughATeamsRouter(t *testing.T) {
	for _, c := range []struct {
		mode   string
		admits bool
	}{{"sdk-create", true}, {"sdk-stream", true}, {"ai-generate", true}, {"langchain", true}, {"sdk-create", false}} {
		name := c.mode
		if !c.admits {
			name += "-unknown-key"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			answer := recoursetest.JSON(200, recoursetest.AnthropicMessage("Hello, world!"))
			if c.mode == "sdk-stream" {
				answer = recoursetest.AnthropicStream(events()...)
			}
			clientKey := "sk-ant-e2e-test"
			if !c.admits {
				clientKey = "another-proxy-key"
			}
			team := nodetest.NewTeam(t, "anthropic", clientKey, heldKey, recoursetest.AnthropicOverloaded(), answer)
			var res result
			nodeRun(t, team.URL, c.mode, &res)
			if !c.admits {
				require.NotNil(t, res.Error)
				require.NotNil(t, res.Error.Status)
				assert.Equal(t, http.StatusUnauthorized, *res.Error.Status)
				assert.Zero(t, team.Up.Count())
				return
			}
			require.Nil(t, res.Error, "%+v", res.Error)
			assert.Equal(t, "Hello, world!", res.Text)
			require.Equal(t, 2, team.Up.Count())
			team.CheckHeld(t, "X-Api-Key", "sk-ant-e2e-test")
		})
	}
}
