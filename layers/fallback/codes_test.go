package fallback_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/recourse-dev/recourse/codecs/openai"
	"github.com/recourse-dev/recourse/event"
	"github.com/recourse-dev/recourse/layer"
	"github.com/recourse-dev/recourse/layers/fallback"
	"github.com/recourse-dev/recourse/layers/retry"
	"github.com/recourse-dev/recourse/recoursetest"
)

// codeRules fall back on a context too long for the model and never on a
// refused content, whatever the status: even with 400 among the statuses.
var codeRules = fallback.Rules{
	Statuses:   []int{400},
	Codes:      []string{"context_length_exceeded"},
	NeverCodes: []string{"content_policy_violation"},
}

func codedError(code string) recoursetest.Step {
	return recoursetest.JSON(400, recoursetest.OpenAIError("invalid_request_error", code, "refused"))
}

// Of two 400s, the one whose provider code a rule names falls back to the
// next target, and the one a never rule names reaches the caller unrouted,
// as the provider's own error: its status and body, one request sent.
func TestR20_2_FallbackByProviderCode(t *testing.T) {
	t.Run("context_length_exceeded falls back", func(t *testing.T) {
		f := newFixture(t, openai.New(), retry.Policy{MaxAttempts: 3},
			fallback.Config{Rules: fallback.Rules{Codes: codeRules.Codes, NeverCodes: codeRules.NeverCodes}, Targets: []fallback.Target{{Model: "long"}}},
			codedError("context_length_exceeded"), recoursetest.JSON(200, recoursetest.OpenAIChat("from the long model")))
		resp, lc, err := f.post(t, "/v1/chat/completions", chatBody("short", false))
		require.NoError(t, err)
		assert.Equal(t, 200, resp.StatusCode)
		assert.Contains(t, readBody(t, resp), "from the long model")
		assert.Nil(t, lc.Result.Err)
		assert.Equal(t, []string{"short", "long"}, models(t, f.Server))
		fb := fallbacks(f.rec, event.Fallback)
		require.Len(t, fb, 1)
		assert.Equal(t, event.OutcomeInterrupted, fb[0].Outcome)
	})
	t.Run("content_policy_violation reaches the caller", func(t *testing.T) {
		body := recoursetest.OpenAIError("invalid_request_error", "content_policy_violation", "refused")
		f := newFixture(t, openai.New(), retry.Policy{MaxAttempts: 3},
			fallback.Config{Rules: codeRules, Targets: []fallback.Target{{Model: "other"}}},
			recoursetest.JSON(400, body), recoursetest.JSON(200, recoursetest.OpenAIChat("must not be asked")))
		resp, lc, err := f.post(t, "/v1/chat/completions", chatBody("a", false))
		require.NoError(t, err)
		assert.Equal(t, 400, resp.StatusCode)
		assert.JSONEq(t, body, readBody(t, resp), "the provider's own error, byte for byte")
		assert.Equal(t, 1, f.Server.Count(), "no other target was asked")
		assert.Empty(t, fallbacks(f.rec, event.Fallback))
		require.NotNil(t, lc.Result.Err)
		assert.Equal(t, event.OutcomeInterrupted, lc.Result.Err.Outcome)
		assert.Empty(t, lc.Result.Err.Targets)
		assert.Equal(t, "content_policy_violation", lc.Result.Err.Failure.ProviderCode, "a code that carries no request content is safe to keep")
	})
	t.Run("a code outside the allow-list is matched from the evidence", func(t *testing.T) {
		f := newFixture(t, openai.New(), retry.Policy{MaxAttempts: 3},
			fallback.Config{Rules: fallback.Rules{Codes: []string{"model_busy_custom"}}, Targets: []fallback.Target{{Model: "b"}}},
			codedError("model_busy_custom"), recoursetest.JSON(200, recoursetest.OpenAIChat("from b")))
		resp, _, err := f.post(t, "/v1/chat/completions", chatBody("a", false))
		require.NoError(t, err)
		assert.Contains(t, readBody(t, resp), "from b")
		assert.Equal(t, []string{"a", "b"}, models(t, f.Server))
	})
}

// A never code wins over every other rule, also over the outcomes that
// fall back by default; codes that are empty, padded or named by both
// lists are refused.
func TestR20_2_NeverCodeWinsAndBadCodesAreRefused(t *testing.T) {
	e := layer.NewRecoveryError(event.OutcomeExhausted, event.Failure{Category: event.CategoryHTTP, HTTPStatus: 503, ProviderCode: "content_policy_violation"}, nil, nil)
	assert.False(t, codeRules.FallsBack(e))
	assert.True(t, fallback.Rules{}.FallsBack(e), "without the never rule, exhausted falls back")
	e = layer.NewRecoveryError(event.OutcomeInterrupted, event.Failure{Category: event.CategoryHTTP, HTTPStatus: 400, ProviderCode: "context_length_exceeded"}, nil, nil)
	assert.True(t, fallback.Rules{Codes: []string{"context_length_exceeded"}}.FallsBack(e))
	assert.False(t, fallback.Rules{}.FallsBack(e))
	for _, r := range []fallback.Rules{
		{Codes: []string{""}},
		{NeverCodes: []string{" x"}},
		{Codes: []string{"x"}, NeverCodes: []string{"x"}},
	} {
		var ce *fallback.ConfigError
		require.ErrorAs(t, r.Validate(), &ce, "%+v", r)
		_, err := fallback.New(fallback.Config{Codec: openai.New(), Rules: r, Targets: []fallback.Target{{Model: "m"}}})
		assert.ErrorAs(t, err, &ce)
	}
}
