package responses_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/recourse-dev/recourse/codec"
	"github.com/recourse-dev/recourse/codecs/openai/responses"
)

// TestR19_8_CapabilitiesOfPOSTv1Responses: the declaration for the
// endpoint, each value with its evidence as inspected on 2026-12-01;
// retrieval and cancellation are supported because the provider documents
// them (for stored and background responses), idempotency is not.
func TestR19_8_CapabilitiesOfPOSTv1Responses(t *testing.T) {
	caps := responses.New().Capabilities()
	require.NoError(t, caps.Validate())
	assert.Equal(t, map[codec.Capability]codec.Support{
		codec.ClientAbort:             codec.Unknown,
		codec.RequestCancellation:     codec.Supported,
		codec.RequestStatus:           codec.Supported,
		codec.Idempotency:             codec.Unsupported,
		codec.ExactAttemptTermination: codec.Unknown,
	}, caps.Values)
	want := map[codec.Capability][2]string{
		codec.ClientAbort:             {"POST /v1/responses", "https://platform.openai.com/docs/api-reference/responses/create"},
		codec.RequestCancellation:     {"POST /v1/responses/{response_id}/cancel", "https://platform.openai.com/docs/api-reference/responses/cancel"},
		codec.RequestStatus:           {"GET /v1/responses/{response_id}", "https://platform.openai.com/docs/api-reference/responses/get"},
		codec.Idempotency:             {"POST /v1/responses", "https://platform.openai.com/docs/api-reference/responses/create"},
		codec.ExactAttemptTermination: {"POST /v1/responses", "https://platform.openai.com/docs/api-reference/responses/create"},
	}
	for k, w := range want {
		ev := caps.Evidence[k]
		assert.Equal(t, w[0], ev.Endpoint, k)
		assert.Equal(t, w[1], ev.DocumentationURL, k)
		assert.Equal(t, "2026-12-01", ev.InspectedOn, k)
	}
	for _, k := range []codec.Capability{codec.RequestCancellation, codec.RequestStatus} {
		assert.Contains(t, caps.Evidence[k].Basis, "https://platform.openai.com/docs/guides/background", "the background-mode guide is the basis")
	}

	// Every call returns new maps.
	caps.Values[codec.Idempotency] = codec.Supported
	assert.Equal(t, codec.Unsupported, responses.New().Capabilities().Get(codec.Idempotency))

	// The README's Capabilities section states the same table.
	b, err := os.ReadFile(filepath.Join("..", "..", "..", "README.md"))
	require.NoError(t, err)
	readme := string(b)
	i := strings.Index(readme, "OpenAI Responses, `POST /v1/responses` (`codecs/openai/responses`")
	require.GreaterOrEqual(t, i, 0, "README has a table for the Responses codec")
	caps = responses.New().Capabilities()
	for _, k := range codec.AllCapabilities() {
		ev := caps.Evidence[k]
		row := "`) | `" + string(caps.Values[k]) + "` | [" + ev.Endpoint + "](" + ev.DocumentationURL + ") | " + ev.InspectedOn + " |"
		assert.Contains(t, readme[i:], row, k)
	}
}
