package proxy

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/recourse-dev/recourse/recoursetest"
)

const geminiBody = `{"contents":[{"role":"user","parts":[{"text":"hello"}]}]}`

// R23.1: a Gemini proxy recovers both endpoints for every model path, under
// /v1beta and /v1, and reads the 429's wait from its body (R23.2); every
// other request is forwarded once.
func TestR23_1_GeminiProxyRecoversEveryModelPath(t *testing.T) {
	busy := recoursetest.JSON(503, recoursetest.GeminiError(503, "UNAVAILABLE", "busy"))
	r := newRig(t, "gemini", nil,
		busy, recoursetest.JSON(200, recoursetest.GeminiChat("unary")),
		recoursetest.GeminiRateLimit("3s", "GenerateRequestsPerMinutePerProjectPerModel-FreeTier"),
		recoursetest.SSE(recoursetest.GeminiStream("str", "eam")...),
		recoursetest.JSON(503, recoursetest.GeminiError(503, "UNAVAILABLE", "listing")),
	)
	res := r.post(t, "/v1beta/models/gemini-2.5-flash:generateContent", geminiBody, "x-goog-api-key", "k")
	require.Equal(t, http.StatusOK, res.status)
	assert.Contains(t, res.body, `"unary"`)

	res = r.post(t, "/v1/models/gemini-2.5-pro:streamGenerateContent?alt=sse", geminiBody)
	require.Equal(t, http.StatusOK, res.status)
	require.NoError(t, res.err)
	assert.Equal(t, strings.Join(recoursetest.GeminiStream("str", "eam"), ""), res.body, "the stream byte for byte, no comment line")
	assert.Contains(t, r.sleeps.all(), 3*time.Second, "the wait the 429's body named")

	res = r.do(t, http.MethodGet, "/v1beta/models", "")
	assert.Equal(t, 503, res.status, "a listing is forwarded once, never recovered")

	reqs := r.up.Requests()
	require.Len(t, reqs, 5)
	var paths []string
	for _, q := range reqs {
		paths = append(paths, q.Method+" "+q.Path)
	}
	assert.Equal(t, []string{
		"POST /v1beta/models/gemini-2.5-flash:generateContent", "POST /v1beta/models/gemini-2.5-flash:generateContent",
		"POST /v1/models/gemini-2.5-pro:streamGenerateContent", "POST /v1/models/gemini-2.5-pro:streamGenerateContent",
		"GET /v1beta/models",
	}, paths)
}
