package proxy

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/recourse-dev/recourse/layers/fallback"
	"github.com/recourse-dev/recourse/recoursetest"
)

const proxyTargetKey = "sk-PROXYTARGETCANARY-55e1"

// The proxy falls back to another model and then to another upstream of
// the same wire; the client gets the answer of the target that answered,
// and the other upstream gets its own key, never the client's.
func TestR20_10_ProxyFallsBackThroughItsTargets(t *testing.T) {
	other := recoursetest.NewServer(recoursetest.JSON(200, recoursetest.OpenAIChat("from the other upstream")))
	t.Cleanup(other.Close)
	unavailable := recoursetest.JSON(503, recoursetest.OpenAIError("server_error", "server_error", "overloaded"))
	r := newRig(t, "openai", func(c *Config) {
		c.Policy.MaxAttempts = 2
		c.Fallback = []fallback.Target{{Model: "gpt-4o"}, {Upstream: other.URL, Credential: func(_ context.Context, h http.Header) error {
			h.Set("Authorization", "Bearer "+proxyTargetKey)
			return nil
		}}}
	}, unavailable, unavailable, unavailable, unavailable)
	res := r.post(t, "/v1/chat/completions", chatBody, "Authorization", "Bearer sk-client")
	require.NoError(t, res.err)
	assert.Equal(t, 200, res.status)
	assert.Contains(t, res.body, "from the other upstream")
	var models []string
	for _, q := range r.up.Requests() {
		var m struct{ Model string }
		require.NoError(t, json.Unmarshal(q.Body, &m))
		models = append(models, m.Model)
	}
	assert.Equal(t, []string{"gpt-4o-mini", "gpt-4o-mini", "gpt-4o", "gpt-4o"}, models)
	require.Equal(t, 1, other.Count())
	assert.Equal(t, "Bearer "+proxyTargetKey, other.Requests()[0].Header.Get("Authorization"))
	r.logged(t, `"kind":"completion"`)
	logs := r.logs.String()
	assert.Contains(t, logs, `"fallback":{"to":"gpt-4o","index":1,"from":"gpt-4o-mini","outcome":"exhausted","attempts":2}`)
	assert.NotContains(t, logs, proxyTargetKey)
	assert.NotContains(t, logs, "sk-client")
}

// A fallback upstream is checked like the proxy's own.
func TestR20_10_ProxyRefusesABadFallbackUpstream(t *testing.T) {
	_, err := New(Config{Provider: "openai", Upstream: "https://api.openai.com", Fallback: []fallback.Target{{Upstream: "https://openrouter.ai/api/v1"}}})
	var ce *ConfigError
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, "Fallback[0].Upstream", ce.Field)
}

// On /v1/responses the proxy falls back too, its fallback layer swapping the
// model through the Responses codec, and a read of a stored response never
// leaves its upstream (R20.2).
func TestR20_10_ProxyFallsBackOnTheResponsesAPI(t *testing.T) {
	unavailable := recoursetest.JSON(503, recoursetest.OpenAIError("server_error", "server_error", "overloaded"))
	r := newRig(t, "openai", func(c *Config) {
		c.Policy.MaxAttempts = 2
		c.Fallback = []fallback.Target{{Model: "gpt-4o"}}
	}, unavailable, unavailable, recoursetest.JSON(200, recoursetest.ResponsesJSON("resp_1", "from gpt-4o")),
		unavailable, unavailable)
	body := `{"model":"gpt-4o-mini","input":"hi"}`
	res := r.post(t, "/v1/responses", body)
	require.NoError(t, res.err)
	assert.Equal(t, 200, res.status)
	assert.Contains(t, res.body, "from gpt-4o")
	var models []string
	for _, q := range r.up.Requests() {
		var m struct{ Model string }
		require.NoError(t, json.Unmarshal(q.Body, &m))
		models = append(models, m.Model)
	}
	assert.Equal(t, []string{"gpt-4o-mini", "gpt-4o-mini", "gpt-4o"}, models)
	assert.Equal(t, `{"model":"gpt-4o","input":"hi"}`, string(r.up.Requests()[2].Body), "only the model changed")

	got := r.do(t, http.MethodGet, "/v1/responses/resp_1", "")
	assert.Equal(t, 503, got.status, "the read's own final answer")
	assert.Equal(t, 5, r.up.Count(), "MaxAttempts reads, nothing sent to another target")
}

// Through the proxy, of two 400s the one whose provider code a rule names
// is answered by the fallback target, and the one a never rule names
// reaches the client unrouted as the provider's own error.
func TestR20_10_ProxyFallsBackByProviderCode(t *testing.T) {
	rules := fallback.Rules{Codes: []string{"context_length_exceeded"}, NeverCodes: []string{"content_policy_violation"}}
	setup := func(c *Config) {
		c.Policy.MaxAttempts = 3
		c.Fallback = []fallback.Target{{Model: "gpt-4o"}}
		c.FallbackStatuses = []int{400}
		c.FallbackRules = rules
	}
	long := recoursetest.JSON(400, recoursetest.OpenAIError("invalid_request_error", "context_length_exceeded", "too long"))
	r := newRig(t, "openai", setup, long, recoursetest.JSON(200, recoursetest.OpenAIChat("from gpt-4o")))
	res := r.post(t, "/v1/chat/completions", chatBody)
	require.NoError(t, res.err)
	assert.Equal(t, 200, res.status)
	assert.Contains(t, res.body, "from gpt-4o")
	assert.Equal(t, 2, r.up.Count())

	refused := recoursetest.OpenAIError("invalid_request_error", "content_policy_violation", "refused")
	r = newRig(t, "openai", setup, recoursetest.JSON(400, refused), recoursetest.JSON(200, recoursetest.OpenAIChat("must not be asked")))
	res = r.post(t, "/v1/chat/completions", chatBody)
	require.NoError(t, res.err)
	assert.Equal(t, 400, res.status)
	assert.JSONEq(t, refused, res.body, "the provider's own error")
	assert.Equal(t, 1, r.up.Count(), "no fallback target was asked")
	assert.NotContains(t, r.logs.String(), `"type":"fallback"`)
}
