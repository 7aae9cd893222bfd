// Package redirectguard refuses redirects (R2.2). A 301, 302, 303, 307 or
// 308 response is recorded as a failure and its Location is never
// contacted: the guard turns the response into a *RefusedError, so neither
// the retry layer nor an http.Client above the chain can follow it. The
// error keeps the response status, headers and (bounded) body so that the
// capture layer can still snapshot it (R12.1).
package redirectguard

import (
	"io"
	"net/http"
	"strconv"

	"github.com/recourse-dev/recourse/layer"
)

// MaxBody bounds the redirect body bytes kept as evidence.
const MaxBody = 64 << 10

// RefusedError reports a refused redirect. Its Error text is safe: it names
// the status only, never the Location.
type RefusedError struct {
	// Response is the redirect response with its body already read into a
	// replayable reader (sensitive: its headers include the Location).
	Response *http.Response
	// Body holds up to MaxBody bytes of the redirect body (sensitive).
	Body []byte
}

// Error returns a safe message.
func (e *RefusedError) Error() string {
	return "recourse: redirect refused (HTTP " + strconv.Itoa(e.Response.StatusCode) + ")"
}

// StatusCode returns the redirect status.
func (e *RefusedError) StatusCode() int { return e.Response.StatusCode }

// IsRedirect reports whether status is one of the redirect statuses that an
// http.Client would follow.
func IsRedirect(status int) bool {
	switch status {
	case http.StatusMovedPermanently, http.StatusFound, http.StatusSeeOther,
		http.StatusTemporaryRedirect, http.StatusPermanentRedirect:
		return true
	}
	return false
}

// Layer is the redirect guard. The zero value is ready to use and safe for
// concurrent use.
type Layer struct{}

// New returns the redirect guard.
func New() *Layer { return &Layer{} }

// Kind returns layer.KindRedirectGuard.
func (*Layer) Kind() layer.Kind { return layer.KindRedirectGuard }

// Wrap returns a RoundTripper that refuses redirects returned by next.
func (*Layer) Wrap(next http.RoundTripper) http.RoundTripper { return guard{next} }

type guard struct{ next http.RoundTripper }

func (g guard) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := g.next.RoundTrip(req)
	if err != nil || !IsRedirect(resp.StatusCode) {
		return resp, err
	}
	body, _ := io.ReadAll(io.LimitReader(resp.Body, MaxBody))
	resp.Body.Close()
	return nil, &RefusedError{Response: resp, Body: body}
}
