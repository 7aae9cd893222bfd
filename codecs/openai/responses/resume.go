package responses

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/recourse-dev/recourse/layer"
)

// Background reports whether body, an encoded request, has
// "background":true: the provider keeps the response, so a failure before
// its ID is known may have been accepted (R19.11). A body that is not a
// request object is not background.
func (c *Codec) Background(body []byte) bool {
	o, err := parseObject(body, "request")
	if err != nil || o == nil {
		return false
	}
	var bg bool
	return o.get("background", &bg) == nil && bg
}

// ResumePoint returns the position of a background stream decoded by obs,
// a *StreamDecoder: its response ID and the sequence number of the last
// event Next handed over (-1 when none carried one). ok is false for any
// other observer, a foreground stream, or a stream whose response ID is not
// known yet (R19.9, R19.11).
func (c *Codec) ResumePoint(obs layer.Observer) (layer.ResumePoint, bool) {
	d, isDec := obs.(*StreamDecoder)
	if !isDec || !d.background || d.id == "" {
		return layer.ResumePoint{}, false
	}
	p := layer.ResumePoint{ResponseID: d.id, Cursor: -1}
	if seq, ok := d.DeliveredSequence(); ok {
		p.Cursor = seq
	}
	return p, true
}

// ResumeRequest returns GET {create path}/{id}?stream=true&starting_after=
// {cursor} (no starting_after when the cursor is -1) with create's headers
// but its body's Content-Type and Content-Length, under create's context
// (R19.9). create is not modified.
func (c *Codec) ResumeRequest(create *http.Request, p layer.ResumePoint) *http.Request {
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
// to its path and query as its query.
func derived(create *http.Request, method, suffix, query string) *http.Request {
	u := *create.URL
	u.Path = strings.TrimSuffix(u.Path, "/") + suffix
	u.RawPath = ""
	if create.URL.RawPath != "" {
		u.RawPath = strings.TrimSuffix(create.URL.RawPath, "/") + suffix
	}
	u.RawQuery = query
	r := create.Clone(create.Context())
	r.Method, r.URL, r.Host = method, &u, create.Host
	r.Body, r.GetBody, r.ContentLength = http.NoBody, nil, 0
	r.Header.Del("Content-Type")
	r.Header.Del("Content-Length")
	return r
}

// ResumeObserver returns the *StreamDecoder of a resume read after p: it
// keeps what obs, a *StreamDecoder, decoded (text, tool calls, response ID
// and model), so the terminal frame's Completion is the whole response, and
// drops every event whose sequence number is at or below p.Cursor (R19.9).
// For any other obs it returns a new decoder for a background stream that
// drops those events.
func (c *Codec) ResumeObserver(obs layer.Observer, p layer.ResumePoint) layer.Observer {
	prev, _ := obs.(*StreamDecoder)
	info := layer.RequestInfo{Operation: layer.Streaming, Background: true}
	if prev != nil {
		info.DropText, info.TypedFrames = prev.discardText, prev.q.ErrorRawOnly
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
