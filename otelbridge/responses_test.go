package otelbridge_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"

	"github.com/recourse-dev/recourse/codecs/openai/responses"
	"github.com/recourse-dev/recourse/internal/rigtest"
	"github.com/recourse-dev/recourse/layers/retry"
	"github.com/recourse-dev/recourse/recoursetest"
)

// R19.10: a background stream's resume read is an attempt span of its own,
// a GET with the cursor it reads after; the retry.started event carries the
// cursor too, and nothing names the response.
func TestR19_10_ResumeReadIsASpanOfItsOwn(t *testing.T) {
	const id = "resp_span1"
	f := newFixture(t, responses.New(responses.Background()), retry.Policy{MaxAttempts: 3}, nil,
		recoursetest.ResponsesBackground(id, recoursetest.ResponsesEvents(id, "Hel", "lo")...).CutEvents(5), recoursetest.ResponsesResume(id))
	req := request(model)
	req.Stream = true
	text, _, err := rigtest.Collect(t, f.client.Stream(context.Background(), req))
	require.NoError(t, err)
	assert.Equal(t, "Hello", text)

	logical, attempts := f.tree()
	require.Len(t, attempts, 2)
	assert.Equal(t, "POST", attempts[0].Name())
	assert.NotContains(t, attrs(attempts[0].Attributes()), keyOf("recourse.resume.cursor"))
	assert.Equal(t, "GET", attempts[1].Name())
	a := attrs(attempts[1].Attributes())
	assert.Equal(t, "GET", a["http.request.method"].AsString())
	assert.Equal(t, int64(4), a["recourse.resume.cursor"].AsInt64())
	assert.Equal(t, int64(1), a["http.request.resend_count"].AsInt64())
	var found bool
	for _, e := range logical.Events() {
		if e.Name == "recourse.retry.started" {
			found = true
			assert.Equal(t, int64(4), attrs(e.Attributes)["recourse.resume.cursor"].AsInt64())
		}
	}
	assert.True(t, found)
	for _, s := range f.sr.Ended() {
		for _, kv := range s.Attributes() {
			assert.NotContains(t, kv.Value.Emit(), id, "no span attribute names the response")
		}
	}
}

func keyOf(s string) attribute.Key { return attribute.Key(s) }
