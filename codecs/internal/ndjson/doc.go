// Package ndjson splits a newline-delimited JSON byte stream into lines
// incrementally, for the streaming hot path of an LLM client (Ollama chat
// and generate streams).
//
// # Usage
//
// A Framer is fed the bytes read from the response body with Write and
// drained with Next until Next reports ok=false, after every Write:
//
//	f := ndjson.NewFramer(0)
//	for {
//		n, rerr := body.Read(buf)
//		f.Write(buf[:n])
//		for {
//			line, ok, err := f.Next()
//			if err != nil {
//				return err // *FrameError; sticky until Reset
//			}
//			if !ok {
//				break
//			}
//			if !line.Blank {
//				handle(line.Value)
//			}
//		}
//		if rerr != nil {
//			// At io.EOF, f.Pending() reports a truncated final line.
//			break
//		}
//	}
//
// Framing adds no latency: a line is returned by the first Next after the
// Write that delivered its "\n". In steady state a Framer allocates nothing
// per line: it reuses one input buffer, compacting it rather than
// reallocating, and returns lines whose slices alias that buffer.
//
// # Framing rules
//
// A line ends at "\n" and only there; "\r" is not a terminator, so a "\r\n"
// line end leaves a "\r" at the end of the line's bytes. Line.Raw holds the
// exact bytes of the line including its "\n". Line.Value is the line without
// its "\n" and with the whitespace JSON allows around a value (space, tab,
// "\r" and "\n"; jsonscan.TrimSpace) trimmed, so a "\r\n" line end and
// indentation are tolerated; "\v" and "\f", which no JSON decoder skips,
// stay in the value. A line
// whose Value is empty is Blank: servers send such lines as keepalives, and
// they are returned rather than skipped so that the caller can observe them.
// The framer does not parse or validate JSON, and bytes are not otherwise
// validated.
//
// Because every byte belongs to exactly one line, the concatenation of the Raw
// of every line returned, followed by the bytes still buffered, equals every
// byte written, byte for byte, however the input was split into Writes, and
// the lines returned do not depend on that split.
//
// A final line without a terminating "\n" is never returned by Next; the
// caller sees it through Pending and, at the end of the stream, takes it
// with Final (as the official Ollama clients parse what remains buffered at
// the end).
//
// # Limits
//
// NewFramer takes a byte limit (DefaultMaxLineBytes if not positive). Next
// returns a *FrameError once a line, excluding its "\n", exceeds the limit;
// an incomplete line is reported as soon as its buffered bytes exceed it, so
// buffered memory stays bounded by roughly the limit plus one Write. The
// error is sticky: Next keeps returning it, and Write discards its input,
// until Reset. The error text never includes stream bytes.
//
// # Validity and concurrency
//
// The Raw and Value slices of a Line alias the Framer's internal buffer and
// are valid only until the next call to Next, Write or Reset; copy them to
// keep them.
//
// A Framer is not safe for concurrent use. Use one Framer per stream, and
// Reset it (rather than sharing it) when a retry starts a fresh stream.
package ndjson
