package proxy

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/recourse-dev/recourse/chain"
	"github.com/recourse-dev/recourse/codec"
	"github.com/recourse-dev/recourse/layer"
	"github.com/recourse-dev/recourse/layers/quota"
	"github.com/recourse-dev/recourse/layers/retry"
)

// HeaderCallID is the response header naming the logical call of a
// completion, the call_id of the proxy's log lines.
const HeaderCallID = "X-Recourse-Call-Id"

// ErrShutdown is the cause of the context of a request cut at shutdown,
// after the grace period (see Serve). Its text is the message, and
// "shutdown" the code, of the answer of such a request: the in-band error
// of a stream, the error document of a request still waiting (R21.10).
var ErrShutdown = errors.New("recourse-proxy: shutting down: the call was cut after the grace period")

// Handler is the recovery proxy for one provider and one upstream. It is
// immutable after New and safe for concurrent use.
//
// It logs, on the Config's Logger, one line per request (message
// "request"; attributes kind "completion", "forward" or "refused" (a
// recovered endpoint spelled otherwise, R21.8), method, path — the
// URL path only, never the query —, status, outcome when recovery ended
// without success, client_retry when a client retry was charged to the
// quota, call_id, duration_ms) and one line per lifecycle event of a
// completion exactly as package eventlog writes it (message
// eventlog.Message, level eventlog.Level, attributes eventlog.Attrs: type,
// logical_request_id — the call_id of the request line —, attempt_id,
// wire_attempt, max_attempts, provider, operation, model, and when set
// http_status, delay_ms, next_attempt, the quota group and the failure
// group with category, reason, stall, hint and retry_after_header). No
// line holds a header value, a body or a credential.
type Handler struct {
	codec       codec.Codec
	upstream    *url.URL
	chain       *chain.Chain
	forward     *httputil.ReverseProxy
	policy      retry.Policy
	deadline    time.Duration
	maxBody     int64
	commitAfter time.Duration // < 0: never
	comments    bool          // the stream dialect has comment lines (not codec.Facts.NoStreamComments)
	quota       *quota.Layer  // nil: none
	log         *slog.Logger
	now         func() time.Time
	responses   *Handler                           // the Responses API of an openai proxy, or nil
	finals      *finals                            // nil: every request goes through (Config.RepeatWindow < 0)
	onRetry     func(context.Context, ClientRetry) // Config.OnClientRetry
	endpoints   []Endpoint                         // the recovered endpoints (Endpoints)
	routed      bool                               // the codec names the model in the path: its routes are the endpoints (R23.8)
	clientKeys  []ClientKey                        // nil: every client is admitted (Config.ClientKeys)
	upstreamKey string                             // Config.UpstreamKey
	namespaces  []string                           // the path prefixes the wire owns in a Router (dialect.namespaces)
	marker      string                             // the header that claims a request for the wire in a Router (dialect.marker)
	name        string                             // the route's name in a Router, logged as route; "" for a Handler of its own
}

