package layer_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/recourse-dev/recourse/layer"
)

// TestR10_2_ListsCannotBeChangedByAnImporter: the lists of categories,
// outcomes and event types are copies: overwriting a returned
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

}
