package recoursetest

import "github.com/recourse-dev/recourse/internal/scripted"

// Target is a loopback server that only counts the requests it receives. Use
// its URL as the location of a Redirect step to prove that a client did not
// follow the redirect: Hits stays 0. Target is safe for concurrent use.
type Target struct {
	// URL is the base URL of the target, "http://127.0.0.1:port", without a
	// trailing slash.
	URL string

	t *scripted.Target
}

// NewTarget starts a Target on 127.0.0.1. Every request, whatever its path
// and method, is counted and answered with HTTP 200 and an empty body.
// NewTarget panics if it cannot listen on 127.0.0.1. Call Close when done.
func NewTarget() *Target {
	defer relabel()
	t := scripted.NewTarget()
	return &Target{URL: t.URL, t: t}
}

// Hits returns the number of requests the target has received so far.
func (t *Target) Hits() int {
	return t.t.Hits()
}

// Close stops the target and closes its connections. Close is idempotent.
func (t *Target) Close() {
	t.t.Close()
}