// New returns the Handler for cfg, or a *ConfigError naming an invalid
// field, the chain's *layer.PolicyError for an invalid policy, or its
// *chain.CompositionError for a PerCall layer of another position.
// It is one function of more than 80 lines because it reads cfg once, top to
// bottom: each field is checked, then defaulted, the first invalid one
// ending it, and the chains are built from the result, one closure building
// the per-call layers of each chain from the same fields.
func New(cfg Config) (*Handler, error) {
	d, err := dialectFor(cfg.Provider)
	if err != nil {
		return nil, err
	}
	cdc := d.codec
	up, err := parseUpstream(cfg.Upstream, cdc)
	if err != nil {
		return nil, err
	}
	if cfg.MaxBodyBytes < 0 {
		return nil, &ConfigError{Field: "MaxBodyBytes", Problem: "is negative"}
	}
	if cfg.Deadline < 0 {
		return nil, &ConfigError{Field: "Deadline", Problem: "is negative"}
	}
	base := cfg.Transport
	if base == nil {
		base = defaultTransport()
	}
	h := &Handler{
		codec:       cdc,
		upstream:    up,
		policy:      cfg.Policy,
		deadline:    cfg.Deadline,
		maxBody:     cfg.MaxBodyBytes,
		commitAfter: cfg.StreamCommitAfter,
		comments:    !cdc.Facts().NoStreamComments,
		quota:       cfg.Quota,
		log:         cfg.Logger,
		now:         cfg.Policy.WallClock,
		endpoints:   d.endpoints(),
		routed:      d.routes != nil,
		upstreamKey: cfg.UpstreamKey,
		namespaces:  d.namespaces,
		marker:      d.marker,
	}
	if cfg.ClientKeys != nil {
		if h.clientKeys, err = checkClientKeys(cfg.ClientKeys, nil); err != nil {
			return nil, err
		}
	}
	if strings.ContainsAny(cfg.UpstreamKey, "\r\n") {
		return nil, &ConfigError{Field: "UpstreamKey", Problem: "holds a line break"}
	}
	if h.maxBody == 0 {
		h.maxBody = DefaultMaxBodyBytes
	}
	if h.commitAfter == 0 {
		h.commitAfter = DefaultStreamCommitAfter
	}
	if h.log == nil {
		h.log = slog.New(slog.DiscardHandler)
	}
	if h.now == nil {
		// The time a request arrived, for Deadline and RepeatWindow, is
		// read on the policy's clock, the library's one time seam (R3.6).
		h.now = time.Now
	}
	switch {
	case cfg.RepeatWindow == 0:
		h.finals = newFinals(DefaultRepeatWindow, h.now)
	case cfg.RepeatWindow > 0:
		h.finals = newFinals(cfg.RepeatWindow, h.now)
	}
	h.onRetry = cfg.OnClientRetry
	// perCallFor returns the per-call layers of a chain of codec: the
	// caller's, the fallback targets (with that codec's model swap), then
	// the quota.
	perCallFor := func(cdc codec.Codec) ([]layer.Layer, error) {
		perCall := cfg.PerCall[:len(cfg.PerCall):len(cfg.PerCall)]
		if fl, err := fallbackLayer(&cfg, cdc); err != nil {
			return nil, err
		} else if fl != nil {
			perCall = append(perCall, fl)
		}
		if cfg.Quota != nil {
			perCall = append(perCall, cfg.Quota, layer.NewPerCall("client-retries", keepClientRetriesFromDepositing))
		}
		return perCall, nil
	}
	perCall, err := perCallFor(cdc)
	if err != nil {
		return nil, err
	}
	h.chain, err = chain.Default(cdc, chain.WithPolicy(cfg.Policy), chain.WithTransport(base),
		chain.WithPerCall(perCall...), chain.WithPerAttempt(cfg.PerAttempt...))
	if err != nil {
		return nil, err
	}
	h.forward = h.newForward(base)
	if d.responses != nil {
		rc, err := perCallFor(d.responses)
		if err != nil {
			return nil, err
		}
		if h.responses, err = h.withResponses(d.responses, base, rc, cfg.PerAttempt); err != nil {
			return nil, err
		}
	}
	return h, nil
}

// defaultTransport returns the upstream transport of a Config without
// one: HTTP/1.1, as the providers' streams are read, with room for 64 idle
// connections to the one upstream.
func defaultTransport() *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.ForceAttemptHTTP2 = false
	t.MaxIdleConnsPerHost = 64
	return t
}

// newForward returns the reverse proxy of every request the proxy does
// not recover: sent once to the upstream through base, streamed back as
// it arrives, a redirect refused.
func (h *Handler) newForward(base http.RoundTripper) *httputil.ReverseProxy {
	return &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.Out.URL = h.target(pr.In.URL)
			pr.Out.Host = ""
			if pr.Out.Body != nil {
				pr.Out.Body = &forwardBody{rc: pr.Out.Body}
			}
		},
		Transport:      base,
		FlushInterval:  -1,
		ModifyResponse: refuseRedirect,
		ErrorHandler:   h.forwardFailed,
		ErrorLog:       slog.NewLogLogger(h.log.Handler(), slog.LevelWarn),
	}
}

// target returns the upstream URL for a client's request URL: the
// upstream root, then the client's path and query.
func (h *Handler) target(in *url.URL) *url.URL {
	u := *h.upstream
	u.Path = h.upstream.Path + in.Path
	if in.RawPath != "" {
		u.RawPath = h.upstream.Path + in.RawPath
	}
	u.RawQuery = in.RawQuery
	return &u
}

// ServeHTTP serves one client request (see the package documentation).
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/healthz" && (r.Method == http.MethodGet || r.Method == http.MethodHead) {
		healthy(w)
		return
	}
	r, ok := h.credentials(w, r)
	if !ok {
		return
	}
	switch {
	case r.Method == http.MethodPost && h.recovers(r.URL):
		h.owned(w, r)
	case h.responses != nil && h.responses.routes(r):
		h.responses.owned(w, r)
	default:
		if e, ok := h.misspelled(r); ok {
			start := time.Now()
			h.refuseMisspelled(w, r, e)
			h.logRequest(r, requestLine{kind: "refused", status: http.StatusBadRequest, start: start})
			return
		}
		start := time.Now()
		rec := &statusRecorder{ResponseWriter: w}
		h.forward.ServeHTTP(rec, r)
		h.logRequest(r, requestLine{kind: "forward", status: rec.status, start: start})
	}
}

// recovers reports whether a POST to u is a completion the proxy
// recovers: the codec's endpoint path or, for a codec that names the model
// in the path (codec.Router, Gemini), one of its routes for any model,
// spelled exactly (R21.8, R23.8).
func (h *Handler) recovers(u *url.URL) bool {
	if h.routed {
		for _, e := range h.endpoints {
			if e.Method == http.MethodPost && e.matches(u.Path, false) {
				return true
			}
		}
		return false
	}
	return u.Path == h.codec.Path()
}

