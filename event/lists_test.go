package event_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/recourse-dev/recourse/event"
)

// TestR10_2_ListsCannotBeChangedByAnImporter: the lists of categories,
// outcomes and event types are copies: overwriting a returned
// slice changes neither the next one nor what the package accepts as valid.
func TestR10_2_ListsCannotBeChangedByAnImporter(t *testing.T) {
	cats := event.Categories()
	wantCats := append([]event.Category(nil), cats...)
	for i := range cats {
		cats[i] = "bogus"
	}
	assert.Equal(t, wantCats, event.Categories())
	assert.True(t, event.CategoryTransport.Valid())
	assert.False(t, event.Category("bogus").Valid())

	outs := event.Outcomes()
	wantOuts := append([]event.Outcome(nil), outs...)
	for i := range outs {
		outs[i] = "bogus"
	}
	assert.Equal(t, wantOuts, event.Outcomes())
	assert.Contains(t, event.Outcomes(), event.OutcomeExhausted)

	evs := event.Types()
	wantEvs := append([]event.Type(nil), evs...)
	for i := range evs {
		evs[i] = "bogus"
	}
	assert.Equal(t, wantEvs, event.Types())

}
