package layer_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/recourse-dev/recourse/layer"
)

// TestR10_3_KnownProviderCodesCannotBeChangedByAnImporter: the privacy
// allow-list is handed out as a copy: overwriting every entry of a returned
// slice neither admits a new code to safe records nor drops a known one.
func TestR10_3_KnownProviderCodesCannotBeChangedByAnImporter(t *testing.T) {
	codes := layer.KnownProviderCodes()
	want := append([]string(nil), codes...)
	require.Contains(t, want, "rate_limit_exceeded")
	for i := range codes {
		codes[i] = "sk-secret-key"
	}
	assert.False(t, layer.IsKnownProviderCode("sk-secret-key"), "a changed copy admits nothing")
	assert.True(t, layer.IsKnownProviderCode("rate_limit_exceeded"), "and drops nothing")
	assert.Equal(t, want, layer.KnownProviderCodes())
}

// TestR10_2_ListsCannotBeChangedByAnImporter: the lists of categories,
// outcomes, event types and capabilities are copies: overwriting a returned
// slice changes neither the next one nor what the package accepts as valid.
func TestR10_2_ListsCannotBeChangedByAnImporter(t *testing.T) {
	cats := layer.Categories()
	wantCats := append([]layer.Category(nil), cats...)
	for i := range cats {
		cats[i] = "bogus"
	}
	assert.Equal(t, wantCats, layer.Categories())
	assert.True(t, layer.CategoryTransport.Valid())
	assert.False(t, layer.Category("bogus").Valid())

	outs := layer.Outcomes()
	wantOuts := append([]layer.Outcome(nil), outs...)
	for i := range outs {
		outs[i] = "bogus"
	}
	assert.Equal(t, wantOuts, layer.Outcomes())
	assert.Contains(t, layer.Outcomes(), layer.OutcomeExhausted)

	evs := layer.EventTypes()
	wantEvs := append([]layer.EventType(nil), evs...)
	for i := range evs {
		evs[i] = "bogus"
	}
	assert.Equal(t, wantEvs, layer.EventTypes())

	caps := layer.AllCapabilities()
	require.Len(t, caps, 5)
	wantCaps := append([]layer.Capability(nil), caps...)
	complete := layer.Capabilities{Values: map[layer.Capability]layer.Support{}, Evidence: map[layer.Capability]layer.CapabilityEvidence{}}
	for _, k := range caps {
		complete.Values[k] = layer.Unsupported
		complete.Evidence[k] = layer.CapabilityEvidence{Endpoint: "POST /x", DocumentationURL: "https://example.invalid/doc", InspectedOn: "2026-12-01", Basis: "test"}
	}
	require.NoError(t, complete.Validate())
	for i := range caps {
		caps[i] = "bogus"
	}
	assert.Equal(t, wantCaps, layer.AllCapabilities())
	assert.NoError(t, complete.Validate(), "validation still checks the five capabilities")
}
