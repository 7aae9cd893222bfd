package proxy

import "sync"

// A completion's answer is copied to its client through a buffer of
// firstBufSize bytes, and, from the first read that fills it, through one
// of copyBufSize bytes. Every read is written and flushed at once, so a
// stream waiting for its next frame holds only the small buffer: most
// frames are far shorter, and an in-flight stream should cost little
// memory. A read that fills the small buffer (a large frame, or a unary
// answer) moves the rest of the copy to the large buffer: no read is
// delayed, and a large answer is not cut into many small writes.
const (
	firstBufSize = 4 << 10
	copyBufSize  = 32 << 10
)

// firstBufs and copyBufs hold the copy buffers of finished completions, so
// that a completion does not allocate (and zero) buffers of its own. A
// buffer is used by one exchange.copy at a time and holds no bytes once it
// is back: exchange.send writes every read to the client before the next
// read.
var (
	firstBufs = sync.Pool{New: func() any { b := make([]byte, firstBufSize); return &b }}
	copyBufs  = sync.Pool{New: func() any { b := make([]byte, copyBufSize); return &b }}
)
