// Package sse splits a Server-Sent Events byte stream into events
// incrementally, for the streaming hot path of an LLM client (OpenAI-style
// and oMLX chat-completion streams).
//
// # Usage
//
// A Framer is fed the bytes read from the response body with Write and
// drained with Next until Next reports ok=false, after every Write:
//
//	f := sse.NewFramer(0)
//	for {
//		n, rerr := body.Read(buf)
//		f.Write(buf[:n])
//		for {
//			ev, ok, err := f.Next()
//			if err != nil {
//				return err // *FrameError; sticky until Reset
//			}
//			if !ok {
//				break
//			}
//			handle(ev)
//		}
//		if rerr != nil {
//			// At io.EOF, f.Pending() reports a truncated final event.
//			break
//		}
//	}
//
// Framing adds no latency: an event is returned by the first Next after the
// Write that delivered its last byte; no look-ahead byte is ever awaited. In
// steady state a Framer allocates nothing per event: it reuses one input
// buffer, compacting it rather than reallocating, and returns events whose
// slices alias that buffer.
//
// # The decoders' front end
//
// The stream decoders of the codecs (chat completions, Responses, Messages,
// Gemini) do not drive a Framer themselves: each holds a Front, which tells
// a plain JSON document (a provider's error answer sent in place of an
// event stream) from an event stream, keeps the first MaxDocument bytes of
// such a document for the decoder's End, frames the stream and hands every
// complete event to the decoder's callback, allocating nothing per event.
// A decoder's Write is Front.Decode with its queue's end and its event
// method:
//
//	if err := d.front.Decode(p, d.q.Ended, d.event); err != nil {
//		d.push(codec.Frame{Err: err}) // oversized SSE event
//	}
//
// # Framing rules
//
// The rules are those of the WHATWG HTML "event stream interpretation"
// (https://html.spec.whatwg.org/multipage/server-sent-events.html), except
// for the whitespace tolerance described below:
//
//   - A line ends at "\r\n", "\n" or "\r". A "\r" that ends one Write and a
//     "\n" that begins the next form a single "\r\n" terminator; they never
//     produce an extra blank line.
//   - A line whose first character is ':' is a comment; it is counted in
//     Event.Comments and otherwise ignored.
//   - Any other non-blank line is a field. The name runs up to the first ':'
//     and the value follows it, with one optional leading space removed;
//     a line without ':' is a field name with an empty value.
//   - Values of "data" fields are joined with "\n" into Event.Data. The last
//     "event" field sets Event.Event. "id", "retry" and unknown fields are
//     ignored (but make the event non-blank).
//   - A blank line dispatches the event accumulated since the previous one,
//     provided it has at least one non-blank line (a field or a comment). An
//     event with only comments, or with no data and no event field, is a
//     keepalive (Event.Keepalive).
//   - One UTF-8 byte order mark at the very start of the stream is skipped.
//     Bytes are otherwise not validated: SSE has no invalid byte sequences at
//     the framing level, and decoding Data is the caller's concern.
//   - An incomplete event at the end of the stream is never dispatched; the
//     caller sees it through Pending.
//
// # Deliberate whitespace tolerance
//
// Providers emit indented lines such as "  data: {...}". Spaces and tabs
// before the start of a line are therefore insignificant: they are removed
// before the line is classified, so "  data: x" is a data field,
// "\t: ping" is a comment, and a line holding only spaces and tabs is a blank
// line that dispatches. WHATWG would instead treat such lines as fields with
// unknown names and ignore them. Whitespace anywhere else keeps its WHATWG
// meaning: "data :x" is an unknown field named "data ", and in "data:  x" only
// the first space after the colon is removed.
//
// # Raw bytes and stray blank lines
//
// Event.Raw holds the exact bytes of an event, from its first line through
// its terminating blank line inclusive. Blank lines that dispatch nothing
// (because no non-blank line precedes them) are not reported on their own:
// their bytes are attached to the front of the next event's Raw, as is the
// byte order mark. Consequently the concatenation of the Raw of every event
// returned, followed by the bytes still buffered, equals every byte written,
// byte for byte, however the input was split into Writes.
//
// The single exception to split-independence concerns only the placement of
// one byte: when a Write ends with the "\r" of a "\r\n" blank line that
// terminates an event, the event is dispatched at once (adding no latency)
// and its Raw ends with that "\r"; the "\n" arriving in the next Write is
// consumed as the rest of the terminator but accounted at the front of the
// next event's Raw. The events' other fields are unaffected, and the
// concatenation property still holds.
//
// # Limits
//
// NewFramer takes a byte limit (DefaultMaxEventBytes if not positive). Next
// returns a *FrameError if a single line, excluding its terminator, exceeds
// the limit, or if an event exceeds it, measured from the first byte of its
// Raw (including stray blank lines, but not a "\n" carried over as described
// above) up to, but not including, its terminating blank line. An incomplete
// event is reported as soon as its buffered bytes alone exceed the limit, so
// buffered memory stays bounded by roughly the limit plus one Write. The
// error is sticky: Next keeps returning it, and Write discards its input,
// until Reset. The error text never includes stream bytes.
//
// # Validity and concurrency
//
// The Raw and Data slices of an Event alias the Framer's internal buffers
// and are valid only until the next call to Next, Write or Reset; copy them
// to keep them. Event.Event is an ordinary string and stays valid.
//
// A Framer is not safe for concurrent use. Use one Framer per stream, and
// Reset it (rather than sharing it) when a retry starts a fresh stream.
package sse
