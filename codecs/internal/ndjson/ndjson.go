package ndjson

import (
	"github.com/recourse-dev/recourse/codecs/internal/jsonscan"
	"github.com/recourse-dev/recourse/codecs/internal/linebuf"
)

// DefaultMaxLineBytes is the line size limit used by NewFramer when it is
// given a limit that is not positive: 8 MiB.
const DefaultMaxLineBytes = 8 << 20

// reasonLine is the FrameError.Reason of a line over the limit.
const reasonLine = "line exceeds limit"

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
	err error
	// lines holds the bytes not yet returned in a line's Raw.
	lines linebuf.Buffer
}

// NewFramer returns a Framer that fails with a *FrameError once a line
// exceeds maxLineBytes, not counting its "\n". A maxLineBytes that is not
// positive selects DefaultMaxLineBytes.
func NewFramer(maxLineBytes int) *Framer {
	if maxLineBytes <= 0 {
		maxLineBytes = DefaultMaxLineBytes
	}
	return &Framer{lines: linebuf.New(maxLineBytes, linebuf.LF)}
}

// Free gives the Framer's line buffer back for another Framer (see
// linebuf.Buffer.Free): its owner calls it once the stream is over and it
// keeps no slice of a Line. A Framer written after Free starts over.
func (f *Framer) Free() { f.lines.Free() }

// Write appends p to the stream. It does not retain p after returning. After
// Next has returned an error, Write discards p. Write invalidates the slices
// of the last Line returned by Next.
func (f *Framer) Write(p []byte) {
	if f.err != nil {
		return
	}
	f.lines.Write(p)
}

// Next returns the next complete line. It reports ok=false, with a nil
// error, when more bytes are needed. It returns a *FrameError when a line
// exceeds the limit; the error is sticky until Reset. Next invalidates the
// slices of the Line it returned previously.
func (f *Framer) Next() (line Line, ok bool, err error) {
	if f.err != nil {
		return Line{}, false, f.err
	}
	l, ok, err := f.lines.Next()
	if err != nil {
		return Line{}, false, f.fail(reasonLine)
	}
	if !ok {
		return Line{}, false, nil
	}
	raw := f.lines.Held()[:l.Next:l.Next]
	f.lines.Release(l.Next)
	value := jsonscan.TrimSpace(raw[l.Start:l.End])
	return Line{Raw: raw, Value: value, Blank: len(value) == 0}, true, nil
}

// fail records a sticky error.
func (f *Framer) fail(reason string) error {
	f.err = &FrameError{Reason: reason}
	return f.err
}

// Pending reports whether an incomplete line with content is buffered:
// whether the bytes not yet returned in a line's Raw contain anything other
// than JSON whitespace. Called after Next has reported ok=false at the end
// of the stream, it reports whether the stream was truncated mid-line.
func (f *Framer) Pending() bool {
	return len(jsonscan.TrimSpace(f.lines.Held())) > 0
}

// Final returns the final line of a stream that ended without its "\n":
// the bytes still buffered, when they hold anything other than JSON
// whitespace (Pending). It is called once at the end of the stream, after
// Next has reported ok=false; it reports ok=false when nothing is pending
// or after Next has returned an error. Its Raw holds the line's exact bytes
// (no terminator) and its Value the line with surrounding whitespace
// trimmed; the slices are valid until the next Write or Reset. The line is
// consumed: a second call reports ok=false. Whether an unterminated line is
// a frame or a cut is the caller's decision.
func (f *Framer) Final() (line Line, ok bool) {
	if f.err != nil || !f.Pending() {
		return Line{}, false
	}
	rest := f.lines.Rest()
	raw := rest[:len(rest):len(rest)]
	f.lines.Skip(len(rest))
	f.lines.Release(len(f.lines.Held()))
	return Line{Raw: raw, Value: jsonscan.TrimSpace(raw)}, true
}

// Reset clears all state, including a sticky error, so that the Framer can
// frame a fresh stream. It invalidates the slices of the last Line returned
// by Next.
func (f *Framer) Reset() {
	f.lines.Reset()
	f.err = nil
}
