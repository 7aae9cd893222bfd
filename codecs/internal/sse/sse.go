package sse

import (
	"bytes"

	"github.com/recourse-dev/recourse/codecs/internal/jsonscan"
	"github.com/recourse-dev/recourse/codecs/internal/linebuf"
)

// DefaultMaxEventBytes is the event and line size limit used by NewFramer
// when it is given a limit that is not positive: 8 MiB.
const DefaultMaxEventBytes = 8 << 20

// Reasons reported in FrameError.Reason.
const (
	reasonEvent = "event exceeds limit"
	reasonLine  = "line exceeds limit"
)

// retainBufferSize is the largest capacity of the joined-data buffer that
// Reset keeps for reuse; a larger one, grown for an unusually large event,
// is released. The input buffer follows the same rule
// (linebuf.RetainSize).
const retainBufferSize = linebuf.RetainSize

// bom is the UTF-8 byte order mark, skipped once at the start of a stream.
const bom = "\xEF\xBB\xBF"

// FrameError reports that a stream cannot be framed, for example because an
// event or a line exceeds the Framer's limit. Its message never includes
// bytes of the stream.
type FrameError struct {
	// Reason describes the failure, for example "event exceeds limit".
	Reason string
}

// Error returns the reason prefixed with "sse: ".
func (e *FrameError) Error() string { return "sse: " + e.Reason }

// Event is one dispatched Server-Sent Event. Its slices alias the Framer's
// buffers and are valid only until the next call to Next, Write or Reset.
type Event struct {
	// Raw is the exact bytes of this event in the stream, from its first
	// line through its terminating blank line inclusive, preceded by any
	// stray blank lines (and, for the first event, a byte order mark) that
	// came before it.
	Raw []byte
	// Data is the values of the event's data fields joined with "\n"; it
	// is nil when HasData is false.
	Data []byte
	// HasData reports whether the event has at least one data field, even
	// an empty one.
	HasData bool
	// Event is the value of the event's last "event" field, or "" if it
	// has none.
	Event string
	// Comments is the number of comment lines (lines beginning with ':')
	// in the event.
	Comments int
	// Done reports whether Data, with surrounding JSON whitespace (space,
	// tab, "\r", "\n"; jsonscan.TrimSpace) trimmed, is exactly "[DONE]",
	// the OpenAI end-of-stream sentinel.
	Done bool
}

// Keepalive reports whether the event carries no data and no event field,
// such as a comment-only ": keep-alive" event.
func (e Event) Keepalive() bool { return !e.HasData && e.Event == "" }

// Framer splits a Server-Sent Events byte stream into events incrementally.
// The zero value is not usable; use NewFramer. A Framer is not safe for
// concurrent use.
type Framer struct {
	max int
	err error

	// lines holds the bytes not yet returned in an event's Raw: the
	// current event region. Offsets below are relative to its start, so
	// that compacting the buffer leaves them valid.
	lines linebuf.Buffer
	// bomDone is set once the start of the stream has been checked for a
	// byte order mark.
	bomDone bool

	// State of the event being accumulated.
	content    bool // a non-blank line has been parsed
	comments   int
	nData      int
	dataStart  int // first data value, while nData == 1
	dataEnd    int
	data       []byte // joined data, once nData > 1
	hasEvent   bool
	eventStart int // value of the last event field
	eventEnd   int
	// lastEvent caches the most recent event name so that a stream that
	// repeats it does not allocate a string per event.
	lastEvent string
}

// NewFramer returns a Framer that fails with a *FrameError once a line or an
// event exceeds maxEventBytes. A maxEventBytes that is not positive selects
// DefaultMaxEventBytes.
func NewFramer(maxEventBytes int) *Framer {
	if maxEventBytes <= 0 {
		maxEventBytes = DefaultMaxEventBytes
	}
	return &Framer{max: maxEventBytes, lines: linebuf.New(maxEventBytes, linebuf.CROrLF)}
}

// Free gives the Framer's line buffer back for another Framer (see
// linebuf.Buffer.Free): its owner calls it once the stream is over and it
// keeps no slice of an Event. A Framer written after Free starts over.
func (f *Framer) Free() { f.lines.Free() }

// Write appends p to the stream. It does not retain p after returning. After
// Next has returned an error, Write discards p. Write invalidates the slices
// of the last Event returned by Next.
func (f *Framer) Write(p []byte) {
	if f.err != nil {
		return
	}
	f.lines.Write(p)
}

