// Package redirectguard refuses redirects (R2.2). A 301, 302, 303, 307 or
// 308 response is recorded as a failure and its Location is never
// contacted: the guard turns the response into a *layer.RedirectError, so
// neither the engine nor an http.Client above the chain can follow it. The
// error keeps the response status, headers and (bounded) body so that the
// capture stage can still snapshot it (R12.1).
//
// The guard is the stage right above the sender; a chain always has one.
package redirectguard

import (
	"io"
	"net/http"

	"github.com/recourse-dev/recourse/layer"
)

// MaxBody bounds the redirect body bytes kept as evidence.
const MaxBody = 64 << 10

// Layer is the redirect guard. The zero value is ready to use and safe for
// concurrent use.
type Layer struct{}

// New returns the redirect guard.
func New() *Layer { return &Layer{} }

// Name returns "redirectguard".
func (*Layer) Name() string { return "redirectguard" }

// Position returns layer.StageRedirectGuard.
func (*Layer) Position() layer.Position { return layer.StageRedirectGuard }

// Wrap returns a RoundTripper that refuses redirects returned by next.
func (*Layer) Wrap(next http.RoundTripper) http.RoundTripper { return guard{next} }

type guard struct{ next http.RoundTripper }

func (g guard) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := g.next.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	return Refuse(resp)
}

// Refuse returns resp unchanged unless it is a redirect; a redirect's body
// is read (up to MaxBody bytes) and closed, and a *layer.RedirectError that
// keeps it is returned instead. The chain also calls it at its edge, so that
// no layer can hand an http.Client a redirect to follow.
func Refuse(resp *http.Response) (*http.Response, error) {
	if !layer.IsRedirect(resp.StatusCode) {
		return resp, nil
	}
	body, _ := io.ReadAll(io.LimitReader(resp.Body, MaxBody))
	resp.Body.Close()
	return nil, &layer.RedirectError{Response: resp, Body: body}
}
