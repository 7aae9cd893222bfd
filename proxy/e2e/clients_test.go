//go:build proxye2e

package e2e

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/recourse-dev/recourse/proxy"
	"github.com/recourse-dev/recourse/proxy/e2e/internal/nodetest"
	"github.com/recourse-dev/recourse/recoursetest"
)

// jsResult is what ai-sdk.mjs and langchain.mjs printed.
type jsResult struct {
	Content string `json:"content"`
	Node    string `json:"node"`
	Error   *struct {
		Name     string `json:"name"`
		Status   *int   `json:"status"`
		Attempts int    `json:"attempts"`
		Message  string `json:"message"`
	} `json:"error"`
}

// js runs one call of a JavaScript client script against the proxy, with
// the client's own default retries and their real waits.
func (r *rig) js(t *testing.T, script string) jsResult {
	t.Helper()
	start := time.Now()
	var res jsResult
	nodetest.Run(t, nodeDir, r.url, 5*time.Minute, nil, &res, script)
	t.Logf("%s on node %s: %d requests to the proxy in %v", script, res.Node, r.posts.Load(), time.Since(start).Round(100*time.Millisecond))
	return res
}

// The three failures the JavaScript clients used to multiply: an exhausted
// call, a 200 whose body is an error object, a refused redirect. Each
// reaches the upstream -max-attempts times (3), once, once.
type failureCase struct {
	name     string
	steps    func(target string) []recoursetest.Step
	upstream int
	status   int
}

var failureCases = []failureCase{
	{"exhausted", func(string) []recoursetest.Step { return []recoursetest.Step{overloaded, overloaded, overloaded} }, 3, 503},
	{"error body", func(string) []recoursetest.Step {
		// A code the clients do not classify themselves: LangChain.js reads
		// context_length_exceeded in the proxy's safe message as a context
		// overflow and never retries it, which this case is not about.
		return []recoursetest.Step{recoursetest.JSON(200, recoursetest.OpenAIError("server_error", "server_error", "the server had an error"))}
	}, 1, 502},
	{"redirect", func(target string) []recoursetest.Step {
		return []recoursetest.Step{recoursetest.Redirect(307, target+"/v1/chat/completions")}
	}, 1, 502},
}

// clientCase is a JavaScript client at its defaults: its script, the
// requests it sends for one failed call (its own retries included) and
// the error class it ends with.
type clientCase struct {
	script   string
	requests int32
	errName  func(status int) string
}

// TestR21_3_JavaScriptClientsAtTheirDefaults: the Vercel AI SDK (3
// requests: maxRetries 2, after 2 s and 4 s) and LangChain.js (7 requests:
// 6 retries of p-retry, about one to two minutes) resend every final
// failure on their own; the proxy answers the repeats from memory, so the
// upstream sees exactly what the proxy itself decided, and each client
// still ends with its own error carrying the final status. The clients'
// waits are real time; the six cases run in parallel.
func TestR21_3_JavaScriptClientsAtTheirDefaults(t *testing.T) {
	clients := map[string]clientCase{
		"ai-sdk": {"ai-sdk.mjs", 3, func(int) string { return "RetryError" }},
		"langchain": {"langchain.mjs", 7, func(status int) string {
			if status == 503 || status == 502 {
				return "InternalServerError" // the OpenAI SDK's class for a 5xx, which LangChain throws on
			}
			return ""
		}},
	}
	for cname, c := range clients {
		for _, fc := range failureCases {
			t.Run(cname+"/"+fc.name, func(t *testing.T) {
				t.Parallel()
				target := recoursetest.NewTarget()
				defer target.Close()
				r := newRig(t, "openai", func(cfg *proxy.Config) { cfg.Policy.MaxAttempts = 3 }, fc.steps(target.URL)...)
				res := r.js(t, c.script)
				require.NotNil(t, res.Error, "the call failed")
				assert.Equal(t, c.errName(fc.status), res.Error.Name, res.Error.Message)
				require.NotNil(t, res.Error.Status, res.Error.Message)
				assert.Equal(t, fc.status, *res.Error.Status, "the client's error carries the final status")
				if cname == "ai-sdk" {
					assert.Equal(t, 3, res.Error.Attempts, "the SDK made its default three attempts")
				}
				assert.Equal(t, c.requests, r.posts.Load(), "the client's default retries all fired")
				assert.Equal(t, fc.upstream, r.up.Count(), "the upstream saw only the proxy's own attempts")
				assert.Zero(t, target.Hits(), "no redirect target contacted")
			})
		}
	}
}
