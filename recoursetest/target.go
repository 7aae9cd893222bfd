package recoursetest

import (
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
)

// Target is a loopback server that only counts the requests it receives. Use
// it as the Location of a Redirect step to prove that a client did not follow
// the redirect. Target is safe for concurrent use.
type Target struct {
	// URL is the base URL of the target, "http://127.0.0.1:port".
	URL string

	srv       *httptest.Server
	hits      atomic.Int64
	closeOnce sync.Once
}

// NewTarget starts a Target on 127.0.0.1. Every request is counted and
// answered with 200 and an empty body. NewTarget panics if it cannot listen on
// 127.0.0.1.
func NewTarget() *Target {
	t := &Target{}
	t.srv = startLoopback(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t.hits.Add(1)
		w.WriteHeader(http.StatusOK)
	}))
	t.URL = t.srv.URL
	return t
}

// Hits returns the number of requests the target has received.
func (t *Target) Hits() int {
	return int(t.hits.Load())
}

// Close stops the target and closes its connections. Close is idempotent.
func (t *Target) Close() {
	t.closeOnce.Do(func() {
		t.srv.CloseClientConnections()
		t.srv.Close()
	})
}
