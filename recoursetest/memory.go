package recoursetest

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"syscall"
)

// memoryHost is the host of every memory server's URL. It is in the
// reserved .invalid domain, so that no resolver ever answers for it and a
// request that misses the memory transport fails instead of leaving the
// machine.
const memoryHost = "recoursetest.invalid"

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
	s.srv, s.mem = serveMemory(http.HandlerFunc(s.serve))
	s.URL = s.srv.URL
	return s
}

// ServeMemory starts an httptest.Server for h on the in-memory network of
// NewMemoryServer and returns it with a new *http.Transport that reaches
// it, for a test that serves a handler of its own — a proxy or gateway
// built on recourse, a provider the test feeds by hand — inside a
// testing/synctest bubble. The server's URL is
// "http://recoursetest.invalid"; the transport dials the server whatever
// the request's host, and it can be cloned. The rules of NewMemoryServer
// apply: call ServeMemory inside the bubble, and close the server there.
// httptest.Server.Close waits for the requests still being served, so a
// test whose handler may still wait on a client calls
// CloseClientConnections first. ServeMemory panics only as
// httptest.NewUnstartedServer does.
func ServeMemory(h http.Handler) (*httptest.Server, *http.Transport) {
	ts, l := serveMemory(h)
	return ts, l.transport()
}

// serveMemory starts an httptest.Server for h on a new memory listener.
func serveMemory(h http.Handler) (*httptest.Server, *memoryListener) {
	l := &memoryListener{conns: make(chan net.Conn), done: make(chan struct{})}
	ts := httptest.NewUnstartedServer(h)
	_ = ts.Listener.Close()
	ts.Listener = l
	ts.Start()
	ts.URL = "http://" + memoryHost
	return ts, l
}

// Transport returns a new *http.Transport whose every connection reaches
// s. For a memory server (NewMemoryServer) it dials the in-memory network,
// whatever the request's host; for a loopback server (NewServer) it is a
// clone of http.DefaultTransport. The caller may close its idle
// connections; Server.Close also ends them. Transport is safe for
// concurrent use.
func (s *Server) Transport() *http.Transport {
	if s.mem != nil {
		return s.mem.transport()
	}
	return http.DefaultTransport.(*http.Transport).Clone()
}

// transport returns a clone of http.DefaultTransport whose every
// connection is dialled on l.
func (l *memoryListener) transport() *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.Proxy = nil
	t.DialContext = l.dial
	t.DialTLSContext = nil
	t.ForceAttemptHTTP2 = false
	return t
}

// memoryListener is a net.Listener whose connections are the server ends
// of net.Pipes made by dial.
type memoryListener struct {
	conns chan net.Conn
	done  chan struct{}
	once  sync.Once
}

// errRefused is what dialling a closed memory server returns, as dialling
// a closed port does.
var errRefused = &net.OpError{Op: "dial", Net: "memory", Err: syscall.ECONNREFUSED}

// dial hands the server end of a new pipe to Accept and returns the client
// end.
func (l *memoryListener) dial(ctx context.Context, _, _ string) (net.Conn, error) {
	client, server := net.Pipe()
	select {
	case l.conns <- server:
		return client, nil
	case <-l.done:
	case <-ctx.Done():
		_ = client.Close()
		_ = server.Close()
		return nil, ctx.Err()
	}
	_ = client.Close()
	_ = server.Close()
	return nil, errRefused
}

func (l *memoryListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *memoryListener) Close() error {
	l.once.Do(func() { close(l.done) })
	return nil
}

func (l *memoryListener) Addr() net.Addr { return memoryAddr{} }

// memoryAddr is the address of every memory listener.
type memoryAddr struct{}

func (memoryAddr) Network() string { return "memory" }
func (memoryAddr) String() string  { return memoryHost }
