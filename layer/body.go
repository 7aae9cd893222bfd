package layer

import "io"

// RequestBody is a request body held in memory by a caller that has just
// encoded it and built the request for this one call (the native client
// sends one). The engine recognises it as the body of the request it is
// given and keeps its unread bytes and the request's header map for every
// attempt as they are, without copying them; any other request has its body
// read and copied and its header cloned (R2.3: body and headers are taken
// once per logical request either way). A caller that sends a RequestBody
// must therefore change neither its bytes nor the request's header
// afterwards. Like any request body, a RequestBody is read and closed by
// one goroutine.
type RequestBody struct {
	b   []byte
	off int
}

// NewRequestBody returns a body that reads b. It does not copy b; the caller
// must not change b afterwards.
func NewRequestBody(b []byte) *RequestBody { return &RequestBody{b: b} }

// Read reads the next bytes of the body; it returns io.EOF at the end.
func (r *RequestBody) Read(p []byte) (int, error) {
	if r.off >= len(r.b) {
		return 0, io.EOF
	}
	n := copy(p, r.b[r.off:])
	r.off += n
	return n, nil
}

// Close does nothing and returns nil: the body is in memory.
func (r *RequestBody) Close() error { return nil }

// Unread returns the bytes not read yet. They are the body's own, not a
// copy, and must not be changed.
func (r *RequestBody) Unread() []byte { return r.b[r.off:] }
