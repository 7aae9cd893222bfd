package recoursetest

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
)

// exhaustedBody is the body of the 500 answer sent when the script has no
// step left.
const exhaustedBody = `{"error":{"message":"script exhausted","type":"server_error"}}`

// leftBuffer is the capacity of the channel returned by Server.Left.
const leftBuffer = 1024

// Request is a copy of one request received by a Server.
type Request struct {
	// Method is the request method, for example "POST".
	Method string
	// Path is the request URL path, for example "/v1/chat/completions".
	Path string
	// RawQuery is the encoded query string without the leading '?'.
	RawQuery string
	// Header is a clone of the request headers.
	Header http.Header
	// Body holds every body byte the server read before acting on the step.
	Body []byte
	// Proto is the request protocol, for example "HTTP/1.1".
	Proto string
}

// clone returns a deep copy of r.
func (r Request) clone() Request {
	r.Header = r.Header.Clone()
	if r.Body != nil {
		r.Body = append([]byte{}, r.Body...)
	}
	return r
}

// Server is a scripted loopback provider: every incoming request consumes the
// next Step of its script, and every request is recorded. Server is safe for
// concurrent use.
type Server struct {
	// URL is the base URL of the server without a trailing slash:
	// "http://127.0.0.1:port" for NewServer, "http://sN.recoursetest.invalid"
	// (the N-th of the process) for NewMemoryServer.
	URL string

	srv       *httptest.Server
	mem       *memoryListener // the listener of a memory server, else nil
	closed    chan struct{}
	closeOnce sync.Once
	left      chan int
	closeIdle atomic.Bool

	mu    sync.Mutex
	steps []Step
	next  int
	reqs  []Request
	logs  map[string]*responseLog // background responses by id
}

// NewServer starts a Server on 127.0.0.1 that answers the i-th request
// (counting from 0) with steps[i]. Once the steps run out every further
// request is answered with HTTP 500 and the body
// {"error":{"message":"script exhausted","type":"server_error"}}, and is
// still recorded and counted. NewServer panics if it cannot listen on
// 127.0.0.1. Call Close when done.
func NewServer(steps ...Step) *Server {
	s := &Server{
		closed: make(chan struct{}),
		left:   make(chan int, leftBuffer),
		steps:  append([]Step(nil), steps...),
	}
	s.srv = startLoopback(http.HandlerFunc(s.serve))
	s.URL = s.srv.URL
	return s
}

// Close stops the server, unblocks every held or gated handler, closes every
// connection and waits until all handlers have returned. Close is idempotent.
// Clients should still close their own idle connections.
func (s *Server) Close() {
	s.closeOnce.Do(func() {
		close(s.closed)
		s.srv.CloseClientConnections()
		s.srv.Close()
	})
}

// Requests returns copies of every request received so far, in the order in
// which they consumed their steps.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Request, len(s.reqs))
	for i, r := range s.reqs {
		out[i] = r.clone()
	}
	return out
}

// Count returns the number of requests that reached the handler, including
// requests answered by Reset steps and requests that found the script
// exhausted.
func (s *Server) Count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.reqs)
}

// Push appends steps to the script, for example to drive an interactive demo.
// Pushed steps are used by requests arriving after the earlier steps ran out,
// including requests arriving after an exhausted answer.
func (s *Server) Push(steps ...Step) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.steps = append(s.steps, steps...)
}

// Left returns a channel that receives the 0-based request index each time a
// Hold step observes that its client went away. The channel is buffered; it
// is never closed.
func (s *Server) Left() <-chan int {
	return s.left
}

// CloseIdleAfterEach makes every later response carry "Connection: close" when
// on is true, so the server closes each connection after its response instead
// of keeping it alive for reuse. It is false by default.
func (s *Server) CloseIdleAfterEach(on bool) {
	s.closeIdle.Store(on)
}

// serve records the request, takes the next step and plays it.
func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body) // a failed read keeps what arrived
	rec := Request{
		Method:   r.Method,
		Path:     r.URL.Path,
		RawQuery: r.URL.RawQuery,
		Header:   r.Header.Clone(),
		Body:     body,
		Proto:    r.Proto,
	}
	s.mu.Lock()
	idx := len(s.reqs)
	s.reqs = append(s.reqs, rec)
	st, ok := Step{}, s.next < len(s.steps)
	if ok {
		st = s.steps[s.next]
		s.next++
	}
	s.mu.Unlock()
	if !ok {
		st = JSON(http.StatusInternalServerError, exhaustedBody)
	}
	s.play(w, r, idx, s.resolve(st, rec))
}

