package proxy

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/recourse-dev/recourse/layers/quota"
	"github.com/recourse-dev/recourse/recoursetest"
)

// The proxy's log shows the breaker at each change, not per request: two
// calls whose resends the quota refuses write one breaker line, naming
// the upstream and that its resends are refused (R20.13).
func TestR20_13_ProxyLogsTheBreakerAtEachChange(t *testing.T) {
	unavailable := recoursetest.JSON(503, recoursetest.OpenAIError("server_error", "server_error", "overloaded"))
	r := newRig(t, "openai", func(c *Config) {
		c.Policy.MaxAttempts = 3
		c.Quota = privateQuota(t, quota.WithRatio(0), quota.WithFloor(0))
	}, unavailable, unavailable)
	for range 2 {
		res := r.post(t, "/v1/chat/completions", chatBody)
		require.NoError(t, res.err)
		assert.Equal(t, 503, res.status)
	}
	r.logged(t, `"msg":"request"`)
	logs := r.logs.String()
	host := strings.TrimPrefix(r.up.URL, "http://")
	assert.Equal(t, 1, strings.Count(logs, `"type":"breaker"`), logs)
	assert.Contains(t, logs, `"breaker":{"upstream":"`+host+`","refusing":true,"skipped":0,"failures":0}`)
	assert.Contains(t, logs, `"level":"WARN","msg":"recourse event","type":"breaker"`)
}
