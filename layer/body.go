package layer

import "io"

// RequestBody is a request body held in memory by a caller that has just
// encoded it (the native client sends one). The engine recognises it as the
// body of the request it is given and keeps its unread bytes for every
// attempt without reading and copying them; any other body is read once and
// copied (R2.3: the body is taken once per logical request either way). The
// bytes must not change once the body is made. Like any request body, a
// RequestBody is read and closed by one goroutine.
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
