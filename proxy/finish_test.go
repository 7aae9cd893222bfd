package proxy

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/recourse-dev/recourse/recoursetest"
)

// R13.3, R19.4: a stream that ends on the provider's own limit reaches the
// proxy's client as the provider sent it — the length chunk, the usage
// chunk and [DONE]; the events up to response.incomplete; Ollama's
// done_reason "length" line — with a clean end: no in-band error, no cut
// connection, one upstream request.
func TestR13_3_ProxyDocumentedFinishPassesThrough(t *testing.T) {
	for _, tc := range []struct {
		name, provider, path, body string
		frames                     []string
		ndjson                     bool
	}{
		{"chat_length", "openai", "/v1/chat/completions", streamBody, recoursetest.OpenAIStreamFinish("length", "Hel", "lo"), false},
		{"responses_incomplete", "openai", "/v1/responses", `{"model":"gpt-4.1-mini","input":"hello","stream":true,"max_output_tokens":2}`,
			recoursetest.ResponsesIncompleteEvents("resp_i", "max_output_tokens", "Hel", "lo"), false},
		{"ollama_length", "ollama", "/api/chat", `{"model":"llama3.2","messages":[{"role":"user","content":"hi"}]}`,
			[]string{`{"model":"llama3.2","created_at":"2024-01-01T00:00:00Z","message":{"role":"assistant","content":"Hel"},"done":false}` + "\n",
				`{"model":"llama3.2","created_at":"2024-01-01T00:00:00Z","message":{"role":"assistant","content":""},"done":true,"done_reason":"length","eval_count":2}` + "\n"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			step := recoursetest.SSE(tc.frames...)
			if tc.ndjson {
				step = recoursetest.NDJSON(tc.frames...)
			}
			r := newRig(t, tc.provider, nil, step, step)
			got := r.post(t, tc.path, tc.body)
			require.NoError(t, got.err, "a clean end")
			assert.Equal(t, 200, got.status)
			assert.Equal(t, strings.Join(tc.frames, ""), got.body, "as the provider sent it")
			assert.Equal(t, 1, r.up.Count(), "never retried")
			assert.NotContains(t, r.logs.String(), `"outcome":"interrupted"`)
		})
	}
}
