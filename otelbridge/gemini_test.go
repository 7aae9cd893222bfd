package otelbridge_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/recourse-dev/recourse/codecs/gemini"
	"github.com/recourse-dev/recourse/internal/rigtest"
	"github.com/recourse-dev/recourse/layers/retry"
	"github.com/recourse-dev/recourse/recoursetest"
)

// R23.6: a Gemini call's spans name the well-known provider "gcp.gemini"
// and the model read from the path; the API key in the "key" query
// parameter reaches no span, no metric and no event, and url.full keeps
// the path without the query.
func TestR23_6_GeminiSpansNameTheModelFromThePathAndNoKey(t *testing.T) {
	f := newFixture(t, gemini.New(), retry.Policy{MaxAttempts: 2},
		nil,
		recoursetest.JSON(503, recoursetest.GeminiError(503, "UNAVAILABLE", "echo "+rigtest.Key)),
		recoursetest.JSON(200, recoursetest.GeminiChat("hi")),
	)
	path := "/v1beta/models/gemini-2.5-flash:generateContent"
	req, err := http.NewRequest(http.MethodPost, f.srv.URL+path+"?key="+rigtest.Key, strings.NewReader(`{"contents":[{"role":"user","parts":[{"text":"`+rigtest.Prompt+`"}]}]}`))
	require.NoError(t, err)
	resp, err := f.http.Do(req)
	require.NoError(t, err)
	_, _ = io.Copy(io.Discard, resp.Body)
	require.NoError(t, resp.Body.Close())

	logical, attempts := f.tree()
	a := attrs(logical.Attributes())
	assert.Equal(t, "gcp.gemini", a["gen_ai.provider.name"].AsString())
	assert.Equal(t, "gemini-2.5-flash", a["gen_ai.request.model"].AsString())
	assert.Equal(t, "chat gemini-2.5-flash", logical.Name())
	require.Len(t, attempts, 2)
	for _, s := range append(attempts, logical) {
		scan(t, s)
	}
	for _, s := range attempts {
		assert.Equal(t, f.srv.URL+path, attrs(s.Attributes())["url.full"].AsString())
	}
	for _, ev := range f.rec.Events() {
		b, err := json.Marshal(ev)
		require.NoError(t, err)
		for _, c := range canaries {
			assert.NotContains(t, string(b), c)
		}
	}
}
