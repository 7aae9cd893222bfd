package codec_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/recourse-dev/recourse/codec"
)

// Declare is the one way the codecs build their declaration (R15.1): it
// makes the maps of a zero Capabilities, replaces a value declared twice,
// and a declaration of all five values with complete evidence validates.
func TestR15_1_DeclareBuildsACompleteDeclaration(t *testing.T) {
	t.Parallel()
	doc := codec.CapabilityEvidence{Endpoint: "POST /x", DocumentationURL: "https://example.test/x", InspectedOn: "2026-12-01"}
	var caps codec.Capabilities
	for _, k := range codec.AllCapabilities() {
		caps.Declare(k, codec.Unsupported, doc.WithBasis("basis of "+string(k)))
	}
	require.NoError(t, caps.Validate())
	caps.Declare(codec.ClientAbort, codec.Unknown, doc.WithBasis("second thoughts"))
	assert.Equal(t, codec.Unknown, caps.Get(codec.ClientAbort))
	assert.Equal(t, "second thoughts", caps.Evidence[codec.ClientAbort].Basis)
	assert.Equal(t, "basis of idempotency", caps.Evidence[codec.Idempotency].Basis)
	assert.Len(t, caps.Values, 5)
	assert.Empty(t, doc.Basis, "WithBasis leaves the shared evidence unchanged")

	var partial codec.Capabilities
	partial.Declare(codec.Idempotency, codec.Unsupported, doc)
	require.Error(t, partial.Validate(), "evidence without a basis is incomplete")
}
