//go:build !race

package responses

import (
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/recourse-dev/recourse/layer"
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
	d := NewStreamDecoder(layer.RequestInfo{Operation: layer.Streaming, DropText: true, TypedFrames: true})
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
