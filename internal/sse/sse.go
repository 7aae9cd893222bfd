package sse

import "bytes"

// DefaultMaxEventBytes is the event and line size limit used by NewFramer
// when it is given a limit that is not positive: 8 MiB.
const DefaultMaxEventBytes = 8 << 20

// Reasons reported in FrameError.Reason.
const (
	reasonEvent = "event exceeds limit"
	reasonLine  = "line exceeds limit"
)

// initialBufferSize is the capacity of a new Framer's input buffer.
const initialBufferSize = 4 << 10

// retainBufferSize is the largest buffer capacity Reset keeps for reuse; a
// larger buffer, grown for an unusually large event, is released.
const retainBufferSize = 1 << 20

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
	// Done reports whether Data, with surrounding ASCII whitespace
	// trimmed, is exactly "[DONE]", the OpenAI end-of-stream sentinel.
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

	// buf[r:] holds the bytes not yet returned in an event's Raw: the
	// current event region. Lines in buf[r:scan] have been parsed.
	buf  []byte
	r    int
	scan int
	// searched is the offset up to which the partial line starting at
	// scan is known to hold no line terminator.
	searched int
	// skipLF is set when the last parsed line ended with a "\r" that was
	// the last buffered byte; a "\n" arriving next completes "\r\n".
	skipLF bool
	// carry is 1 when the current region begins with such a "\n" whose
	// "\r" ended the previous event; it is not counted against the limit.
	carry int
	// bomDone is set once the start of the stream has been checked for a
	// byte order mark.
	bomDone bool

	// State of the event being accumulated. Offsets are relative to r so
	// that compacting buf leaves them valid.
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
	return &Framer{max: maxEventBytes, buf: make([]byte, 0, initialBufferSize)}
}

// Write appends p to the stream. It does not retain p after returning. After
// Next has returned an error, Write discards p. Write invalidates the slices
// of the last Event returned by Next.
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
	f.scan -= n
	f.searched -= n
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
		if len(f.buf) < len(bom) && bytes.HasPrefix([]byte(bom), f.buf) {
			return Event{}, false, nil // too few bytes to decide
		}
		f.bomDone = true
		if bytes.HasPrefix(f.buf, []byte(bom)) {
			f.scan = len(bom)
		}
	}
	for {
		if f.skipLF {
			if f.scan == len(f.buf) {
				break
			}
			f.skipLF = false
			if f.buf[f.scan] == '\n' {
				if f.scan == f.r {
					f.carry = 1
				}
				f.scan++
				continue
			}
		}
		start := max(f.scan, f.searched)
		i := lineEnd(f.buf[start:])
		if i < 0 {
			f.searched = len(f.buf)
			break
		}
		ls, le := f.scan, start+i
		next := le + 1
		if f.buf[le] == '\r' {
			switch {
			case next == len(f.buf):
				f.skipLF = true
			case f.buf[next] == '\n':
				next++
			}
		}
		f.scan, f.searched = next, next
		if le-ls > f.max {
			return Event{}, false, f.fail(reasonLine)
		}
		if f.parseLine(ls, le) {
			continue
		}
		// A blank line.
		if !f.content {
			continue // stray: its bytes join the next event's Raw
		}
		if ls-f.r-f.carry > f.max {
			return Event{}, false, f.fail(reasonEvent)
		}
		return f.dispatch(next), true, nil
	}
	// No complete event is buffered: bound the incomplete one.
	partial := f.buf[f.scan:]
	if len(partial) > f.max {
		return Event{}, false, f.fail(reasonLine)
	}
	if n := len(f.buf) - f.r - f.carry; n > f.max {
		// A partial line of only spaces and tabs may yet turn out to be
		// the terminating blank line, which the limit excludes.
		if isBlank(partial) {
			n = f.scan - f.r - f.carry
		}
		if n > f.max {
			return Event{}, false, f.fail(reasonEvent)
		}
	}
	return Event{}, false, nil
}

// lineEnd returns the index of the first "\r" or "\n" in b, or -1.
func lineEnd(b []byte) int {
	i := bytes.IndexByte(b, '\n')
	if i < 0 {
		return bytes.IndexByte(b, '\r')
	}
	if j := bytes.IndexByte(b[:i], '\r'); j >= 0 {
		return j
	}
	return i
}

// parseLine interprets the line buf[ls:le], which excludes its terminator.
// It returns false if the line is blank.
func (f *Framer) parseLine(ls, le int) bool {
	for ls < le && (f.buf[ls] == ' ' || f.buf[ls] == '\t') {
		ls++
	}
	if ls == le {
		return false
	}
	f.content = true
	line := f.buf[ls:le]
	if line[0] == ':' {
		f.comments++
		return true
	}
	name := line
	vs := le // value start
	if c := bytes.IndexByte(line, ':'); c >= 0 {
		name = line[:c]
		vs = ls + c + 1
		if vs < le && f.buf[vs] == ' ' {
			vs++
		}
	}
	switch string(name) {
	case "data":
		switch f.nData {
		case 0:
			f.dataStart, f.dataEnd = vs-f.r, le-f.r
		case 1:
			f.data = append(f.data[:0], f.buf[f.r+f.dataStart:f.r+f.dataEnd]...)
			fallthrough
		default:
			f.data = append(f.data, '\n')
			f.data = append(f.data, f.buf[vs:le]...)
		}
		f.nData++
	case "event":
		f.hasEvent = true
		f.eventStart, f.eventEnd = vs-f.r, le-f.r
	}
	return true
}

// dispatch returns the accumulated event, whose Raw ends at buf[end], and
// starts a new event region there.
func (f *Framer) dispatch(end int) Event {
	ev := Event{
		Raw:      f.buf[f.r:end:end],
		HasData:  f.nData > 0,
		Comments: f.comments,
	}
	switch {
	case f.nData == 1:
		ev.Data = f.buf[f.r+f.dataStart : f.r+f.dataEnd : f.r+f.dataEnd]
	case f.nData > 1:
		ev.Data = f.data[:len(f.data):len(f.data)]
	}
	ev.Done = ev.HasData && string(trimSpace(ev.Data)) == "[DONE]"
	if f.hasEvent {
		if name := f.buf[f.r+f.eventStart : f.r+f.eventEnd]; string(name) != f.lastEvent {
			f.lastEvent = string(name)
		}
		ev.Event = f.lastEvent
	}
	f.r = end
	f.resetEvent()
	return ev
}

// resetEvent clears the state of the event being accumulated.
func (f *Framer) resetEvent() {
	f.carry = 0
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
	rest := f.buf[f.scan:]
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
	if cap(f.buf) > retainBufferSize {
		f.buf = make([]byte, 0, initialBufferSize)
	}
	if cap(f.data) > retainBufferSize {
		f.data = nil
	}
	f.buf = f.buf[:0]
	f.err = nil
	f.r, f.scan, f.searched = 0, 0, 0
	f.skipLF = false
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
