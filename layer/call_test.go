package layer_test

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/recourse-dev/recourse/event"
	"github.com/recourse-dev/recourse/layer"
)

// Emit is the one fan-out of the engine and the fallback layers (R11.4):
// OnEvent first, then the call's observers in order; an OnEvent error is an
// *ObserverError that wraps it, and the observers are then not called.
func TestR11_4_EmitCallsOnEventThenObserversInOrder(t *testing.T) {
	t.Parallel()
	var got []string
	c := &layer.Call{}
	c.Observe(func(ev event.Event) { got = append(got, "first "+string(ev.Type)) })
	c.Observe(func(ev event.Event) { got = append(got, "second "+string(ev.Type)) })
	onEvent := func(ev event.Event) error {
		got = append(got, "policy "+string(ev.Type))
		return nil
	}
	require.NoError(t, c.Emit(onEvent, event.Event{Type: event.AttemptStarted}))
	assert.Equal(t, []string{"policy attempt_started", "first attempt_started", "second attempt_started"}, got)

	got = nil
	require.NoError(t, c.Emit(nil, event.Event{Type: event.AttemptStarted}))
	assert.Equal(t, []string{"first attempt_started", "second attempt_started"}, got, "a nil OnEvent is none")

	got = nil
	boom := errors.New("boom")
	err := c.Emit(func(event.Event) error { return boom }, event.Event{Type: event.AttemptStarted})
	var oe *layer.ObserverError
	require.ErrorAs(t, err, &oe)
	assert.Equal(t, event.AttemptStarted, oe.Event)
	require.ErrorIs(t, err, boom)
	assert.Empty(t, got, "the observers are not called after an OnEvent error")

	var none *layer.Call
	require.NoError(t, none.Emit(nil, event.Event{Type: event.AttemptStarted}), "a nil call has no observers")
}
