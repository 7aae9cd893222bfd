// Package sender is the innermost layer of a recourse chain: it sends
// exactly one POST per attempt (R2.1).
//
// The standard library's http.Transport may resend a request on a fresh
// connection when a reused keep-alive connection fails, but only for a
// request it considers replayable. The sender makes every request
// non-replayable (no GetBody), so a failure on a reused connection reaches
// the retry layer as an ordinary transport failure and only the retry layer
// can authorize another send. A RoundTripper never follows redirects.
//
// A stream that the engine ended at its terminal frame (attempt.Attempt.Finish)
// usually has a few bytes of HTTP framing left, the end of the chunked
// encoding, that arrive just after the frame. Closing the body before they
// are read would close the connection, and the next call would dial again
// (in production, a TLS handshake). So when such a body is closed the
// sender first reads and discards at most DrainLimit bytes for at most
// DrainWait, then closes it: a provider that ends the response there leaves
// its connection in the pool; one that keeps sending, or holds the response
// open, gets its connection closed. The sender drains only over an
// *http.Transport (its own default is one), whose bodies may be closed while
// a read blocks; over another base it closes at once.
package sender

import (
	"io"
	"net/http"
	"net/http/httptrace"
	"sync"
	"time"

	"github.com/recourse-dev/recourse/codec"
	"github.com/recourse-dev/recourse/internal/attempt"
	"github.com/recourse-dev/recourse/layer"
)

// Layer is the sender layer. The zero value sends through the private
// default transport New describes. It is safe for concurrent use.
type Layer struct {
	once sync.Once
	base http.RoundTripper
	// drains: the base is an *http.Transport, whose response bodies may be
	// closed while a read blocks, so a finished stream may be drained.
	drains bool
}

// DefaultMaxIdleConnsPerHost is how many idle connections per host the
// sender's default transport keeps: enough for 64 concurrent callers of one
// provider to reuse their connections, as the proxy's default does, where
// http.DefaultTransport keeps 2 (R2.7).
const DefaultMaxIdleConnsPerHost = 64

// New returns a sender that sends through base. A nil base means a private
// clone of http.DefaultTransport with HTTP/2 disabled and
// DefaultMaxIdleConnsPerHost idle connections per host (its other settings
// are the clone's: 100 idle connections in all, a 90 s idle timeout):
// HTTP/2's transparent stream retries are outside the engine's control, so
// they are left out, and a pool of http.DefaultTransport's two idle
// connections per host would make concurrent callers dial a new connection
// (in production, a TLS handshake) for most calls. For other pool settings,
// pass your own *http.Transport as base (chain.WithTransport in the default
// chain). A base must not itself retry or follow redirects.
func New(base http.RoundTripper) *Layer {
	return &Layer{base: base}
}

func (l *Layer) transport() http.RoundTripper {
	l.once.Do(func() {
		if l.base == nil {
			t := http.DefaultTransport.(*http.Transport).Clone()
			var protos http.Protocols
			protos.SetHTTP1(true)
			t.Protocols = &protos
			t.MaxIdleConnsPerHost = DefaultMaxIdleConnsPerHost
			l.base = t
		}
		_, l.drains = l.base.(*http.Transport)
	})
	return l.base
}

// Name returns "sender".
func (*Layer) Name() string { return "sender" }

// Position returns layer.StageSender: the innermost stage.
func (*Layer) Position() layer.Position { return layer.StageSender }

// Wrap ignores next (the sender is the innermost layer) and returns the
// sending RoundTripper, for a chain without a recovery engine: it sends
// every request, with or without an attempt.
func (l *Layer) Wrap(http.RoundTripper) http.RoundTripper { return l }

// WrapInEngine ignores next and returns the sending RoundTripper for a chain
// with a recovery engine (package chain uses it): it sends a request that
// carries the engine's attempt (attempt.From) or the mark of an engine
// that passed it through with recovery off (attempt.PassedThrough), as
// RoundTrip does, and refuses any other with layer.ErrDetachedRequest,
// closing its body and sending nothing. Such a request was rebuilt by a
// per-attempt layer with a context of its own (http.NewRequest,
// req.Clone(context.Background())): sent, it would escape the engine's
// one-POST-per-attempt guard (R2.1) and its admission (R8.3). The returned
// RoundTripper shares the layer's transport and is safe for concurrent use.
func (l *Layer) WrapInEngine(http.RoundTripper) http.RoundTripper { return inEngine{l} }

// inEngine is the sender's RoundTripper inside a recovery engine.
type inEngine struct{ l *Layer }

func (s inEngine) RoundTrip(req *http.Request) (*http.Response, error) {
	if attempt.From(req.Context()) == nil && !attempt.PassedThrough(req.Context()) {
		closeBody(req)
		return nil, layer.ErrDetachedRequest
	}
	return s.l.RoundTrip(req)
}

