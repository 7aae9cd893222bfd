package proxy

import "sync"

// copyBufSize is the size of the buffer a completion's answer is copied
// through: the largest read passed to the client in one write and flush.
const copyBufSize = 32 << 10

// copyBufs holds the copy buffers of finished completions, so that a
// completion does not allocate (and zero) 32 KiB of its own. A buffer is
// used by one exchange.copy at a time and holds no bytes once it is back:
// exchange.send writes every read to the client before the next read.
var copyBufs = sync.Pool{New: func() any { b := make([]byte, copyBufSize); return &b }}
