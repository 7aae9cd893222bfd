package responses

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/recourse-dev/recourse/codec"
	"github.com/recourse-dev/recourse/codecs/internal/openaiwire"
)

// Background reports whether body, an encoded request, has
// "background":true: the provider keeps the response, so a failure before
// its ID is known may have been accepted (R19.11). A body that is not a
// request object is not background.
func (c *Codec) Background(body []byte) bool {
	o, err := openaiwire.ParseObject(body, "request")
	if err != nil || o == nil {
		return false
	}
	var bg bool
	return o.Get("background", &bg) == nil && bg
}

// ResumePoint returns the position of a background stream decoded by obs,
// a *StreamDecoder: its response ID and the sequence number of the last
// event Next handed over. ok is false for any other observer, a foreground
// stream, a stream whose response ID is not known yet (R19.11), and a
// stream that handed over no event with a sequence_number: there is no
// cursor to read after, so a resume could repeat what the consumer had
// (R19.9).
func (c *Codec) ResumePoint(obs codec.Observer) (codec.ResumePoint, bool) {
	d, isDec := obs.(*StreamDecoder)
	if !isDec || !d.background || d.id == "" {
		return codec.ResumePoint{}, false
	}
	seq, ok := d.DeliveredSequence()
	if !ok {
		return codec.ResumePoint{}, false
	}
	return codec.ResumePoint{ResponseID: d.id, Cursor: seq}, true
}

// ResumeRequest returns GET {create path}/{id}?stream=true&starting_after=
// {cursor} (no starting_after when the cursor is -1) with create's headers
// but its body's Content-Type and Content-Length, under create's context
// (R19.9). create is not modified.
func (c *Codec) ResumeRequest(create *http.Request, p codec.ResumePoint) *http.Request {
	q := url.Values{"stream": {"true"}}
	if p.Cursor >= 0 {
		q.Set("starting_after", strconv.FormatInt(p.Cursor, 10))
	}
	return derived(create, http.MethodGet, "/"+url.PathEscape(p.ResponseID), q.Encode())
}

// CancelRequest returns POST {create path}/{id}/cancel without a body, with
// create's headers but its body's, under create's context (R19.12), or nil
// when the codec was built with [KeepRunning].
func (c *Codec) CancelRequest(create *http.Request, id string) *http.Request {
	if c.keepRunning {
		return nil
	}
	return derived(create, http.MethodPost, "/"+url.PathEscape(id)+"/cancel", "")
}

// derived returns a bodiless request to create's URL with suffix appended
// to its path and query as its query. When create is already a read of
// the response (its path ends in /{id}), the part of suffix that names the
// response is not appended again.
func derived(create *http.Request, method, suffix, query string) *http.Request {
	u := *create.URL
	base := strings.TrimSuffix(u.EscapedPath(), "/")
	if _, ok := readPath(create.URL); ok {
		// {prefix}/v1/responses/{id}: the response is named already.
		i := strings.LastIndexByte(base, '/')
		base = base[:i]
	}
	if p, err := url.PathUnescape(base + suffix); err == nil {
		u.Path = p
	}
	u.RawPath = ""
	if esc := base + suffix; esc != (&url.URL{Path: u.Path}).EscapedPath() {
		u.RawPath = esc
	}
	u.RawQuery = query
	r := create.Clone(create.Context())
	r.Method, r.URL, r.Host = method, &u, create.Host
	r.Body, r.GetBody, r.ContentLength = http.NoBody, nil, 0
	r.Header.Del("Content-Type")
	r.Header.Del("Content-Length")
	return r
}

// readPath returns the response ID of a URL …/v1/responses/{id}, and
// ok=false for any other path.
func readPath(u *url.URL) (id string, ok bool) {
	p := strings.TrimSuffix(u.Path, "/")
	i := strings.LastIndex(p, "/v1/responses/")
	if i < 0 {
		return "", false
	}
	id = p[i+len("/v1/responses/"):]
	if id == "" || strings.Contains(id, "/") {
		return "", false
	}
	return id, true
}

// Creates reports whether req is a create: POST to a path ending in
// /v1/responses.
func (c *Codec) Creates(req *http.Request) bool {
	return req.Method == http.MethodPost && strings.HasSuffix(strings.TrimSuffix(req.URL.Path, "/"), c.Path())
}

// ReadOf reports whether req is GET {prefix}/v1/responses/{id}: a retrieve,
// or with stream=true (in the query, or "stream":true in a JSON body, as
// openai-go's GetStreaming sends it) a stream read after its
// starting_after (cursor -1 when absent). A starting_after that is not a
// non-negative integer is no read the engine recovers (ok=false): it
// passes through, and the provider judges it (R19.13).
func (c *Codec) ReadOf(req *http.Request, body []byte) (codec.ResumePoint, bool, bool) {
	if req.Method != http.MethodGet {
		return codec.ResumePoint{}, false, false
	}
	id, ok := readPath(req.URL)
	if !ok {
		return codec.ResumePoint{}, false, false
	}
	q := req.URL.Query()
	p := codec.ResumePoint{ResponseID: id, Cursor: -1}
	if v := q.Get("starting_after"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			return codec.ResumePoint{}, false, false
		}
		p.Cursor = n
	}
	stream := q.Get("stream") == "true"
	if !stream && len(body) > 0 {
		if o, err := openaiwire.ParseObject(body, "request"); err == nil && o != nil {
			_ = o.Get("stream", &stream) // not a boolean: no stream
		}
	}
	return p, stream, true
}

// ResumeObserver returns the *StreamDecoder of a resume read after p: it
// keeps what obs, a *StreamDecoder, decoded (text, tool calls, response ID
// and model), so the terminal frame's Completion is the whole response, and
// drops every event whose sequence number is at or below p.Cursor (R19.9).
// For any other obs it returns a new decoder for a background stream that
// drops those events.
func (c *Codec) ResumeObserver(obs codec.Observer, p codec.ResumePoint) codec.Observer {
	prev, _ := obs.(*StreamDecoder)
	info := codec.RequestInfo{Operation: codec.Streaming, Background: true}
	if prev != nil {
		info.DropText, info.TypedFrames, info.ProviderFinish = prev.discardText, prev.q.ErrorRawOnly, prev.providerFinish
	}
	d := NewStreamDecoder(info)
	d.skip = p.Cursor
	if p.Cursor >= 0 {
		d.delivered, d.hasDelivered = p.Cursor, true
	}
	d.id = p.ResponseID
	if prev != nil {
		d.content.WriteString(prev.content.String())
		d.reason.WriteString(prev.reason.String())
		d.refused, d.calls, d.model = prev.refused, prev.calls, prev.model
		if prev.id != "" {
			d.id = prev.id
		}
	}
	return d
}
