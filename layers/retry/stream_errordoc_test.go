package retry_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/recourse-dev/recourse/codec"
	"github.com/recourse-dev/recourse/codecs/omlx"
	"github.com/recourse-dev/recourse/codecs/openai"
	"github.com/recourse-dev/recourse/event"
	"github.com/recourse-dev/recourse/internal/rigtest"
	"github.com/recourse-dev/recourse/layers/retry"
	"github.com/recourse-dev/recourse/recoursetest"
)

// R4.7, R13.3: a streaming request answered in a 2xx with a JSON error
// object instead of an event stream is a provider error: never eligible,
// one POST, its known code kept — not an incomplete stream resent.
func TestR4_7_StreamAnsweredWithAnErrorDocumentIsNotResent(t *testing.T) {
	for name, cdc := range map[string]codec.Codec{"openai": openai.New(), "omlx": omlx.New()} {
		t.Run(name, func(t *testing.T) {
			doc := recoursetest.JSON(200, recoursetest.OpenAIError("invalid_request_error", "model_not_found", "no such model"))
			r := rigtest.New(t, cdc, retry.Policy{MaxAttempts: 3, Jitter: zeroJitter, Admit: allowHook}, doc, doc, doc)
			req := canaryRequest()
			req.Stream = true
			text, _, err := collect(t, r.Client.Stream(context.Background(), req))
			re := asRecoveryError(t, err)
			assert.Empty(t, text)
			assert.Equal(t, event.OutcomeInterrupted, re.Outcome)
			assert.Equal(t, event.CategoryProviderResponse, re.Failure.Category)
			assert.Equal(t, event.ReasonPermanent, re.Failure.Classification.Reason)
			assert.Equal(t, "model_not_found", re.Failure.ProviderCode)
			require.Equal(t, 1, r.Server.Count())
		})
	}
}
