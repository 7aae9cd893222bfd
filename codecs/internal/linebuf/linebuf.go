// Package linebuf is the input buffer of the stream framers (packages
// internal/sse and internal/ndjson): it holds the bytes written and not yet
// released, splits them into lines incrementally, and bounds the length of
// a line, so that buffered memory stays bounded by roughly the limit plus
// one Write.
//
// A Buffer reuses one byte slice: Write appends to it and, rather than
// growing it, first moves the held bytes to its front when the released
// bytes before them make room. In steady state nothing is allocated per
// line. Lines are located by offsets into Held, so that what a framer keeps
// of them stays valid when the bytes move.
package linebuf

import (
	"bytes"
	"errors"
	"sync"
)

// ErrTooLong is the error of Next once a line, complete or not, is longer
// than the Buffer's limit, not counting its terminator.
var ErrTooLong = errors.New("line exceeds limit")

// RetainSize is the largest capacity Reset keeps for reuse; a larger
// slice, grown for an unusually long line, is released.
const RetainSize = 1 << 20

// initialSize is the capacity of a new Buffer.
const initialSize = 4 << 10

// Ends says which bytes end a line.
type Ends uint8

const (
	// LF ends a line at "\n" only; a "\r" before it belongs to the line.
	LF Ends = iota
	// CROrLF ends a line at "\r\n", "\n" or "\r". A "\r" that ends one
	// Write and a "\n" that begins the next form one "\r\n": the line ends
	// at the "\r", and the "\n" is skipped (see Carried).
	CROrLF
)

// Line locates a line in Held: Held()[Start:End] is the line without its
// terminator, and Held()[End:Next] is the terminator.
type Line struct {
	Start, End, Next int
}

// Buffer holds the bytes of a stream that its owner has not released. The
// zero value is not usable; use New. A Buffer is not safe for concurrent
// use.
type Buffer struct {
	// buf[r:] is held; the next line starts at buf[next]. buf[next:searched]
	// is known to hold no line end.
	buf      []byte
	r        int
	next     int
	searched int
	max      int
	ends     Ends
	// skipLF is set when the last line ended with a "\r" that was the last
	// buffered byte: a "\n" arriving next completes "\r\n".
	skipLF bool
	// carried is set when buf[r] is such a "\n".
	carried bool
}

// New returns an empty Buffer whose lines end as ends says and that
// reports ErrTooLong for a line longer than max bytes. Its slice is one a
// freed Buffer gave back (Free), when there is one, so that a stream whose
// Buffer is freed at its end costs the next stream no allocation.
func New(max int, ends Ends) Buffer {
	return Buffer{buf: freed.Get().(*[initialSize]byte)[:0:initialSize], max: max, ends: ends}
}

// freed holds the initialSize slices of freed Buffers for New.
var freed = sync.Pool{New: func() any { return new([initialSize]byte) }}

// Free empties the Buffer, as Reset does, and gives its slice back for a
// later New, when it has not grown beyond initialSize. The owner calls it
// once it keeps no slice of Held or Rest and writes nothing more; a Write
// after Free still works, into a new slice. It invalidates slices of Held
// and Rest.
func (b *Buffer) Free() {
	if cap(b.buf) == initialSize {
		freed.Put((*[initialSize]byte)(b.buf[:initialSize]))
	}
	*b = Buffer{max: b.max, ends: b.ends}
}

// Limit returns the length of the longest line the Buffer takes.
func (b *Buffer) Limit() int { return b.max }

// Write appends p. It does not retain p. It moves the held bytes, so it
// invalidates slices of Held and Rest, but not the offsets of lines.
func (b *Buffer) Write(p []byte) {
	if len(p) == 0 {
		return
	}
	if b.r > 0 {
		switch {
		case b.r == len(b.buf):
			b.shift(b.r, 0)
		case len(b.buf)+len(p) > cap(b.buf):
			// Compact instead of growing: move the held bytes to the
			// front.
			b.shift(b.r, copy(b.buf, b.buf[b.r:]))
		}
	}
	b.buf = append(b.buf, p...)
}

// shift drops the first n bytes of the buffer, leaving length m.
func (b *Buffer) shift(n, m int) {
	b.buf = b.buf[:m]
	b.r -= n
	b.next -= n
	b.searched -= n
}

// Next returns the next complete line. It reports ok=false, with a nil
// error, when no line end is buffered, and ErrTooLong when the line, or the
// incomplete line buffered, is longer than the limit.
func (b *Buffer) Next() (l Line, ok bool, err error) {
	if b.skipLF && b.next < len(b.buf) {
		b.skipLF = false
		if b.buf[b.next] == '\n' {
			if b.next == b.r {
				b.carried = true
			}
			b.next++
		}
	}
	start := max(b.next, b.searched)
	i := b.index(b.buf[start:])
	if i < 0 {
		b.searched = len(b.buf)
		if len(b.buf)-b.next > b.max {
			return Line{}, false, ErrTooLong
		}
		return Line{}, false, nil
	}
	ls, le := b.next, start+i
	n := le + 1
	if b.buf[le] == '\r' {
		switch {
		case n == len(b.buf):
			b.skipLF = true
		case b.buf[n] == '\n':
			n++
		}
	}
	b.next, b.searched = n, n
	if le-ls > b.max {
		return Line{}, false, ErrTooLong
	}
	return Line{Start: ls - b.r, End: le - b.r, Next: n - b.r}, true, nil
}

// index returns the index of the first line end in p, or -1.
func (b *Buffer) index(p []byte) int {
	i := bytes.IndexByte(p, '\n')
	if b.ends == LF {
		return i
	}
	if i < 0 {
		return bytes.IndexByte(p, '\r')
	}
	if j := bytes.IndexByte(p[:i], '\r'); j >= 0 {
		return j
	}
	return i
}

// Held returns the bytes written and not released. The slice is valid until
// the next Write or Reset.
func (b *Buffer) Held() []byte { return b.buf[b.r:] }

// Rest returns the bytes after the last line returned by Next (or passed
// over by Skip): the start of a line whose end has not arrived. The slice is
// valid until the next Write or Reset.
func (b *Buffer) Rest() []byte { return b.buf[b.next:] }

// Release drops the first n bytes of Held, which the owner no longer needs;
// n must not exceed the Next of the last line returned. It does not move
// bytes; the offsets of lines returned afterwards are relative to the new
// start of Held.
func (b *Buffer) Release(n int) {
	if n > 0 {
		b.r += n
		b.carried = false
	}
}

// Skip passes over the first n bytes of Rest, which belong to no line (such
// as a byte order mark), without releasing them; n must not exceed
// len(Rest()).
func (b *Buffer) Skip(n int) { b.next += n }

// Carried returns 1 when Held begins with the "\n" of a "\r\n" split between
// Writes whose "\r" ended the line before Held, and 0 otherwise. That byte
// belongs to no line: an owner that bounds what it holds does not count it.
func (b *Buffer) Carried() int {
	if b.carried {
		return 1
	}
	return 0
}

// Reset empties the Buffer for a fresh stream, keeping its limit and line
// ends, and its slice unless that has grown beyond RetainSize. It
// invalidates slices of Held and Rest.
func (b *Buffer) Reset() {
	buf := b.buf[:0]
	if cap(buf) > RetainSize {
		buf = make([]byte, 0, initialSize)
	}
	*b = Buffer{buf: buf, max: b.max, ends: b.ends}
}
