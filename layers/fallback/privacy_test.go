package fallback_test

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/recourse-dev/recourse/codec"
	"github.com/recourse-dev/recourse/codecs/openai"
	"github.com/recourse-dev/recourse/internal/rigtest"
	"github.com/recourse-dev/recourse/layer"
	"github.com/recourse-dev/recourse/layers/fallback"
	"github.com/recourse-dev/recourse/layers/retry"
	"github.com/recourse-dev/recourse/recoursetest"
)

// The privacy canary through a fallback: a hostile provider echoes the
// caller's key, the prompt and the target's credential in every failure;
// no event, admission request or error text of the walk holds any of them.
func TestR20_7_PrivacyCanaryThroughTheFallback(t *testing.T) {
	echo := "bad key " + rigtest.Key + " and " + targetKey + " for " + rigtest.Prompt
	hostile := recoursetest.JSON(503, recoursetest.OpenAIError("server_error", "x-"+targetKey, echo),
		"X-Request-Id", targetKey, "Retry-After", rigtest.Key)
	var asked []layer.AdmissionRequest
	f := newFixture(t, openai.New(), retry.Policy{MaxAttempts: 2},
		fallback.Config{
			Rules: fallback.Rules{Admit: func(_ context.Context, r layer.AdmissionRequest) (layer.Decision, error) {
				asked = append(asked, r)
				return layer.Allow, nil
			}},
			Targets: []fallback.Target{{Model: "b", Facts: &codec.Facts{LocalInference: true},
				Credential: func(_ context.Context, h http.Header) error {
					h.Set("Authorization", "Bearer "+targetKey)
					return nil
				}}, {Model: "c"}},
		},
		hostile, hostile, hostile, hostile, hostile, hostile)
	resp, lc, err := f.post(t, "/v1/chat/completions", chatBody("a", false))
	require.NoError(t, err)
	readBody(t, resp)
	require.NotNil(t, lc.Result.Err)
	require.Len(t, lc.Result.Err.Targets, 3)
	require.Len(t, asked, 1, "the local target b was asked about before c")
	var outputs []string
	for _, ev := range f.rec.Events() {
		js, err := json.Marshal(ev)
		require.NoError(t, err)
		outputs = append(outputs, string(js))
	}
	js, err := json.Marshal(lc.Result.Err)
	require.NoError(t, err)
	ask, err := json.Marshal(asked[0].Failure)
	require.NoError(t, err)
	outputs = append(outputs, string(js), lc.Result.Err.Error(), string(ask))
	for _, s := range outputs {
		for _, canary := range []string{rigtest.Key, rigtest.Prompt, targetKey} {
			assert.NotContains(t, s, canary)
		}
	}
}
