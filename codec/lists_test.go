package codec_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/recourse-dev/recourse/codec"
)

// TestR10_3_KnownProviderCodesCannotBeChangedByAnImporter: the privacy
// allow-list is handed out as a copy: overwriting every entry of a returned
// slice neither admits a new code to safe records nor drops a known one.
func TestR10_3_KnownProviderCodesCannotBeChangedByAnImporter(t *testing.T) {
	codes := codec.KnownProviderCodes()
	want := append([]string(nil), codes...)
	require.Contains(t, want, "rate_limit_exceeded")
	for i := range codes {
		codes[i] = "sk-secret-key"
	}
	assert.False(t, codec.IsKnownProviderCode("sk-secret-key"), "a changed copy admits nothing")
	assert.True(t, codec.IsKnownProviderCode("rate_limit_exceeded"), "and drops nothing")
	assert.Equal(t, want, codec.KnownProviderCodes())
}

// TestR10_2_CapabilityListCannotBeChangedByAnImporter: the list of
// capabilities is a copy: overwriting a returned slice changes neither the
// next one nor what Validate checks.
func TestR10_2_CapabilityListCannotBeChangedByAnImporter(t *testing.T) {
	caps := codec.AllCapabilities()
	require.Len(t, caps, 5)
	wantCaps := append([]codec.Capability(nil), caps...)
	complete := codec.Capabilities{Values: map[codec.Capability]codec.Support{}, Evidence: map[codec.Capability]codec.CapabilityEvidence{}}
	for _, k := range caps {
		complete.Values[k] = codec.Unsupported
		complete.Evidence[k] = codec.CapabilityEvidence{Endpoint: "POST /x", DocumentationURL: "https://example.invalid/doc", InspectedOn: "2026-12-01", Basis: "test"}
	}
	require.NoError(t, complete.Validate())
	for i := range caps {
		caps[i] = "bogus"
	}
	assert.Equal(t, wantCaps, codec.AllCapabilities())
	assert.NoError(t, complete.Validate(), "validation still checks the five capabilities")
}
