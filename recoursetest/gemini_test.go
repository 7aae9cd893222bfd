package recoursetest_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/recourse-dev/recourse/codec"
	"github.com/recourse-dev/recourse/codecs/gemini"
	"github.com/recourse-dev/recourse/recoursetest"
)

// The canned Gemini bodies are what the Gemini codec reads as the API's:
// an answer, a stream accepted at its end, an error and a 429 whose wait
// and quota are in the body (R23).
func TestR23_CannedGeminiBodiesSpeakTheWire(t *testing.T) {
	c := gemini.New()
	comp, err := c.Decode([]byte(recoursetest.GeminiChat("hi")))
	require.NoError(t, err)
	assert.Equal(t, "hi", comp.Message.Content)
	assert.Equal(t, recoursetest.GeminiModel, comp.Model)
	assert.Equal(t, 19, comp.Usage.InputTokens+comp.Usage.OutputTokens)

	d := c.NewObserver(codec.RequestInfo{Operation: codec.Streaming}).(codec.StreamDecoder)
	for _, ev := range recoursetest.GeminiStream("Hel", "lo") {
		d.Write([]byte(ev))
	}
	require.NoError(t, d.End())
	var last codec.Frame
	for f, ok := d.Next(); ok; f, ok = d.Next() {
		last = f
	}
	assert.True(t, last.Done)
	assert.Equal(t, "Hello", last.Completion.Message.Content)

	assert.Equal(t, "UNAVAILABLE", c.ErrorCode([]byte(recoursetest.GeminiError(503, "UNAVAILABLE", "busy"))))
	st := recoursetest.GeminiRateLimit("58s", "GenerateRequestsPerDayPerProjectPerModel-FreeTier")
	assert.Equal(t, 429, st.Status)
	assert.Empty(t, st.Header.Get("Retry-After"))
	assert.Equal(t, codec.BodyHints{RetryDelay: 58 * time.Second, HasRetryDelay: true, QuotaExhausted: true}, c.BodyHints(st.Chunks[0]))
}
