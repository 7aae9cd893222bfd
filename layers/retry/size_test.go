package retry

import (
	"testing"
	"unsafe"
)

// TestCallSizeClass keeps the per-call state in the allocator's 896-byte
// size class: an object of more than 512 bytes that holds pointers carries
// an 8-byte header, so a call of more than 888 bytes costs 1024.
func TestCallSizeClass(t *testing.T) {
	if n := unsafe.Sizeof(call{}); n > 888 {
		t.Errorf("a call is %d bytes, want at most 888 (the 896-byte size class with its header)", n)
	}
}
