// Package memnet is an in-memory network for tests that run inside a
// testing/synctest bubble: a Listener hands out the server ends of
// net.Pipes that its Dial makes, so an HTTP server and client speak real
// HTTP/1.1 byte by byte, and a goroutine waiting for the other side is
// durably blocked (the bubble's clock may advance), which it never is on a
// loopback socket.
//
// recoursetest.NewMemoryServer plays its scripts on it; Serve puts any
// handler on it, for the module's own tests of a handler (the proxy) or of
// a provider that a test feeds by hand.
package memnet

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"syscall"
)

// Host is the host of every memory server's URL. It is in the reserved
// .invalid domain, so that no resolver ever answers for it and a request
// that misses the memory transport fails instead of leaving the machine.
const Host = "recoursetest.invalid"

// Listener is a net.Listener whose connections are the server ends of
// net.Pipes made by Dial. The zero Listener is not usable; call
// NewListener. A Listener is safe for concurrent use.
type Listener struct {
	conns chan net.Conn
	done  chan struct{}
	once  sync.Once
}

// NewListener returns an open Listener.
func NewListener() *Listener {
	return &Listener{conns: make(chan net.Conn), done: make(chan struct{})}
}

// ErrRefused is what dialling a closed Listener returns, as dialling a
// closed port does.
var ErrRefused = &net.OpError{Op: "dial", Net: "memory", Err: syscall.ECONNREFUSED}

// Dial hands the server end of a new pipe to Accept and returns the client
// end; it has the signature of http.Transport.DialContext and ignores the
// network and address. It fails with ErrRefused once the Listener is
// closed, and with ctx's error when ctx ends first.
func (l *Listener) Dial(ctx context.Context, _, _ string) (net.Conn, error) {
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
	return nil, ErrRefused
}

// Accept returns the server end of the next dialled pipe, or net.ErrClosed
// once the Listener is closed.
func (l *Listener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

// Close stops the Listener; it is idempotent. Connections already
// accepted stay open until their owners close them.
func (l *Listener) Close() error {
	l.once.Do(func() { close(l.done) })
	return nil
}

// Addr returns the address every memory listener has.
func (l *Listener) Addr() net.Addr { return addr{} }

type addr struct{}

func (addr) Network() string { return "memory" }
func (addr) String() string  { return Host }

// Transport returns a new *http.Transport whose every connection is dialled
// on l, whatever the request's host: a clone of http.DefaultTransport
// without proxy, TLS dialling or HTTP/2.
func (l *Listener) Transport() *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.Proxy = nil
	t.DialContext = l.Dial
	t.DialTLSContext = nil
	t.ForceAttemptHTTP2 = false
	return t
}

// Serve starts an httptest.Server for h on a new Listener and returns it
// with the Listener; its URL is "http://" + Host. Call it inside the
// bubble the test runs in. Closing the server (Close, or
// CloseClientConnections) closes every connection it accepted.
func Serve(h http.Handler) (*httptest.Server, *Listener) {
	l := NewListener()
	ts := httptest.NewUnstartedServer(h)
	_ = ts.Listener.Close()
	ts.Listener = l
	ts.Start()
	ts.URL = "http://" + Host
	return ts, l
}
