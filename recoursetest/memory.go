package recoursetest

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
)

// memoryDomain is the domain of every memory server's host: sN.memoryDomain
// for the N-th server of the process. It is in the reserved .invalid
// domain, so that no resolver ever answers for it and a request that
// misses the memory transport fails instead of leaving the machine.
const memoryDomain = "recoursetest.invalid"

// The memory network: the listener of every open memory server, by host.
var (
	memoryHosts sync.Map // host → *memoryListener
	memorySeq   atomic.Uint64
)

// NewMemoryServer starts a Server like NewServer, but on an in-memory
// network instead of a TCP port, so that a test can run it inside a
// testing/synctest bubble: its URL is "http://sN.recoursetest.invalid",
// the N-th memory server of the process (so that no two servers share an
// upstream, say in a quota's store), and it is reached only through the
// *http.Transport that Transport returns, which reaches every open memory
// server by its host (a chain can fall back from one to another). The
// server and the client speak real HTTP/1.1 over a net.Pipe per
// connection, byte by byte as over loopback, but a goroutine that waits for
// the other side is durably blocked, so the bubble's clock advances past a
// backoff, a Retry-After or a stall limit at once and nothing sleeps.
//
// Call NewMemoryServer, Transport and Close inside the bubble, and make a
// Step's Gate channel there too: a server or transport made outside one
// cannot be used inside it (the runtime stops the test binary), and a wait
// on a channel made outside never lets the bubble's clock advance. A chain
// must be given the transport (chain.WithTransport): without it the chain
// would look the name up. Close closes every connection, which ends the
// goroutines of the transports that dialled it.
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
// "http://sN.recoursetest.invalid"; the transport reaches every open
// memory server by its host, and it can be cloned. The rules of NewMemoryServer
// apply: call ServeMemory inside the bubble, and close the server there.
// httptest.Server.Close waits for the requests still being served, so a
// test whose handler may still wait on a client calls
// CloseClientConnections first. ServeMemory panics only as
// httptest.NewUnstartedServer does.
func ServeMemory(h http.Handler) (*httptest.Server, *http.Transport) {
	ts, _ := serveMemory(h)
	return ts, memoryTransport()
}

// serveMemory starts an httptest.Server for h on a new memory listener.
func serveMemory(h http.Handler) (*httptest.Server, *memoryListener) {
	host := "s" + strconv.FormatUint(memorySeq.Add(1), 10) + "." + memoryDomain
	l := &memoryListener{host: host, conns: make(chan net.Conn), done: make(chan struct{})}
	memoryHosts.Store(host, l)
	ts := httptest.NewUnstartedServer(h)
	_ = ts.Listener.Close()
	ts.Listener = l
	ts.Start()
	ts.URL = "http://" + host
	return ts, l
}

// Transport returns a new *http.Transport whose connections reach s. For
// a memory server (NewMemoryServer) it dials the in-memory network, where
// it reaches every open memory server by its host, and refuses any other
// host without a lookup; for a loopback server (NewServer) it is a clone
// of http.DefaultTransport. The caller may close its idle
// connections; Server.Close also ends them. Transport is safe for
// concurrent use.
func (s *Server) Transport() *http.Transport {
	if s.mem != nil {
		return memoryTransport()
	}
	return http.DefaultTransport.(*http.Transport).Clone()
}

// memoryTransport returns a clone of http.DefaultTransport whose connections
// are dialled on the memory network.
func memoryTransport() *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.Proxy = nil
	t.DialContext = dialMemory
	t.DialTLSContext = nil
	t.ForceAttemptHTTP2 = false
	return t
}

// errNotMemory is what the memory transport returns for a host that is not
// a memory server's: it never looks a name up.
var errNotMemory = errors.New("recoursetest: the memory transport reaches only memory servers (http://sN." + memoryDomain + ")")

// dialMemory dials the memory server of addr's host: a closed one's host
// is refused, as a closed port is, and any other host is errNotMemory.
func dialMemory(ctx context.Context, network, addr string) (net.Conn, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		host = addr
	}
	if l, ok := memoryHosts.Load(host); ok {
		return l.(*memoryListener).dial(ctx, network, addr)
	}
	if strings.HasSuffix(host, "."+memoryDomain) {
		return nil, errRefused
	}
	return nil, &net.OpError{Op: "dial", Net: "memory", Err: errNotMemory}
}

// memoryListener is a net.Listener whose connections are the server ends
// of net.Pipes made by dial.
type memoryListener struct {
	host  string
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
	l.once.Do(func() {
		memoryHosts.CompareAndDelete(l.host, l)
		close(l.done)
	})
	return nil
}

func (l *memoryListener) Addr() net.Addr { return memoryAddr(l.host) }

// memoryAddr is the address of a memory listener: its host.
type memoryAddr string

func (memoryAddr) Network() string  { return "memory" }
func (a memoryAddr) String() string { return string(a) }
