package retry

import (
	"testing"
	"unsafe"
)

// TestCallSizeClass keeps the per-call state, its first attempt included,
// in the allocator's 1280-byte size class: an object of more than 512
// bytes that holds pointers carries an 8-byte header, so a call of more
// than 1272 bytes costs 1408. (Before the call kept its first attempt, it
// was 896 bytes and the attempt another 448, in an allocation of its own.)
func TestCallSizeClass(t *testing.T) {
	if n := unsafe.Sizeof(call{}); n > 1272 {
		t.Errorf("a call is %d bytes, want at most 1272 (the 1280-byte size class with its header)", n)
	}
}
