//go:build proxye2e

package gemininode

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/recourse-dev/recourse/layers/retry"
	"github.com/recourse-dev/recourse/proxy"
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
			up := recoursetest.NewServer(overloaded, answer)
			t.Cleanup(up.Close)
			decoy := recoursetest.NewServer()
			t.Cleanup(decoy.Close)
			p := retry.Recommended()
			p.BaseDelay = new(time.Duration(0)) // nothing waits
			clientKey := "e2e-test-key"
			if !c.admits {
				clientKey = "another-proxy-key"
			}
			rt, err := proxy.NewRouter(proxy.RouterConfig{
				ClientKeys: []proxy.ClientKey{{Hash: proxy.HashKey(clientKey), Name: "team", Routes: []string{"gemini"}}},
				Routes: []proxy.Route{
					{Name: "openai", Config: proxy.Config{Provider: "openai", Upstream: decoy.URL, Policy: p}},
					{Name: "gemini", Config: proxy.Config{Provider: "gemini", Upstream: up.URL, Policy: p, UpstreamKey: heldKey}},
				},
			})
			require.NoError(t, err)
			srv := httptest.NewServer(rt)
			t.Cleanup(srv.Close)
			var res result
			nodeRun(t, srv.URL, c.mode, &res)
			assert.Zero(t, decoy.Count(), "nothing reached the other route")
			if !c.admits {
				require.NotNil(t, res.Error)
				require.NotNil(t, res.Error.Status, "%+v", res.Error)
				assert.Equal(t, http.StatusUnauthorized, *res.Error.Status)
				assert.Zero(t, up.Count())
				return
			}
			require.Nil(t, res.Error, "%+v", res.Error)
			assert.Equal(t, "Hello, world!", res.Text)
			require.Equal(t, 2, up.Count())
			for _, q := range up.Requests() {
				assert.Equal(t, heldKey, q.Header.Get("X-Goog-Api-Key"))
				assert.NotContains(t, q.RawQuery, "e2e-test-key")
				for name, vs := range q.Header {
					for _, v := range vs {
						assert.NotContains(t, v, "e2e-test-key", name)
					}
				}
			}
		})
	}
}
