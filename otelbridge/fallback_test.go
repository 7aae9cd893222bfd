package otelbridge_test

import (
	"context"
	"go.opentelemetry.io/otel/codes"
	"io"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/recourse-dev/recourse/codecs/openai"
	"github.com/recourse-dev/recourse/layer"
	"github.com/recourse-dev/recourse/layers/fallback"
	"github.com/recourse-dev/recourse/layers/retry"
	"github.com/recourse-dev/recourse/recoursetest"
)

const fallbackKey = "sk-FALLBACKTRACECANARY-0c4d"

// A call that falls back is one logical span with a span per target under
// it and each target's attempts under that target's span; the attempt
// metrics carry the target as a label.
func TestR20_6_SpanPerTargetUnderTheCallsSpan(t *testing.T) {
	fl, err := fallback.New(fallback.Config{Codec: openai.New(), Targets: []fallback.Target{{Model: "gpt-4o-mini",
		Credential: func(_ context.Context, h http.Header) error {
			h.Set("Authorization", "Bearer "+fallbackKey)
			return nil
		}}}})
	require.NoError(t, err)
	overloaded := recoursetest.JSON(503, recoursetest.OpenAIError("server_error", "server_error", "overloaded"))
	f := newFixtureWith(t, openai.New(), retry.Policy{MaxAttempts: 2}, nil, []layer.Layer{fl},
		overloaded, overloaded, recoursetest.JSON(200, recoursetest.OpenAIChat("ok")))
	resp, err := f.http.Do(f.post(t.Context(), f.endpoint(), request("gpt-4o")))
	require.NoError(t, err)
	_, err = io.Copy(io.Discard, resp.Body)
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())

	var logical sdktrace.ReadOnlySpan
	var targets, posts []sdktrace.ReadOnlySpan
	for _, s := range f.sr.Ended() {
		scan(t, s)
		for _, kv := range s.Attributes() {
			assert.NotContains(t, kv.Value.String(), fallbackKey)
		}
		switch s.Name() {
		case "POST":
			posts = append(posts, s)
		case "recourse.target gpt-4o", "recourse.target gpt-4o-mini":
			targets = append(targets, s)
		default:
			require.Nil(t, logical, "one logical span, got %s", s.Name())
			logical = s
		}
	}
	require.NotNil(t, logical)
	assert.Equal(t, "chat gpt-4o", logical.Name())
	assert.Equal(t, "success", attrs(logical.Attributes())["recourse.outcome"].AsString())
	assert.Equal(t, int64(3), attrs(logical.Attributes())["recourse.attempts"].AsInt64())
	assert.Contains(t, eventNames(logical), "recourse.fallback")
	require.Len(t, targets, 2)
	a, b := targets[0], targets[1]
	if a.Name() != "recourse.target gpt-4o" {
		a, b = b, a
	}
	for _, s := range targets {
		assert.Equal(t, logical.SpanContext().SpanID(), s.Parent().SpanID(), "a target span is a child of the call's span")
	}
	assert.Equal(t, "exhausted", attrs(a.Attributes())["recourse.outcome"].AsString())
	assert.Equal(t, "success", attrs(b.Attributes())["recourse.outcome"].AsString(), "the last target's span says how the call ended on it")
	assert.Equal(t, codes.Error, a.Status().Code)
	assert.NotEqual(t, codes.Error, b.Status().Code)
	lid := attrs(logical.Attributes())["recourse.logical_request_id"].AsString()
	assert.NotEmpty(t, lid, "the call's span names the first run's logical ID")
	assert.Equal(t, lid, attrs(a.Attributes())["recourse.logical_request_id"].AsString())
	assert.NotEmpty(t, attrs(b.Attributes())["recourse.logical_request_id"].AsString())
	assert.NotEqual(t, lid, attrs(b.Attributes())["recourse.logical_request_id"].AsString(), "each target's run is its own logical completion")
	assert.Equal(t, "gpt-4o-mini", attrs(b.Attributes())["gen_ai.request.model"].AsString())
	assert.Equal(t, "gpt-4o", attrs(b.Attributes())["recourse.fallback.from"].AsString())
	require.Len(t, posts, 3)
	under := map[string]int{}
	for _, p := range posts {
		switch p.Parent().SpanID() {
		case a.SpanContext().SpanID():
			under["gpt-4o"]++
		case b.SpanContext().SpanID():
			under["gpt-4o-mini"]++
		}
	}
	assert.Equal(t, map[string]int{"gpt-4o": 2, "gpt-4o-mini": 1}, under, "each attempt under its target's span")

	labels := map[string]int64{}
	for _, p := range points(t, f.metrics(), "recourse.client.attempts") {
		labels[set(p.Attributes)["recourse.fallback.target"].AsString()] += p.Value
	}
	assert.Equal(t, map[string]int64{"gpt-4o": 2, "gpt-4o-mini": 1}, labels)
}
