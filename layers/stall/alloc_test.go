//go:build !race

package stall_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/recourse-dev/recourse/layers/stall"
)

// TestR7_2_IdleLimitAllocatesNothingPerRead pins the success-path cost of
// an idle limit on the real clock: a read that returns within the limit
// re-arms the attempt's one timer and allocates nothing (the race detector
// adds allocations of its own, so this file is built without it).
func TestR7_2_IdleLimitAllocatesNothingPerRead(t *testing.T) {
	resp := pacedResponse(t, stall.Limits{Idle: time.Minute}, make([]time.Duration, 1000)...)
	defer resp.Body.Close()
	buf := make([]byte, 8)
	_, _ = resp.Body.Read(buf) // the first wait creates the timer
	assert.Zero(t, testing.AllocsPerRun(200, func() {
		n, err := resp.Body.Read(buf)
		if n != 1 || err != nil {
			t.Fatalf("read %d bytes, %v", n, err)
		}
	}))
}
