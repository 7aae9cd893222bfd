package retry

import (
	"bytes"
	"io"
	"math"
	"net/http"

	"github.com/recourse-dev/recourse/layer"
)

// request is a logical completion's request, taken once (R2.3): every
// attempt sends these bytes and headers.
type request struct {
	req     *http.Request
	body    []byte
	header  http.Header
	info    layer.RequestInfo
	getBody func() (io.ReadCloser, error)
}

// read takes req's body and headers. facts, when the caller knew them (the
// native client), are the request facts; otherwise the codec describes the
// body (drop-in calls). A request whose body is a *layer.RequestBody was
// built for this call alone: its body bytes and header are kept as they
// are; any other request's body is read and copied and its header cloned.
func (in *request) read(req *http.Request, codec layer.Codec, facts *layer.RequestInfo) error {
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
	case codec != nil:
		if info, err := codec.Describe(in.body); err == nil {
			in.info = info
		} else {
			in.info = layer.RequestInfo{Operation: layer.Ordinary}
		}
	default:
		in.info = layer.RequestInfo{Operation: layer.Ordinary}
	}
	body := in.body
	in.getBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	return nil
}

// forAttempt returns the request of attempt a: a shallow copy with the
// call's own header and body, a fresh reader over the call's body bytes
// that no earlier attempt read. The layers
// below never change a request they are given (layer.Layer): capture
// snapshots copies and the sender only reads it, so the call's header
// stays byte-identical for every attempt (R2.3).
func (in *request) forAttempt(ctxWithAttempt *http.Request, body io.ReadCloser) *http.Request {
	areq := ctxWithAttempt
	areq.Header = in.header
	areq.Body = body
	areq.GetBody = in.getBody
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
	return readUpTo(r, math.MaxInt64, hint)
}

// readUpTo reads at most limit bytes of r. Its first buffer is sized from
// hint (a Content-Length, bounded by limit; 0 or less means unknown) and
// grows by doubling, never past limit, so a body costs O(its size) and at
// most about twice limit however it arrives.
func readUpTo(r io.Reader, limit, hint int64) ([]byte, error) {
	size := int64(512)
	if hint > 0 {
		size = hint + 1 // +1: the read that sees EOF needs room
	}
	b := make([]byte, 0, min(size, limit))
	for int64(len(b)) < limit {
		if len(b) == cap(b) {
			nc := min(2*int64(cap(b))+512, limit)
			if nc > limit-nc {
				nc = limit // one more doubling would reach it: go there now
			}
			nb := make([]byte, len(b), nc)
			copy(nb, b)
			b = nb
		}
		n, err := r.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err != nil {
			if err == io.EOF {
				err = nil
			}
			return b, err
		}
	}
	return b, nil
}
