package layer_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/recourse-dev/recourse/layer"
)

// Declare is the one way the codecs build their declaration (R15.1): it
// makes the maps of a zero Capabilities, replaces a value declared twice,
// and a declaration of all five values with complete evidence validates.
func TestR15_1_DeclareBuildsACompleteDeclaration(t *testing.T) {
	t.Parallel()
	doc := layer.CapabilityEvidence{Endpoint: "POST /x", DocumentationURL: "https://example.test/x", InspectedOn: "2026-12-01"}
	var caps layer.Capabilities
	for _, k := range layer.AllCapabilities() {
		caps.Declare(k, layer.Unsupported, doc.WithBasis("basis of "+string(k)))
	}
	require.NoError(t, caps.Validate())
	caps.Declare(layer.ClientAbort, layer.Unknown, doc.WithBasis("second thoughts"))
	assert.Equal(t, layer.Unknown, caps.Get(layer.ClientAbort))
	assert.Equal(t, "second thoughts", caps.Evidence[layer.ClientAbort].Basis)
	assert.Equal(t, "basis of idempotency", caps.Evidence[layer.Idempotency].Basis)
	assert.Len(t, caps.Values, 5)
	assert.Empty(t, doc.Basis, "WithBasis leaves the shared evidence unchanged")

	var partial layer.Capabilities
	partial.Declare(layer.Idempotency, layer.Unsupported, doc)
	require.Error(t, partial.Validate(), "evidence without a basis is incomplete")
}
