package client

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/recourse-dev/recourse/chain"
	"github.com/recourse-dev/recourse/chat"
	"github.com/recourse-dev/recourse/codec"
	"github.com/recourse-dev/recourse/layer"
	"github.com/recourse-dev/recourse/layers/fallback"
	"github.com/recourse-dev/recourse/layers/retry"
)

// StatusError is the native client's error for a non-2xx response when the
// chain does not recover (no retry layer, or recovery disabled). Its Error
// text is safe; Body is sensitive.
type StatusError struct {
	// StatusCode is the HTTP status code of the response, for example 503;
	// it is never in the 2xx range.
	StatusCode int
	// Body is the response body (sensitive: it may echo the request).
	Body []byte
}

// Error returns a safe message naming the status.
func (e *StatusError) Error() string {
	return "recourse: provider answered HTTP " + strconv.Itoa(e.StatusCode)
}

// Client is the native typed client: it encodes a chat.Request once with the
// chain's codec, sends it through the chain and decodes the completion. It
// is safe for concurrent use.
type Client struct {
	base   string
	chain  *chain.Chain
	codec  codec.Codec
	header http.Header

	fallback []FallbackTarget // WithFallback's targets
	rules    fallback.Rules
	cred     func(context.Context, http.Header) error // WithCredential's function
	err      error                                    // an option's refusal, returned by New
}

// Option configures a Client.
type Option func(*Client)

// WithAPIKey sends key as a bearer token. The key is copied once per logical
// request and never appears in a safe output.
func WithAPIKey(key string) Option {
	return func(c *Client) { c.header.Set("Authorization", "Bearer "+key) }
}

// WithHeader adds a request header to every call.
func WithHeader(k, v string) Option { return func(c *Client) { c.header.Add(k, v) } }

// New returns a client that posts to baseURL through ch, using ch's
// codec. baseURL is the provider's root ("https://api.openai.com",
// "http://127.0.0.1:11434") or, as SDKs take it, the root with the leading
// part of the codec's path ("https://api.openai.com/v1"): a base that ends
// in the first segments of the endpoint path is not given them twice, so
// both post to .../v1/chat/completions. baseURL must be an absolute http or
// https URL without a query or fragment. ch must have an engine with a
// codec (chain.Default always does).
func New(baseURL string, ch *chain.Chain, opts ...Option) (*Client, error) {
	if ch == nil || ch.Codec() == nil {
		return nil, errors.New("client: New needs a chain with a codec (use chain.Default)")
	}
	base, err := joinBase(baseURL, ch.Codec().Path())
	if err != nil {
		return nil, err
	}
	c := &Client{base: base, chain: ch, codec: ch.Codec(), header: http.Header{}}
	for _, o := range opts {
		o(c)
	}
	if c.err != nil {
		return nil, c.err
	}
	return c, nil
}

// joinBase returns the URL prefix that, followed by path, gives the endpoint:
// base without a trailing slash, and without its last segments when they
// are the first segments of path ("/v1" for "/v1/chat/completions").
func joinBase(base, path string) (string, error) {
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
		return "", errors.New("client: New needs an absolute http or https base URL without a query or fragment")
	}
	b := strings.TrimRight(base, "/")
	have := strings.Split(strings.Trim(u.Path, "/"), "/")
	want := strings.Split(strings.Trim(path, "/"), "/")
	for n := min(len(have), len(want)-1); n > 0; n-- {
		if slices.Equal(have[len(have)-n:], want[:n]) {
			return strings.TrimSuffix(b, "/"+strings.Join(want[:n], "/")), nil
		}
	}
	return b, nil
}

// Gate returns the chain's resend gate (chain.Chain.Gate) bound to the client's
// endpoint, model and credential, as the engine binds it for the client's
// calls, or nil when the chain has none. The broker binds it for its
// continuations, which withdraw from the quota like resends.
func (c *Client) Gate(model string) layer.UpstreamGate {
	g := c.chain.Gate()
	if g == nil {
		return nil
	}
	u, err := url.Parse(c.base)
	if err != nil {
		return nil
	}
	return g.Bind(u, model, c.header)
}

// Chain returns the chain the client sends through.
func (c *Client) Chain() *chain.Chain { return c.chain }

// Complete runs an ordinary completion (a structured one when req.Schema or
// JSON mode is set). It returns a *layer.RecoveryError when recovery ended
// without success, a *layer.PolicyError for an invalid per-call policy, a
// *codec.UnsupportedError for a control the provider does not support, and
// a *StatusError for a non-2xx answer when recovery is disabled. The
// caller's request is never modified.
func (c *Client) Complete(ctx context.Context, req *chat.Request) (*chat.Completion, error) {
	r := *req
	r.Stream = false
	return c.do(ctx, &r)
}

// CompleteStructured runs a structured completion that asks for JSON
// following schema (R16.3: the schema is sent, no tools are added and the
// answer is parsed, not validated).
func (c *Client) CompleteStructured(ctx context.Context, req *chat.Request, schema chat.Schema) (*chat.Completion, error) {
	r := *req
	r.Stream = false
	r.Schema = &schema
	return c.do(ctx, &r)
}

// legacyTimeout is implemented by codecs whose provider has a timeout that
// applies only while recovery is disabled (oMLX).
type legacyTimeout interface{ LegacyTimeout() time.Duration }

func (c *Client) do(ctx context.Context, req *chat.Request) (*chat.Completion, error) {
	return withFallback(c, ctx, req, (*Client).doOnce)
}