// Next returns the next complete event. It reports ok=false, with a nil
// error, when more bytes are needed. It returns a *FrameError when a line or
// an event exceeds the limit; the error is sticky until Reset. Next
// invalidates the slices of the Event it returned previously.
func (f *Framer) Next() (ev Event, ok bool, err error) {
	if f.err != nil {
		return Event{}, false, f.err
	}
	if !f.bomDone {
		held := f.lines.Held()
		if len(held) < len(bom) && bytes.HasPrefix([]byte(bom), held) {
			return Event{}, false, nil // too few bytes to decide
		}
		f.bomDone = true
		if bytes.HasPrefix(held, []byte(bom)) {
			f.lines.Skip(len(bom))
		}
	}
	for {
		l, ok, err := f.lines.Next()
		if err != nil {
			return Event{}, false, f.fail(reasonLine)
		}
		if !ok {
			break
		}
		if f.parseLine(l.Start, l.End) {
			continue
		}
		// A blank line.
		if !f.content {
			continue // stray: its bytes join the next event's Raw
		}
		if l.Start-f.lines.Carried() > f.max {
			return Event{}, false, f.fail(reasonEvent)
		}
		return f.dispatch(l.Next), true, nil
	}
	// No complete event is buffered: bound the incomplete one.
	held, partial := f.lines.Held(), f.lines.Rest()
	if n := len(held) - f.lines.Carried(); n > f.max {
		// A partial line of only spaces and tabs may yet turn out to be
		// the terminating blank line, which the limit excludes.
		if isBlank(partial) {
			n -= len(partial)
		}
		if n > f.max {
			return Event{}, false, f.fail(reasonEvent)
		}
	}
	return Event{}, false, nil
}

// parseLine interprets the line Held()[ls:le], which excludes its
// terminator. It returns false if the line is blank.
func (f *Framer) parseLine(ls, le int) bool {
	held := f.lines.Held()
	for ls < le && (held[ls] == ' ' || held[ls] == '\t') {
		ls++
	}
	if ls == le {
		return false
	}
	f.content = true
	line := held[ls:le]
	if line[0] == ':' {
		f.comments++
		return true
	}
	name := line
	vs := le // value start
	if c := bytes.IndexByte(line, ':'); c >= 0 {
		name = line[:c]
		vs = ls + c + 1
		if vs < le && held[vs] == ' ' {
			vs++
		}
	}
	switch string(name) {
	case "data":
		switch f.nData {
		case 0:
			f.dataStart, f.dataEnd = vs, le
		case 1:
			f.data = append(f.data[:0], held[f.dataStart:f.dataEnd]...)
			fallthrough
		default:
			f.data = append(f.data, '\n')
			f.data = append(f.data, held[vs:le]...)
		}
		f.nData++
	case "event":
		f.hasEvent = true
		f.eventStart, f.eventEnd = vs, le
	}
	return true
}

// dispatch returns the accumulated event, whose Raw ends at Held()[end],
// and starts a new event region there.
func (f *Framer) dispatch(end int) Event {
	held := f.lines.Held()
	ev := Event{
		Raw:      held[:end:end],
		HasData:  f.nData > 0,
		Comments: f.comments,
	}
	switch {
	case f.nData == 1:
		ev.Data = held[f.dataStart:f.dataEnd:f.dataEnd]
	case f.nData > 1:
		ev.Data = f.data[:len(f.data):len(f.data)]
	}
	ev.Done = ev.HasData && string(jsonscan.TrimSpace(ev.Data)) == "[DONE]"
	if f.hasEvent {
		if name := held[f.eventStart:f.eventEnd]; string(name) != f.lastEvent {
			f.lastEvent = string(name)
		}
		ev.Event = f.lastEvent
	}
	f.lines.Release(end)
	f.resetEvent()
	return ev
}

// resetEvent clears the state of the event being accumulated.
func (f *Framer) resetEvent() {
	f.content = false
	f.comments = 0
	f.nData = 0
	f.hasEvent = false
}

// fail records a sticky error.
func (f *Framer) fail(reason string) error {
	f.err = &FrameError{Reason: reason}
	return f.err
}

// Pending reports whether an incomplete event is buffered: whether the bytes
// not yet returned in an event's Raw contain anything other than line
// terminators, spaces, tabs and the byte order mark that starts the stream.
// Called after Next has reported ok=false at the end of the stream, it
// reports whether the stream was truncated mid-event.
func (f *Framer) Pending() bool {
	if f.content {
		return true
	}
	rest := f.lines.Rest()
	if !f.bomDone {
		rest = bytes.TrimPrefix(rest, []byte(bom))
	}
	for _, c := range rest {
		if c != ' ' && c != '\t' && c != '\r' && c != '\n' {
			return true
		}
	}
	return false
}

// Reset clears all state, including a sticky error, so that the Framer can
// frame a fresh stream. It invalidates the slices of the last Event returned
// by Next.
func (f *Framer) Reset() {
	f.lines.Reset()
	if cap(f.data) > retainBufferSize {
		f.data = nil
	}
	f.err = nil
	f.bomDone = false
	f.resetEvent()
}

// isBlank reports whether b holds only spaces and tabs.
func isBlank(b []byte) bool {
	for _, c := range b {
		if c != ' ' && c != '\t' {
			return false
		}
	}
	return true
}
