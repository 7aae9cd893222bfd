package openai_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/recourse-dev/recourse/codecs/openai"
)

// R23.7: Gemini's OpenAI-compatible endpoint answers errors with a JSON
// array, [{"error":{…}}]; the OpenAI codec reads its first element: the
// string code, else the google.rpc status.
func TestR23_7_ArrayShapedErrorBodyIsRead(t *testing.T) {
	c := openai.New()
	assert.Equal(t, "RESOURCE_EXHAUSTED", c.ErrorCode([]byte(` [{"error":{"code":429,"message":"Resource has been exhausted (e.g. check quota).","status":"RESOURCE_EXHAUSTED"}}]`)))
	assert.Equal(t, "rate_limit_exceeded", c.ErrorCode([]byte(`[{"error":{"code":"rate_limit_exceeded","message":"m"}}]`)))
	assert.Equal(t, "rate_limit_exceeded", c.ErrorCode([]byte(`{"error":{"code":"rate_limit_exceeded","message":"m"}}`)), "the object form is unchanged")
	for _, none := range []string{`[]`, `[1]`, `[{"x":1}]`, `[{"error":"text"}]`, `[`, `[{"error":{"status":5}}]`} {
		assert.Equal(t, "", c.ErrorCode([]byte(none)), none)
	}
}
