package retry_test

// A resend before output is invisible in a drop-in body (R13.9): the
// frames without evidence that open a stream are held until its first
// output, and a resend drops them.

import (
	"context"
	"io"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/recourse-dev/recourse/codec"
	"github.com/recourse-dev/recourse/codecs/openai/responses"
	"github.com/recourse-dev/recourse/recoursetest"
)

// preambleOf returns a first frame of p's stream that carries no output:
// a role chunk of another completion id, or an Ollama line with empty
// content.
func preambleOf(p exProv) string {
	if p.ndjson {
		return exOllamaLine("", "")
	}
	return strings.Replace(p.full()[0], "chatcmpl-ex", "chatcmpl-first", 1)
}

// TestR13_9_ResendBeforeOutputShowsOnePreamble: a stream cut after its
// preamble (a role chunk, an Ollama line without content, the Responses
// API's created, in_progress, output_item.added and content_part.added) is
// resent, and the drop-in body is exactly the resent stream: one preamble,
// one completion or response id, sequence numbers that never go back.
func TestR13_9_ResendBeforeOutputShowsOnePreamble(t *testing.T) {
	for _, p := range exProviders() {
		t.Run(p.name, func(t *testing.T) {
			second := p.full("Hel", "lo")
			r, _ := exRig(t, p.codec(), exPolicy(), p.step(preambleOf(p)).CutEvents(1), p.step(second...))
			resp, err := exDropIn(t, context.Background(), r.Server.URL, r.HTTP, p)
			require.NoError(t, err)
			b, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			require.NoError(t, err)
			assert.Equal(t, strings.Join(second, ""), string(b))
			assert.Equal(t, 2, r.Server.Count())
		})
	}
	t.Run("responses", func(t *testing.T) {
		first := recoursetest.ResponsesEvents("resp_first", "Hello")
		second := recoursetest.ResponsesEvents("resp_second", "Hel", "lo")
		p := exProv{name: "responses", codec: func() codec.Codec { return responses.New() }, model: "gpt-4.1-mini"}
		r, _ := exRig(t, p.codec(), exPolicy(), recoursetest.SSE(first...).CutEvents(4), recoursetest.SSE(second...))
		resp, err := exDropIn(t, context.Background(), r.Server.URL, r.HTTP, p)
		require.NoError(t, err)
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		require.NoError(t, err)
		assert.Equal(t, strings.Join(second, ""), string(b))
		assert.NotContains(t, string(b), "resp_first")
		assert.Equal(t, 2, r.Server.Count())
	})
}

// TestR13_9_ResumedPreambleIsHandedOverOnce: a background stream cut after
// its preamble is resumed after it, not resent: the held preamble is handed
// over with the first output, every event once.
func TestR13_9_ResumedPreambleIsHandedOverOnce(t *testing.T) {
	const id = "resp_bg"
	evs := recoursetest.ResponsesEvents(id, "Hel", "lo")
	p := exProv{name: "responses", codec: func() codec.Codec { return responses.New(responses.Background()) }, model: "gpt-4.1-mini"}
	r, _ := exRig(t, p.codec(), exPolicy(), recoursetest.ResponsesBackground(id, evs...).CutEvents(4), recoursetest.ResponsesResume(id))
	resp, err := exDropIn(t, context.Background(), r.Server.URL, r.HTTP, p)
	require.NoError(t, err)
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.NoError(t, err)
	assert.Equal(t, strings.Join(evs, ""), string(b))
	reqs := r.Server.Requests()
	require.Len(t, reqs, 2)
	assert.Equal(t, "starting_after=3&stream=true", reqs[1].RawQuery)
}
