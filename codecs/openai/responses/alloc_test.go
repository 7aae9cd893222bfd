//go:build !race

package responses

import (
	"strconv"
	"testing"

	"github.com/recourse-dev/recourse/codec"
	"github.com/stretchr/testify/assert"
)

// TestR19_3_DeltaEventAllocations pins the cost of the event that makes up
// nearly all of a stream: decoding a text delta allocates once, for its
// text (the race detector adds allocations of its own, so this file is
// built without it).
func TestR19_3_DeltaEventAllocations(t *testing.T) {
	// Each event has its own sequence number: a repeated one is dropped
	// (R19.9).
	evs := make([][]byte, 202)
	for i := range evs {
		evs[i] = []byte("event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"sequence_number\":" +
			strconv.Itoa(i+5) + ",\"item_id\":\"msg_1\",\"output_index\":0,\"content_index\":0,\"delta\":\" w1\"}\n\n")
	}
	d := NewStreamDecoder(codec.RequestInfo{Operation: codec.Streaming, DropText: true, TypedFrames: true})
	n := 0
	drain := func() {
		d.Write(evs[n])
		n++
		for _, ok := d.Next(); ok; _, ok = d.Next() {
		}
	}
	drain() // the queue's first growth
	assert.LessOrEqual(t, testing.AllocsPerRun(200, drain), 1.0, "allocations per delta event")
	// Every event was counted: the first drain, AllocsPerRun's warm-up run
	// and its 200 runs, 3 bytes of content each.
	assert.Equal(t, int64(3*(1+1+200)), d.Observed().ContentBytes)
}

// TestR19_3_ArgumentsDeltaAllocations pins the cost of a function call's
// arguments delta, the event a tool call's stream is made of: it allocates
// its one fragment and that fragment's text (and, now and then, the growth
// of the call's accumulated arguments), never a map of the event's members.
func TestR19_3_ArgumentsDeltaAllocations(t *testing.T) {
	evs := make([][]byte, 202)
	for i := range evs {
		evs[i] = []byte("event: response.function_call_arguments.delta\ndata: {\"type\":\"response.function_call_arguments.delta\",\"sequence_number\":" +
			strconv.Itoa(i+5) + ",\"item_id\":\"fc_0\",\"output_index\":1,\"delta\":\"{\\\"a\\\":\"}\n\n")
	}
	d := NewStreamDecoder(codec.RequestInfo{Operation: codec.Streaming, DropText: true, TypedFrames: true})
	n := 0
	drain := func() {
		d.Write(evs[n])
		n++
		for _, ok := d.Next(); ok; _, ok = d.Next() {
		}
	}
	drain() // the queue's first growth and the call's creation
	assert.LessOrEqual(t, testing.AllocsPerRun(200, drain), 2.1, "allocations per arguments delta")
	// Every piece reached the call's arguments: the first drain,
	// AllocsPerRun's warm-up run and its 200 runs, 5 bytes each ({"a":).
	assert.Equal(t, int64(1+1+200), d.Observed().ToolFragments)
	assert.Equal(t, 5*(1+1+200), d.calls[1].args.Len())
}
