// Package progress accounts what each attempt received (R13.2): whether
// headers arrived, the raw body bytes, and the semantic evidence (reasoning
// bytes, content bytes, tool fragments, completed tool calls) that the
// codec's observer finds in them. It sits inside the capture stage, so the
// evidence of every byte is recorded before any capture hook sees that byte
// (R12.3). Without the engine above it, it passes everything through.
package progress

import (
	"errors"
	"net/http"

	"github.com/recourse-dev/recourse/internal/attempt"
	"github.com/recourse-dev/recourse/layer"
)

// Layer is the progress layer. The zero value is ready to use and safe for
// concurrent use.
type Layer struct{}

// New returns the progress layer.
func New() *Layer { return &Layer{} }

// Name returns "progress".
func (*Layer) Name() string { return "progress" }

// Position returns layer.StageProgress: the engine-owned stage right below
// capture, so that every byte's evidence is counted before a capture hook
// sees it (R12.3), whether the provider or a per-attempt layer produced it.
func (*Layer) Position() layer.Position { return layer.StageProgress }

// Wrap returns a RoundTripper that counts the response bytes of next.
func (*Layer) Wrap(next http.RoundTripper) http.RoundTripper { return counter{next} }

type counter struct{ next http.RoundTripper }

func (c counter) RoundTrip(req *http.Request) (*http.Response, error) {
	a := attempt.From(req.Context())
	resp, err := c.next.RoundTrip(req)
	if a == nil {
		return resp, err
	}
	if err != nil {
		var refused *layer.RedirectError
		if errors.As(err, &refused) {
			a.HeadersReceived()
			a.Received(refused.Body)
		}
		return nil, err
	}
	a.HeadersReceived()
	// A RoundTripper's response belongs to its caller: wrap its body in
	// place rather than copy it.
	resp.Body = a.CountBody(resp.Body)
	return resp, nil
}
