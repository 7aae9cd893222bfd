package gemini_test

import (
	"net/url"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/recourse-dev/recourse/codec"
	"github.com/recourse-dev/recourse/codecs/gemini"
)

// R23.1: the model and the operation are read from the path, under v1beta
// or v1 and behind any base path; the SDKs' "models/" prefix is named once.
func TestR23_1_ModelAndOperationComeFromThePath(t *testing.T) {
	c := gemini.New()
	for raw, want := range map[string]codec.RequestInfo{
		"https://h/v1beta/models/gemini-2.5-flash:generateContent":                  {Model: "gemini-2.5-flash", Operation: codec.Ordinary},
		"https://h/v1/models/gemini-2.5-pro:streamGenerateContent?alt=sse&key=k":    {Model: "gemini-2.5-pro", Operation: codec.Streaming},
		"https://h/proxy/v1beta/models/gemini-2.0-flash:streamGenerateContent":      {Model: "gemini-2.0-flash", Operation: codec.Ordinary},
		"https://h/v1beta/models/gemini-2.5-flash:generateContent?key=AIzaSyCanary": {Model: "gemini-2.5-flash", Operation: codec.Ordinary},
	} {
		u, err := url.Parse(raw)
		require.NoError(t, err)
		info, err := codec.DescribeRequest(c, u, []byte(`{"contents":[]}`))
		require.NoError(t, err, raw)
		assert.Equal(t, want, info, raw)
	}
	assert.Equal(t, "/v1beta/models/gemini-2.5-flash:generateContent", c.RoutePath("models/gemini-2.5-flash", codec.Ordinary))
	assert.Equal(t, "/v1/models/g:streamGenerateContent?alt=sse", gemini.New(gemini.WithAPIVersion("v1")).RoutePath("g", codec.Streaming))
	for _, bad := range []string{"/v1beta/models/:generateContent", "/v1beta/models/m:countTokens", "/v1beta/tunedModels/x", "/v1/chat/completions", "/v1beta/models/a/b:generateContent"} {
		_, err := c.DescribeURL(&url.URL{Path: bad}, []byte(`{}`))
		assert.Error(t, err, bad)
	}
}

// R23.1: a fallback to another model rewrites the path alone: the method,
// the query and the host stay, and the argument is not changed.
func TestR23_1_WithModelURLRewritesThePathAlone(t *testing.T) {
	u, _ := url.Parse("https://h/v1beta/models/gemini-2.5-pro:streamGenerateContent?alt=sse")
	nu, err := gemini.New().WithModelURL(u, "gemini-2.5-flash")
	require.NoError(t, err)
	assert.Equal(t, "https://h/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse", nu.String())
	assert.Equal(t, "/v1beta/models/gemini-2.5-pro:streamGenerateContent", u.Path)
	_, err = gemini.New().WithModelURL(u, "a/b")
	assert.Error(t, err)
}
