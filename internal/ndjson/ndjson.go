package ndjson

import "bytes"

// DefaultMaxLineBytes is the line size limit used by NewFramer when it is
// given a limit that is not positive: 8 MiB.
const DefaultMaxLineBytes = 8 << 20

// reasonLine is the FrameError.Reason of a line over the limit.
const reasonLine = "line exceeds limit"

// initialBufferSize is the capacity of a new Framer's input buffer.
const initialBufferSize = 4 << 10

// retainBufferSize is the largest buffer capacity Reset keeps for reuse; a
// larger buffer, grown for an unusually long line, is released.
const retainBufferSize = 1 << 20

// FrameError reports that a stream cannot be framed, for example because a
// line exceeds the Framer's limit. Its message never includes bytes of the
// stream.
type FrameError struct {
	// Reason describes the failure, for example "line exceeds limit".
	Reason string
}

// Error returns the reason prefixed with "ndjson: ".
func (e *FrameError) Error() string { return "ndjson: " + e.Reason }

// Line is one line of the stream. Its slices alias the Framer's buffer and
// are valid only until the next call to Next, Write or Reset.
type Line struct {
	// Raw is the exact bytes of the line, including its terminating "\n"
	// and any "\r" before it.
	Raw []byte
	// Value is the line without its terminator, with surrounding ASCII
	// whitespace trimmed.
	Value []byte
	// Blank reports whether Value is empty; servers send blank lines as
	// keepalives.
	Blank bool
}

// Framer splits a newline-delimited JSON byte stream into lines
// incrementally. The zero value is not usable; use NewFramer. A Framer is not
// safe for concurrent use.
type Framer struct {
	max int
	err error
	// buf[r:] holds the bytes not yet returned in a line's Raw; buf[r:searched]
	// is known to hold no "\n".
	buf      []byte
	r        int
	searched int
}

// NewFramer returns a Framer that fails with a *FrameError once a line
// exceeds maxLineBytes, not counting its "\n". A maxLineBytes that is not
// positive selects DefaultMaxLineBytes.
func NewFramer(maxLineBytes int) *Framer {
	if maxLineBytes <= 0 {
		maxLineBytes = DefaultMaxLineBytes
	}
	return &Framer{max: maxLineBytes, buf: make([]byte, 0, initialBufferSize)}
}

// Write appends p to the stream. It does not retain p after returning. After
// Next has returned an error, Write discards p. Write invalidates the slices
// of the last Line returned by Next.
func (f *Framer) Write(p []byte) {
	if f.err != nil || len(p) == 0 {
		return
	}
	if f.r > 0 {
		switch {
		case f.r == len(f.buf):
			f.shift(f.r, 0)
		case len(f.buf)+len(p) > cap(f.buf):
			// Compact instead of growing: move the unreturned bytes to
			// the front of the buffer.
			f.shift(f.r, copy(f.buf, f.buf[f.r:]))
		}
	}
	f.buf = append(f.buf, p...)
}

// shift drops the first n bytes of the buffer, leaving length m.
func (f *Framer) shift(n, m int) {
	f.buf = f.buf[:m]
	f.r -= n
	f.searched -= n
}

// Next returns the next complete line. It reports ok=false, with a nil
// error, when more bytes are needed. It returns a *FrameError when a line
// exceeds the limit; the error is sticky until Reset. Next invalidates the
// slices of the Line it returned previously.
func (f *Framer) Next() (line Line, ok bool, err error) {
	if f.err != nil {
		return Line{}, false, f.err
	}
	start := max(f.r, f.searched)
	i := bytes.IndexByte(f.buf[start:], '\n')
	if i < 0 {
		f.searched = len(f.buf)
		if len(f.buf)-f.r > f.max {
			return Line{}, false, f.fail(reasonLine)
		}
		return Line{}, false, nil
	}
	end := start + i // index of the "\n"
	if end-f.r > f.max {
		return Line{}, false, f.fail(reasonLine)
	}
	raw := f.buf[f.r : end+1 : end+1]
	f.r = end + 1
	f.searched = f.r
	value := trimSpace(raw[:len(raw)-1])
	return Line{Raw: raw, Value: value, Blank: len(value) == 0}, true, nil
}

// fail records a sticky error.
func (f *Framer) fail(reason string) error {
	f.err = &FrameError{Reason: reason}
	return f.err
}

// Pending reports whether an incomplete line with content is buffered:
// whether the bytes not yet returned in a line's Raw contain anything other
// than ASCII whitespace. Called after Next has reported ok=false at the end
// of the stream, it reports whether the stream was truncated mid-line.
func (f *Framer) Pending() bool {
	return len(trimSpace(f.buf[f.r:])) > 0
}

// Reset clears all state, including a sticky error, so that the Framer can
// frame a fresh stream. It invalidates the slices of the last Line returned
// by Next.
func (f *Framer) Reset() {
	if cap(f.buf) > retainBufferSize {
		f.buf = make([]byte, 0, initialBufferSize)
	}
	f.buf = f.buf[:0]
	f.err = nil
	f.r, f.searched = 0, 0
}

// trimSpace returns b without leading and trailing ASCII whitespace.
func trimSpace(b []byte) []byte {
	for len(b) > 0 && isSpace(b[0]) {
		b = b[1:]
	}
	for len(b) > 0 && isSpace(b[len(b)-1]) {
		b = b[:len(b)-1]
	}
	return b
}

// isSpace reports whether c is ASCII whitespace.
func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'
}
