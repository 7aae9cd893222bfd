package chain

import (
	"bytes"
	"io"
	"net/http"

	"github.com/recourse-dev/recourse/codec"
	"github.com/recourse-dev/recourse/event"
	"github.com/recourse-dev/recourse/internal/attempt"
	"github.com/recourse-dev/recourse/layer"
)

// progressReader returns the first per-attempt layer among ls that reads
// its attempt's semantic progress (layer.ProgressReader) and the setting
// that reads it, or nil and "".
func progressReader(ls []layer.Layer) (layer.Layer, string) {
	for _, l := range ls {
		if pr, ok := l.(layer.ProgressReader); ok {
			if what := pr.ReadsProgress(); what != "" {
				return l, what
			}
		}
	}
	return nil, ""
}

// passiveAttempt sits right below the engine of a chain with a per-attempt
// layer that reads semantic progress. A request the engine passed through
// (recovery off: chain.WithoutRecovery, or a nil per-call policy) carries
// no attempt, so nothing would count its progress and a first-output limit
// would never see output (R7.4). passiveAttempt gives such a request a
// bare attempt — no identity, no capture hook, no events — whose codec
// observer the progress stage feeds, exactly as for a recovering attempt.
// A request that carries the engine's attempt passes through unchanged.
type passiveAttempt struct {
	next  http.RoundTripper
	codec codec.Codec
}

func (p *passiveAttempt) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx := req.Context()
	if attempt.From(ctx) != nil {
		return p.next.RoundTrip(req)
	}
	info, out, err := p.describe(req)
	if err != nil {
		return nil, err
	}
	a := attempt.New(event.Identity{}, info, p.codec, nil, nil)
	return p.next.RoundTrip(out.WithContext(attempt.With(ctx, a)))
}

// describe returns the facts of req — the caller's (the native client
// knows them) or the codec's description of the body — and the request to
// send: req itself, or a shallow copy over the body's bytes when the body
// had to be read and could not be read again.
func (p *passiveAttempt) describe(req *http.Request) (codec.RequestInfo, *http.Request, error) {
	if c := layer.CallFrom(req.Context()); c != nil && c.Facts != nil {
		return *c.Facts, req, nil
	}
	var body []byte
	switch rb, ok := req.Body.(*layer.RequestBody); {
	case ok:
		body = rb.Unread()
	case req.Body == nil || req.Body == http.NoBody:
	case req.GetBody != nil:
		rc, err := req.GetBody()
		if err != nil {
			return codec.RequestInfo{}, nil, err
		}
		body, err = io.ReadAll(rc)
		rc.Close()
		if err != nil {
			return codec.RequestInfo{}, nil, err
		}
	default:
		b, err := io.ReadAll(req.Body)
		req.Body.Close()
		if err != nil {
			return codec.RequestInfo{}, nil, err
		}
		body = b
		out := *req
		out.Body = io.NopCloser(bytes.NewReader(b))
		out.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil }
		out.ContentLength = int64(len(b))
		req = &out
	}
	info, err := codec.DescribeRequest(p.codec, req.URL, body)
	if err != nil {
		// As the engine does: a body the codec cannot describe is an
		// ordinary request, and the provider judges it.
		info = codec.RequestInfo{Operation: codec.Ordinary}
	}
	return info, req, nil
}