// errRedirect is what ModifyResponse returns for an upstream redirect.
type errRedirect struct{ status int }

func (e *errRedirect) Error() string {
	return "recourse-proxy: the upstream answered HTTP " + strconv.Itoa(e.status) + ", a redirect: refused, its Location never contacted"
}

func refuseRedirect(resp *http.Response) error {
	if layer.IsRedirect(resp.StatusCode) {
		return &errRedirect{status: resp.StatusCode}
	}
	return nil
}

// forwardFailed answers a forwarded request that got no usable answer.
func (h *Handler) forwardFailed(w http.ResponseWriter, r *http.Request, err error) {
	var rd *errRedirect
	if errors.As(err, &rd) {
		h.writeError(w, http.StatusBadGateway, "redirect_refused", rd.Error(), "")
		return
	}
	if errors.Is(context.Cause(r.Context()), ErrShutdown) {
		h.writeError(w, http.StatusServiceUnavailable, codeShutdown, ErrShutdown.Error(), "")
		return
	}
	if r.Context().Err() != nil {
		// The client went away.
		h.writeError(w, http.StatusServiceUnavailable, "cancelled", "recourse-proxy: the request was cancelled before the upstream answered", "")
		return
	}
	h.writeError(w, http.StatusBadGateway, "upstream_unreachable", "recourse-proxy: the upstream could not be reached (forwarded once, not retried)", "")
}

// writeError writes a proxy error: the codec's error document
// (codec.ErrorDocumenter) carrying code and msg, or msg as plain text for a
// codec without one. outcome, when set, is sent as X-Recourse-Outcome, with
// X-Should-Retry: false.
func (h *Handler) writeError(w http.ResponseWriter, status int, code, msg, outcome string) {
	hd := w.Header()
	hd.Del("Location")
	var body []byte
	if ed, ok := h.codec.(codec.ErrorDocumenter); ok {
		body = ed.ErrorDocument(code, msg)
		hd.Set("Content-Type", "application/json")
	} else {
		body = []byte(msg + "\n")
		hd.Set("Content-Type", "text/plain; charset=utf-8")
	}
	hd.Set(retry.HeaderShouldRetry, "false")
	if outcome != "" {
		hd.Set(retry.HeaderOutcome, outcome)
	}
	hd.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	w.Write(body)
}

// hopHeaders are the hop-by-hop headers (RFC 9110 §7.6.1) a proxy must not
// forward, as net/http/httputil.ReverseProxy drops them.
var hopHeaders = []string{
	"Connection", "Proxy-Connection", "Keep-Alive", "Proxy-Authenticate",
	"Proxy-Authorization", "Te", "Trailer", "Transfer-Encoding", "Upgrade",
}

// stripHop removes the hop-by-hop headers from h, including those the
// Connection header names.
func stripHop(h http.Header) {
	for _, v := range h.Values("Connection") {
		for _, name := range strings.Split(v, ",") {
			if name = strings.TrimSpace(name); name != "" {
				h.Del(name)
			}
		}
	}
	for _, name := range hopHeaders {
		h.Del(name)
	}
}

// statusRecorder remembers the status a forwarded response was given.
type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (s *statusRecorder) WriteHeader(code int) {
	if s.status == 0 {
		s.status = code
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusRecorder) Write(p []byte) (int, error) {
	if s.status == 0 {
		s.status = http.StatusOK
	}
	return s.ResponseWriter.Write(p)
}

// Unwrap lets http.ResponseController reach the underlying writer.
func (s *statusRecorder) Unwrap() http.ResponseWriter { return s.ResponseWriter }

// forwardBody is the body of a forwarded request. Having copied a
// request's declared length, net/http's Transport reads the body once more
// to check that nothing follows; meanwhile the proxy's own server, writing
// the response headers, has closed the client's request body
// (golang/go#40747). That late read then fails with "invalid Read on
// closed Body", and the Transport tears down the upstream connection in the
// middle of a streaming answer. A forwardBody that has already returned
// io.EOF keeps answering io.EOF after Close; one closed before its end
// still fails.
type forwardBody struct {
	rc     io.ReadCloser
	mu     sync.Mutex
	eof    bool
	closed bool
}

var errForwardBodyClosed = errors.New("recourse-proxy: read of a forwarded request body after it was closed")

func (b *forwardBody) Read(p []byte) (int, error) {
	b.mu.Lock()
	eof, closed := b.eof, b.closed
	b.mu.Unlock()
	if eof {
		return 0, io.EOF
	}
	if closed {
		return 0, errForwardBodyClosed
	}
	n, err := b.rc.Read(p)
	if err == io.EOF {
		b.mu.Lock()
		b.eof = true
		b.mu.Unlock()
	}
	return n, err
}

// Close marks the body closed; the server closes the client's body when
// the handler returns.
func (b *forwardBody) Close() error {
	b.mu.Lock()
	b.closed = true
	b.mu.Unlock()
	return nil
}