// RoundTrip sends req once. It sends a shallow copy of req whose body is
// non-replayable (req itself is never changed, and its header is shared,
// only read), or req itself when it already is one and its context
// carries the attempt's trace (an engine's attempt that nothing replays,
// R2.8), records the connection phase for the engine and marks the
// attempt as begun just before the request leaves. A second send of one
// attempt's request (a per-attempt layer that called its next twice) is
// refused with layer.ErrSecondSend: an attempt is at most one POST (R2.1).
// Outside a recovery attempt it sends a fresh copy of the body from GetBody,
// when req has one, so that the caller's body stays unread; inside one it
// sends req's body, the attempt's own copy.
func (l *Layer) RoundTrip(req *http.Request) (*http.Response, error) {
	base := l.transport()
	a := attempt.From(req.Context())
	ctx := req.Context()
	if a != nil {
		// The engine's attempt context usually carries the attempt's trace
		// already (attempt.With); otherwise it is added here.
		if t := a.ClientTrace(); httptrace.ContextClientTrace(ctx) != t {
			ctx = httptrace.WithClientTrace(ctx, t)
		}
	}
	// A shallow copy: the sender changes only the copy's body fields, and
	// http.Transport never writes to a request's header, URL or trailer,
	// so a deep clone (Request.Clone) would copy them for nothing. A
	// request with nothing to change (its context carries the trace, and
	// it has no GetBody, as the engine sends an attempt nothing replays,
	// R2.8) is sent as it is.
	replayable := req.GetBody != nil && req.Body != nil && req.Body != http.NoBody
	out := req
	if ctx != req.Context() || replayable {
		out = req.WithContext(ctx)
	}
	if replayable {
		// Inside a recovery attempt the body is the attempt's own fresh
		// copy, which nothing above has read (the capture layer reads
		// GetBody's copies); it is sent as it is.
		if a == nil {
			// Take a fresh copy so that the caller's body stays unread.
			b, err := req.GetBody()
			if err != nil {
				return nil, err
			}
			out.Body = b
		}
		// A request without GetBody is never replayed by http.Transport.
		out.GetBody = nil
	}
	if a != nil {
		if err := ctx.Err(); err != nil {
			// Cancelled before the request left: the attempt never begins,
			// so nothing is reported as sent (R9.2).
			closeBody(out)
			return nil, err
		}
		if !a.ClaimSend() {
			closeBody(out)
			return nil, layer.ErrSecondSend
		}
		if err := a.Begin(); err != nil {
			closeBody(out)
			return nil, err
		}
	}
	resp, err := base.RoundTrip(out)
	if err != nil {
		return nil, err
	}
	if a != nil {
		a.HeadersReceived()
		if l.drains && a.Info().Operation == codec.Streaming && resp.Body != nil && resp.Body != http.NoBody {
			resp.Body = &streamBody{rc: resp.Body, a: a}
		}
	}
	return resp, nil
}

// The bounds of the read that lets a finished stream's connection be
// reused (see the package documentation).
const (
	// DrainLimit is the most bytes read after a stream's terminal frame.
	DrainLimit = 4 << 10
	// DrainWait is the longest the sender waits for them.
	DrainWait = 50 * time.Millisecond
)

// streamBody is the body of a streaming attempt's response: it notes HTTP
// EOF and, closed after the attempt finished before it, drains the rest.
// Like any response body it is read and closed by one goroutine.
type streamBody struct {
	rc  io.ReadCloser
	a   *attempt.Attempt
	eof bool
}

func (b *streamBody) Read(p []byte) (int, error) {
	n, err := b.rc.Read(p)
	if err == io.EOF {
		b.eof = true
	}
	return n, err
}

// Close closes the body, first draining it when the attempt finished at its
// terminal frame before HTTP EOF.
func (b *streamBody) Close() error {
	if !b.eof && b.a.Finished() {
		b.eof = true
		drain(b.rc)
	}
	return b.rc.Close()
}

// drain reads and discards at most DrainLimit bytes of rc, for at most
// DrainWait: when the time is up rc is closed, which ends a blocked read
// (net/http's response bodies allow Close concurrently with Read).
func drain(rc io.ReadCloser) {
	t := time.AfterFunc(DrainWait, func() { _ = rc.Close() })
	defer t.Stop()
	var buf [512]byte
	for n := 0; n < DrainLimit; {
		m, err := rc.Read(buf[:])
		n += m
		if err != nil {
			return
		}
	}
}

func closeBody(r *http.Request) {
	if r.Body != nil {
		r.Body.Close()
	}
}

// CloseIdleConnections closes the idle connections of the base transport,
// when it has such a method (a private default transport always does).
func (l *Layer) CloseIdleConnections() {
	if c, ok := l.transport().(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}
