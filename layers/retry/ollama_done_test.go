package retry_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/recourse-dev/recourse/recoursetest"
)

// TestR13_3_OllamaDoneWithoutReasonIsTheTerminalFrame: an Ollama stream
// whose last line is done:true without a done_reason ends at that line, as
// the same unary answer does: the finish is unknown (""), nothing is
// incomplete, and the call succeeds after one POST with everything
// delivered.
func TestR13_3_OllamaDoneWithoutReasonIsTheTerminalFrame(t *testing.T) {
	const last = `{"model":"llama3.2","created_at":"2024-01-01T00:00:00.000000Z","message":{"role":"assistant","content":"!"},"done":true,"eval_count":3}` + "\n"
	p := exOllamaProv()

	t.Run("stream", func(t *testing.T) {
		r, rec := exRig(t, p.codec(), exPolicy(), recoursetest.NDJSON(p.content("Hel"), p.content("lo"), last), p.step(p.full("never")...))
		run := exCollect(r.Client.Stream(context.Background(), p.request()))
		require.NoError(t, run.err)
		require.True(t, run.done(), "the done:true line is the terminal frame")
		assert.Equal(t, "Hello!", run.text())
		end := run.chunks[len(run.chunks)-1]
		require.NotNil(t, end.Completion)
		assert.Equal(t, "", end.Completion.FinishReason, "a missing done_reason is an unknown finish")
		assert.Equal(t, "Hello!", end.Completion.Message.Content)
		assert.Equal(t, 1, r.Server.Count(), "one POST: nothing to recover")
		assert.Contains(t, rec.Types(), "attempt_succeeded")
	})

	t.Run("unary", func(t *testing.T) {
		r, _ := exRig(t, p.codec(), exPolicy(), recoursetest.JSON(200, last))
		comp, err := r.Client.Complete(context.Background(), p.request())
		require.NoError(t, err)
		assert.Equal(t, "!", comp.Message.Content)
		assert.Equal(t, "", comp.FinishReason)
	})
}

// TestR13_3_OllamaDoneLineWithoutNewlineIsTheTerminalFrame: an Ollama stream
// whose final done:true line reaches HTTP EOF without its "\n" — or with a
// space after the JSON and no "\n" — is accepted at that line, as the
// official Ollama clients parse what remains buffered at the end: the call
// succeeds after one POST with everything delivered, and the attempt
// succeeded and never failed.
func TestR13_3_OllamaDoneLineWithoutNewlineIsTheTerminalFrame(t *testing.T) {
	const last = `{"model":"llama3.2","created_at":"2024-01-01T00:00:00.000000Z","message":{"role":"assistant","content":"!"},"done":true,"done_reason":"stop","eval_count":3}`
	p := exOllamaProv()
	for name, end := range map[string]string{"no newline": "", "space, no newline": " "} {
		t.Run(name, func(t *testing.T) {
			st := recoursetest.NDJSON(p.content("Hel"), p.content("lo"), last)
			st.Chunks[len(st.Chunks)-1] = []byte(last + end)
			r, rec := exRig(t, p.codec(), exPolicy(), st, p.step(p.full("never")...))
			run := exCollect(r.Client.Stream(context.Background(), p.request()))
			require.NoError(t, run.err)
			require.True(t, run.done(), "the unterminated done:true line is the terminal frame")
			assert.Equal(t, "Hello!", run.text())
			assert.Equal(t, "stop", run.chunks[len(run.chunks)-1].Completion.FinishReason)
			assert.Equal(t, 1, r.Server.Count(), "one POST: nothing to recover")
			assert.Contains(t, rec.Types(), "attempt_succeeded")
			assert.NotContains(t, rec.Types(), "attempt_failed")
		})
	}
}
