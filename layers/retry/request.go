package retry

import (
	"bytes"
	"io"
	"math"
	"net/http"

	"github.com/recourse-dev/recourse/codec"
	"github.com/recourse-dev/recourse/layer"
)

// request is a logical completion's request, taken once (R2.3): every
// attempt sends these bytes and headers.
type request struct {
	req     *http.Request
	body    []byte
	header  http.Header
	info    codec.RequestInfo
	getBody func() (io.ReadCloser, error)
}

// read takes req's body and headers. facts, when the caller knew them (the
// native client), are the request facts; otherwise the codec describes the
// body (drop-in calls). A request whose body is a *layer.RequestBody was
// built for this call alone: its body bytes and header are kept as they
// are; any other request's body is read and copied and its header cloned.
func (in *request) read(req *http.Request, cdc codec.Codec, facts *codec.RequestInfo) error {
	in.req = req
	if rb, ok := req.Body.(*layer.RequestBody); ok {
		in.body, in.header = rb.Unread(), req.Header
		rb.Close()
	} else {
		if req.Body != nil && req.Body != http.NoBody {
			b, err := readAll(req.Body, req.ContentLength)
			req.Body.Close()
			if err != nil {
				return err
			}
			in.body = b
		}
		in.header = req.Header.Clone()
	}
	switch {
	case facts != nil:
		in.info = *facts
	case cdc != nil:
		if info, err := codec.DescribeRequest(cdc, req.URL, in.body); err == nil {
			in.info = info
		} else {
			in.info = codec.RequestInfo{Operation: codec.Ordinary}
		}
	default:
		in.info = codec.RequestInfo{Operation: codec.Ordinary}
	}
	return nil
}

// replay returns the replay function (GetBody) of the call's body, made on
// first use: a chain whose attempts nobody replays never builds it.
func (in *request) replay() func() (io.ReadCloser, error) {
	if in.getBody == nil {
		body := in.body
		in.getBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	}
	return in.getBody
}

// forAttempt returns the request of attempt a: a shallow copy with the
// call's own header and body, a fresh reader over the call's body bytes
// that no earlier attempt read, and, when replayable, the call's replay
// function (GetBody) for a stage below that reads the body again (capture
// for an OnWire hook, a per-attempt layer); otherwise GetBody is nil, and
// the sender sends the request as it is (R2.8). The layers
// below never change a request they are given (layer.Layer): capture
// snapshots copies and the sender only reads it, so the call's header
// stays byte-identical for every attempt (R2.3).
func (in *request) forAttempt(ctxWithAttempt *http.Request, body io.ReadCloser, replayable bool) *http.Request {
	areq := ctxWithAttempt
	areq.Header = in.header
	areq.Body = body
	areq.GetBody = nil
	if replayable {
		areq.GetBody = in.replay()
	}
	areq.ContentLength = int64(len(in.body))
	return areq
}

// bytesBody is a complete response body held in memory: one allocation
// instead of io.NopCloser over a bytes.Reader. It keeps WriteTo.
type bytesBody struct{ bytes.Reader }

func newBytesBody(b []byte) *bytesBody {
	r := &bytesBody{}
	r.Reset(b)
	return r
}

// Close does nothing: the body is in memory.
func (*bytesBody) Close() error { return nil }

// readAll reads r to its end, its first buffer sized from hint (a request's
// Content-Length; 0 or less means unknown). A hint above 1 MiB is not
// trusted to size a buffer: the caller set it, and the bytes may be fewer.
func readAll(r io.Reader, hint int64) ([]byte, error) {
	if hint > 1<<20 {
		hint = 0
	}
	b, _, err := readUpTo(r, math.MaxInt64-1, hint)
	return b, err
}

// readChunk is the size past which readUpTo stops regrowing one buffer and
// reads into a list of chunks of this size instead. It is at least
// MaxEvidenceBytes, so the first chunk holds a failure's evidence.
const readChunk = MaxEvidenceBytes

// readUpTo reads r to its end, or until it has read more than max bytes:
// then over is true and b is only the body's first bytes (at least
// min(max, readChunk) of them), for evidence. Its first buffer is sized from
// hint (a Content-Length, bounded by max; 0 or less means unknown) and grows
// by doubling up to readChunk; a longer body is read into readChunk-sized
// chunks and joined once at its end. So a body of n bytes costs about 2n,
// and one over max costs about max however it arrives, never the 2×max of a
// buffer doubled up to it (R4.9).
func readUpTo(r io.Reader, max, hint int64) (b []byte, over bool, err error) {
	limit := max + 1 // the byte after max proves the body is over it
	size := int64(512)
	if hint > 0 {
		size = hint + 1 // +1: the read that sees EOF needs room
	}
	b = make([]byte, 0, min(size, limit))
	var (
		chunks [][]byte // full chunks before b, once b stopped regrowing
		total  int64    // bytes in chunks
	)
	for total+int64(len(b)) < limit {
		if len(b) == cap(b) {
			if c := int64(cap(b)); chunks == nil && c < readChunk {
				nb := make([]byte, len(b), min(2*c+512, readChunk, limit))
				copy(nb, b)
				b = nb
			} else {
				chunks = append(chunks, b)
				total += int64(len(b))
				b = make([]byte, 0, min(readChunk, limit-total))
			}
		}
		n, rerr := r.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if rerr != nil {
			if rerr != io.EOF {
				err = rerr
			}
			break
		}
	}
	if total+int64(len(b)) > max {
		if chunks != nil {
			return chunks[0], true, err
		}
		return b[:max], true, err
	}
	if chunks == nil {
		return b, false, err
	}
	out := make([]byte, 0, total+int64(len(b)))
	for _, c := range chunks {
		out = append(out, c...)
	}
	return append(out, b...), false, err
}
