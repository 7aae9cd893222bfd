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

// TestR13_9_HeldPreambleComesBeforeTheProvidersError: a stream that ends
// with the provider's own error event before any output hands the reader
// its preamble and then that event, as the provider sent them.
func TestR13_9_HeldPreambleComesBeforeTheProvidersError(t *testing.T) {
	evs := recoursetest.ResponsesEvents("resp_f", "Hello")[:4]
	failed := "event: response.failed\ndata: {\"type\":\"response.failed\",\"sequence_number\":4,\"response\":{\"id\":\"resp_f\",\"object\":\"response\",\"status\":\"failed\",\"output\":[],\"error\":{\"code\":\"server_error\",\"message\":\"boom\"}}}\n\n"
	p := exProv{name: "responses", codec: func() codec.Codec { return responses.New() }, model: "gpt-4.1-mini"}
	r, _ := exRig(t, p.codec(), exPolicy(), recoursetest.SSE(append(evs, failed)...))
	resp, err := exDropIn(t, context.Background(), r.Server.URL, r.HTTP, p)
	require.NoError(t, err)
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Error(t, err)
	assert.Equal(t, strings.Join(evs, "")+failed, string(b))
	assert.Equal(t, 1, r.Server.Count(), "a provider's error is never resent")
}

// TestR13_9_PreambleOverTheBoundIsHandedOver: frames without evidence are
// held up to 1 MiB; beyond it they reach the reader before any output.
func TestR13_9_PreambleOverTheBoundIsHandedOver(t *testing.T) {
	p := exProviders()[0]
	empty := p.full()[0] // a role chunk: no evidence
	n := (1<<20)/len(empty) + 2
	frames := make([]string, n)
	for i := range frames {
		frames[i] = empty
	}
	r, _ := exRig(t, p.codec(), exPolicy(), p.step(frames...).Held())
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	resp, err := exDropIn(t, ctx, r.Server.URL, r.HTTP, p)
	require.NoError(t, err)
	defer resp.Body.Close()
	got := make([]byte, 1<<20)
	_, err = io.ReadFull(resp.Body, got)
	require.NoError(t, err, "the held bytes are handed over once they pass the bound")
	assert.True(t, strings.HasPrefix(string(got), empty))
}