// waitResult says why wait returned.
type waitResult int

const (
	released waitResult = iota
	clientGone
	serverClosed
)

// wait blocks until ch is closed (ch nil blocks forever), the client goes away
// or the server closes.
func (s *Server) wait(ctx context.Context, ch <-chan struct{}) waitResult {
	select {
	case <-ch:
		return released
	case <-ctx.Done():
		// Closing the server also cancels ctx; do not mistake it for a
		// departure of the client.
		select {
		case <-s.closed:
			return serverClosed
		default:
			return clientGone
		}
	case <-s.closed:
		return serverClosed
	}
}

// play writes the response described by st.
func (s *Server) play(w http.ResponseWriter, r *http.Request, idx int, st Step) {
	rc := http.NewResponseController(w)
	if st.ResetBeforeHeaders {
		resetConn(rc)
		return
	}
	ctx := r.Context()
	// stop ends a response whose wait was not released: it reports a
	// departed client and aborts the connection, so that a client still
	// reading never mistakes the end for a complete body.
	headersSent := false
	stop := func(why waitResult) {
		if why == clientGone {
			s.reportLeft(st, idx)
		}
		if !headersSent {
			panic(http.ErrAbortHandler) // a Flush would send an implicit 200
		}
		abort(rc)
	}
	// gate waits for st.Gate when at is st.GateAt.
	gate := func(at int) {
		if st.Gate == nil || st.GateAt != at {
			return
		}
		if at >= 0 {
			_ = rc.Flush()
		}
		if why := s.wait(ctx, st.Gate); why != released {
			stop(why)
		}
	}
	if st.GateAt < 0 {
		gate(st.GateAt)
	}

	h := w.Header()
	for k, vs := range st.Header {
		h[k] = append([]string(nil), vs...)
	}
	if len(st.Header.Values("Content-Type")) == 0 {
		h["Content-Type"] = nil // no content sniffing: send exactly the scripted headers
	}
	if s.closeIdle.Load() {
		h.Set("Connection", "close")
	}
	status := st.Status
	if status == 0 {
		status = http.StatusOK
	}
	w.WriteHeader(status)
	headersSent = true
	if st.cutBeforeBody {
		abort(rc)
	}

	written := 0
	for i, c := range st.Chunks {
		gate(i)
		if st.CutAfter > 0 && written+len(c) >= st.CutAfter {
			_, _ = w.Write(c[:st.CutAfter-written])
			abort(rc)
		}
		_, _ = w.Write(c)
		written += len(c)
		_ = rc.Flush()
	}
	gate(len(st.Chunks))
	if st.CutAfter > 0 {
		abort(rc)
	}
	if st.Hold {
		_ = rc.Flush()
		stop(s.wait(ctx, nil))
	}
}

// reportLeft sends idx on the Left channel if st is a Hold step.
func (s *Server) reportLeft(st Step, idx int) {
	if !st.Hold {
		return
	}
	select {
	case s.left <- idx:
	case <-s.closed:
	}
}

// abort flushes what was written and aborts the connection without ending the
// response properly. It does not return.
func abort(rc *http.ResponseController) {
	_ = rc.Flush()
	panic(http.ErrAbortHandler) // net/http closes the connection silently
}

// resetConn hijacks the connection and closes it with SO_LINGER 0, which makes
// the kernel send a TCP RST instead of a FIN.
func resetConn(rc *http.ResponseController) {
	conn, _, err := rc.Hijack()
	if err != nil {
		panic(http.ErrAbortHandler)
	}
	if tc, ok := conn.(*net.TCPConn); ok {
		_ = tc.SetLinger(0)
	}
	_ = conn.Close()
}

// startLoopback starts an httptest server for h listening on 127.0.0.1 only.
func startLoopback(h http.Handler) *httptest.Server {
	return startOn(net.Listen, h)
}

// startOn is startLoopback with the listen function as a parameter, so that
// a test can make listening fail. It panics with this package's name if
// listen fails.
func startOn(listen func(network, address string) (net.Listener, error), h http.Handler) *httptest.Server {
	l, err := listen("tcp4", "127.0.0.1:0")
	if err != nil {
		panic("recoursetest: cannot listen on 127.0.0.1: " + err.Error())
	}
	ts := httptest.NewUnstartedServer(h)
	_ = ts.Listener.Close()
	ts.Listener = l
	ts.Start()
	return ts
}
