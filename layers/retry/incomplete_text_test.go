package retry_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/recourse-dev/recourse/layer"
	"github.com/recourse-dev/recourse/recoursetest"
)

// TestR13_3_IncompleteFinishErrorSaysWhatWasIncomplete: a stream the
// contract still fails — a length finish on every provider, an Ollama
// done_reason load, an undocumented done_reason — ends with an error whose
// safe text says the completion is incomplete, naming the finish only when
// it is a documented one; the provider's own string never appears.
func TestR13_3_IncompleteFinishErrorSaysWhatWasIncomplete(t *testing.T) {
	for _, p := range exProviders() {
		t.Run(p.name+"/length", func(t *testing.T) {
			r, _ := exRig(t, p.codec(), exPolicy(), p.step(p.length("abc")...))
			run := exCollect(r.Client.Stream(context.Background(), p.request()))
			require.Error(t, run.err)
			assert.Contains(t, run.err.Error(), ": incomplete completion (finish length)")
		})
	}
	p := exOllamaProv()
	for _, c := range []struct{ reason, want string }{
		{"load", ": incomplete completion (finish load)"},
		{"PROMPT-CANARY-reason", ": incomplete completion (an undocumented finish)"},
	} {
		t.Run("ollama/"+c.reason, func(t *testing.T) {
			line := `{"model":"llama3.2","created_at":"2024-01-01T00:00:00.000000Z","message":{"role":"assistant","content":""},"done":true,"done_reason":"` + c.reason + `"}` + "\n"
			r, _ := exRig(t, p.codec(), exPolicy(), recoursetest.NDJSON(line))
			run := exCollect(r.Client.Stream(context.Background(), p.request()))
			var re *layer.RecoveryError
			require.ErrorAs(t, run.err, &re)
			assert.Contains(t, re.Error(), c.want)
			assert.NotContains(t, re.Error(), "CANARY")
			assert.NotContains(t, re.Error(), "the provider returned an error", "an incomplete finish is not a provider error")
		})
	}
}
