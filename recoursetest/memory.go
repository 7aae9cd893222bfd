package recoursetest

import (
	"net/http"

	"github.com/recourse-dev/recourse/internal/memnet"
)

// NewMemoryServer starts a Server like NewServer, but on an in-memory
// network instead of a TCP port, so that a test can run it inside a
// testing/synctest bubble: its URL is "http://recoursetest.invalid", and it
// is reached only through the *http.Transport that Transport returns. The
// server and the client speak real HTTP/1.1 over a net.Pipe per
// connection, byte by byte as over loopback, but a goroutine that waits for
// the other side is durably blocked, so the bubble's clock advances past a
// backoff, a Retry-After or a stall limit at once and nothing sleeps.
//
// Call NewMemoryServer, Transport and Close inside the bubble (a server or
// transport made outside one cannot be used inside it); Close closes every
// connection, which ends the goroutines of the transports that dialled it.
// One difference from NewServer: a Reset step closes the connection
// without a TCP RST (a pipe has none), which a client sees as the
// connection closing before the response.
func NewMemoryServer(steps ...Step) *Server {
	s := &Server{
		closed: make(chan struct{}),
		left:   make(chan int, leftBuffer),
		steps:  append([]Step(nil), steps...),
	}
	s.srv, s.mem = memnet.Serve(http.HandlerFunc(s.serve))
	s.URL = s.srv.URL
	return s
}

// Transport returns a new *http.Transport whose every connection reaches
// s. For a memory server (NewMemoryServer) it dials the in-memory network,
// whatever the request's host; for a loopback server (NewServer) it is a
// clone of http.DefaultTransport. The caller may close its idle
// connections; Server.Close also ends them. Transport is safe for
// concurrent use.
func (s *Server) Transport() *http.Transport {
	if s.mem != nil {
		return s.mem.Transport()
	}
	return http.DefaultTransport.(*http.Transport).Clone()
}
