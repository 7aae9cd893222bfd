package proxy

import "sync"

// A completion's answer is copied to its client through a buffer of
// firstBufSize bytes and, from a read that fills it until a read that does
// not fill the larger one, through one of copyBufSize bytes. Every read is
// written and flushed at once, so a stream waiting for its next frame
// holds only the small buffer (most frames are far shorter), and an
// in-flight stream costs little memory, whatever frames it carried before.
// A large frame or a unary answer is read on in large reads: no read is
// delayed, and a large answer is not cut into many small writes.
const (
	firstBufSize = 2 << 10
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