// doOnce runs an ordinary or structured call on the client alone.
func (c *Client) doOnce(ctx context.Context, req *chat.Request) (*chat.Completion, error) {
	body, err := c.codec.Encode(req)
	if err != nil {
		return nil, err
	}
	if lt, ok := c.codec.(legacyTimeout); ok && !c.recovering(ctx) {
		if d := lt.LegacyTimeout(); d > 0 {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, d)
			defer cancel()
		}
	}
	call := callFor(ctx, req)
	hreq, err := c.newRequest(ctx, call, body, true)
	if err != nil {
		return nil, err
	}
	resp, err := c.chain.RoundTrip(hreq)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	report := &call.Result
	if report.Completion != nil && report.Err == nil && resp.StatusCode/100 == 2 {
		// The retry layer decoded this very body with the same codec: read
		// it to its end, so that its connection can be reused, without
		// decoding it a second time.
		if _, err := io.Copy(io.Discard, resp.Body); err != nil {
			return nil, err
		}
		return report.Completion, nil
	}
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if report.Err != nil {
		return nil, report.Err
	}
	if resp.StatusCode/100 != 2 {
		return nil, &StatusError{StatusCode: resp.StatusCode, Body: b}
	}
	return c.codec.Decode(b)
}

// recovering reports whether calls with ctx run with recovery enabled.
func (c *Client) recovering(ctx context.Context) bool {
	if p, ok := retry.PolicyFrom(ctx); ok {
		return p != nil
	}
	return c.chain.Recovers()
}

// callHeader returns the header of one native call: a copy of the
// client's header (R2.3), the credential's headers, and Content-Type and,
// when accept is set, Accept, both application/json, which replace what
// the client or the credential set under those names. The copy is one map
// sized for all of them and one array of values shared by the client's
// headers and the two the client adds, so that adding them allocates
// nothing more; a credential that sets a header allocates its value as
// before.
func (c *Client) callHeader(ctx context.Context, accept bool) (http.Header, error) {
	nv, nk := 1, len(c.header)+2 // Content-Type, and a credential's key
	if accept {
		nv, nk = 2, nk+1
	}
	for _, vv := range c.header {
		nv += len(vv)
	}
	sv := make([]string, nv)
	h := make(http.Header, nk)
	for k, vv := range c.header {
		if vv == nil {
			h[k] = nil // as Header.Clone keeps it
			continue
		}
		n := copy(sv, vv)
		h[k] = sv[:n:n]
		sv = sv[n:]
	}
	if err := c.credential(ctx, h); err != nil {
		return nil, err
	}
	sv[0] = "application/json"
	h["Content-Type"] = sv[:1:1]
	if accept {
		sv[1] = "application/json"
		h["Accept"] = sv[1:2:2]
	}
	return h, nil
}

// nativeCall is the per-call value of a native call and its request
// facts, in one allocation.
type nativeCall struct {
	call  layer.Call
	facts codec.RequestInfo
}

// callFor returns the per-call value of a native call: the *layer.Call the
// caller placed in ctx (a broker observing the completion), or a new one,
// with the request facts and typed errors set. A new one and its facts are
// one allocation.
func callFor(ctx context.Context, req *chat.Request) *layer.Call {
	lc := layer.CallFrom(ctx)
	var facts *codec.RequestInfo
	if lc == nil {
		nc := &nativeCall{}
		lc, facts = &nc.call, &nc.facts
	} else {
		facts = new(codec.RequestInfo)
	}
	*facts = factsOf(req)
	lc.Facts, lc.TypedErrors = facts, true
	return lc
}

// factsOf returns the request facts the engine needs, from the request the
// client is about to encode: the model, and whether the call streams, asks
// for structured output (a schema or JSON mode) or neither.
func factsOf(req *chat.Request) codec.RequestInfo {
	info := codec.RequestInfo{Model: req.Model, Operation: codec.Ordinary}
	switch {
	case req.Stream:
		info.Operation = codec.Streaming
	case req.Schema != nil || req.Options.JSONMode:
		info.Operation = codec.Structured
	}
	return info
}

// newRequest returns the POST of body to the codec's path on the client's
// base URL (a codec.Router's path for the call's model and operation), for call, with the call's header (callHeader: the client's
// headers, its credential — an error of the credential hook is the
// client's CredentialError — Content-Type application/json and, for a
// unary call, Accept). Its body is a layer.RequestBody, which the engine
// keeps without copying; GetBody, for a chain without an engine, a call
// without recovery or a layer above the engine, returns a bytes.Reader,
// which http.Transport sends with the headers in one write. A call that
// the engine of a direct chain recovers gets none: nothing would call it
// (R2.8). It is the request of both the unary and the streamed call.
func (c *Client) newRequest(ctx context.Context, call *layer.Call, body []byte, accept bool) (*http.Request, error) {
	path := c.codec.Path()
	if r, ok := c.codec.(codec.Router); ok && call.Facts != nil {
		// The wire names the model and the operation in the path (R23.1).
		path = r.RoutePath(call.Facts.Model, call.Facts.Operation)
	}
	req, err := http.NewRequestWithContext(layer.WithCall(ctx, call), http.MethodPost, c.base+path, nil)
	if err != nil {
		return nil, err
	}
	req.Body = layer.NewRequestBody(body)
	req.ContentLength = int64(len(body))
	if !c.chain.Direct() || !c.recovering(ctx) {
		req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	}
	if req.Header, err = c.callHeader(ctx, accept); err != nil {
		return nil, err
	}
	return req, nil
}
