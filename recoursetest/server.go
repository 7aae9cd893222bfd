package recoursetest

import (
	"net/http"
	"strings"

	"github.com/recourse-dev/recourse/internal/scripted"
)

// Server is a scripted loopback provider: every incoming request consumes the
// next Step of its script, and every request is recorded. Server is safe for
// concurrent use.
type Server struct {
	// URL is the base URL of the server, "http://127.0.0.1:port", without a
	// trailing slash. Pass it as the base URL of a chain.Client, or append
	// the provider path (for example "/v1/chat/completions") for a plain
	// http.Client; the server answers every path and method alike.
	URL string

	srv *scripted.Server
}

// NewServer starts a Server on 127.0.0.1 that answers the i-th request
// (counting from 0) with steps[i]. Once the steps run out every further
// request is answered with HTTP 500 and the body
// {"error":{"message":"script exhausted","type":"server_error"}}, and is
// still recorded and counted. NewServer panics if it cannot listen on
// 127.0.0.1. Call Close when done.
func NewServer(steps ...Step) *Server {
	defer relabel()
	inner := make([]scripted.Step, len(steps))
	for i, st := range steps {
		inner[i] = st.step
	}
	srv := scripted.New(inner...)
	return &Server{URL: srv.URL, srv: srv}
}

// Close stops the server, closes every connection and waits until all
// handlers have returned. Close is idempotent. Clients should still close
// their own idle connections.
func (s *Server) Close() {
	s.srv.Close()
}

// Count returns the number of requests that reached the server so far,
// including requests answered by a Reset step and requests that found the
// script exhausted.
func (s *Server) Count() int {
	return s.srv.Count()
}

// Requests returns copies of every request received so far, in the order in
// which they consumed their steps.
func (s *Server) Requests() []Request {
	inner := s.srv.Requests()
	out := make([]Request, len(inner))
	for i, r := range inner {
		out[i] = Request{
			Method:   r.Method,
			Path:     r.Path,
			RawQuery: r.RawQuery,
			Header:   r.Header,
			Body:     r.Body,
			Proto:    r.Proto,
		}
	}
	return out
}

// Request is a copy of one request received by a Server.
type Request struct {
	// Method is the request method, for example "POST".
	Method string
	// Path is the request URL path, for example "/v1/chat/completions".
	Path string
	// RawQuery is the encoded query string without the leading '?'; it is
	// empty when the URL has no query.
	RawQuery string
	// Header is a copy of the request headers as the server received them,
	// for example with the Authorization and Content-Type the client sent.
	Header http.Header
	// Body holds every body byte the server read before answering; it is
	// nil or empty for a request without a body.
	Body []byte
	// Proto is the request protocol, for example "HTTP/1.1".
	Proto string
}

// relabel re-panics a panic of the internal implementation under this
// package's name. It must be deferred directly.
func relabel() {
	r := recover()
	if r == nil {
		return
	}
	if s, ok := r.(string); ok {
		panic("recoursetest: " + strings.TrimPrefix(s, "scripted: "))
	}
	panic(r)
}
