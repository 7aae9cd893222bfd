// Package layertest holds the contract tests that every recourse layer and
// codec must pass. The project's own layers and codecs run them; a custom
// layer or codec proves the same contract from its own tests:
//
//	func TestMyLayer(t *testing.T) { layertest.Layer(t, mylayer.New()) }
//	func TestMyCodec(t *testing.T) { layertest.Codec(t, mycodec.New(), sampleRequest) }
package layertest

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/url"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/recourse-dev/recourse/chat"
	"github.com/recourse-dev/recourse/layer"
)

// body is a response body that records whether it was closed.
type body struct {
	r      io.Reader
	closed atomic.Bool
}

func (b *body) Read(p []byte) (int, error) { return b.r.Read(p) }
func (b *body) Close() error               { b.closed.Store(true); return nil }

// fake is the inner RoundTripper the layer under test wraps.
type fake struct {
	mu     sync.Mutex
	bodies []*body
	seen   [][]byte
	status int
	err    error
}

func (f *fake) RoundTrip(req *http.Request) (*http.Response, error) {
	var in []byte
	if req.Body != nil {
		in, _ = io.ReadAll(req.Body)
		req.Body.Close()
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.seen = append(f.seen, in)
	if f.err != nil {
		return nil, f.err
	}
	b := &body{r: strings.NewReader(`{"ok":true}`)}
	f.bodies = append(f.bodies, b)
	return &http.Response{StatusCode: f.status, Header: http.Header{"Content-Type": {"application/json"}}, Body: b, Request: req}, nil
}

// requestState is what a caller's request holds before RoundTrip: a deep
// copy of its header, URL and trailer, and the identity of its context,
// body and body replay function.
type requestState struct {
	method        string
	url           url.URL
	urlPtr        *url.URL
	user          string
	header        http.Header
	headerPtr     map[string][]string
	trailer       http.Header
	host          string
	contentLength int64
	ctx           context.Context
	body          io.ReadCloser
	getBody       uintptr
}

func snapshot(req *http.Request) requestState {
	s := requestState{
		method: req.Method, header: req.Header.Clone(), headerPtr: req.Header, trailer: req.Trailer.Clone(),
		host: req.Host, contentLength: req.ContentLength, ctx: req.Context(), body: req.Body, urlPtr: req.URL,
	}
	if req.URL != nil {
		s.url = *req.URL
		if req.URL.User != nil {
			s.user = req.URL.User.String()
		}
	}
	if req.GetBody != nil {
		s.getBody = reflect.ValueOf(req.GetBody).Pointer()
	}
	return s
}

// changes returns what differs in req from the state s was taken of: each
// in-place change of the header, URL, trailer, method, host, content
// length, context, body or body replay function.
func (s requestState) changes(req *http.Request) []string {
	var out []string
	if req.Method != s.method {
		out = append(out, "Method")
	}
	if !reflect.DeepEqual(map[string][]string(req.Header), map[string][]string(s.header)) {
		out = append(out, "Header")
	} else if reflect.ValueOf(req.Header).Pointer() != reflect.ValueOf(s.headerPtr).Pointer() {
		out = append(out, "Header (replaced)")
	}
	if !reflect.DeepEqual(map[string][]string(req.Trailer), map[string][]string(s.trailer)) {
		out = append(out, "Trailer")
	}
	switch {
	case req.URL != s.urlPtr:
		out = append(out, "URL (replaced)")
	case req.URL != nil:
		u := *req.URL
		user := ""
		if u.User != nil {
			user = u.User.String()
		}
		u.User, s.url.User = nil, nil
		if u != s.url || user != s.user {
			out = append(out, "URL")
		}
	}
	if req.Host != s.host {
		out = append(out, "Host")
	}
	if req.ContentLength != s.contentLength {
		out = append(out, "ContentLength")
	}
	if req.Context() != s.ctx {
		out = append(out, "context")
	}
	if req.Body != s.body {
		out = append(out, "Body")
	}
	var gb uintptr
	if req.GetBody != nil {
		gb = reflect.ValueOf(req.GetBody).Pointer()
	}
	if gb != s.getBody {
		out = append(out, "GetBody")
	}
	return out
}

func newRequest(t testing.TB) *http.Request {
	req, err := http.NewRequest(http.MethodPost, "http://127.0.0.1:1/v1/chat/completions", bytes.NewReader([]byte(`{"model":"m"}`)))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer layertest")
	req.Header.Set("Content-Type", "application/json")
	return req
}

// Layer checks that l keeps the standard library's RoundTripper contract
// when no engine is above it: it has a name and a known position, passes a
// request and its response through unchanged (calling next once), leaves
// the caller's request unchanged (its header, URL, trailer, method, host,
// content length, context, body and GetBody are what they were: a layer
// that changes a request clones it first), returns either a response or an error
// (never both), lets the caller close the body it returns, passes errors up,
// and is safe for concurrent use. A layer that answers some requests itself
// (a cache) is checked with a request it passes on.
func Layer(t *testing.T, l layer.Layer) {
	t.Helper()
	if l.Name() == "" {
		t.Error("Name() is empty: chains name their layers in Order and in errors")
	}
	if p := l.Position(); p < layer.PerCall || p > layer.StageSender {
		t.Fatalf("Position() = %v, not a known position", p)
	}
	if l.Position() == layer.StageSender {
		// The sender is the innermost layer: it ignores next by design.
		return
	}
	t.Run("pass-through", func(t *testing.T) {
		inner := &fake{status: 200}
		rt := l.Wrap(inner)
		req := newRequest(t)
		before := snapshot(req)
		resp, err := rt.RoundTrip(req)
		if err != nil {
			t.Fatalf("RoundTrip: %v", err)
		}
		got, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if string(got) != `{"ok":true}` {
			t.Errorf("body = %q, want the inner body unchanged", got)
		}
		if resp.StatusCode != 200 {
			t.Errorf("status = %d, want 200", resp.StatusCode)
		}
		if len(inner.seen) != 1 || string(inner.seen[0]) != `{"model":"m"}` {
			t.Errorf("inner saw %q, want exactly one request with the body unchanged", inner.seen)
		}
		for _, b := range inner.bodies {
			if !b.closed.Load() {
				t.Error("the inner response body was not closed when the caller closed the returned one")
			}
		}
		for _, problem := range before.changes(req) {
			t.Errorf("the caller's request was modified in place: %s (a layer clones a request before changing it)", problem)
		}
	})
	t.Run("error", func(t *testing.T) {
		sentinel := errors.New("layertest: transport failed")
		rt := l.Wrap(&fake{err: sentinel})
		resp, err := rt.RoundTrip(newRequest(t))
		if resp != nil {
			resp.Body.Close()
			t.Error("a response was returned together with an error")
		}
		if !errors.Is(err, sentinel) {
			t.Errorf("err = %v, want the inner error passed up", err)
		}
	})
	t.Run("concurrent", func(t *testing.T) {
		inner := &fake{status: 200}
		rt := l.Wrap(inner)
		var wg sync.WaitGroup
		for range 16 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				resp, err := rt.RoundTrip(newRequest(t))
				if err != nil {
					t.Error(err)
					return
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}()
		}
		wg.Wait()
		if len(inner.seen) != 16 {
			t.Errorf("inner saw %d requests, want 16", len(inner.seen))
		}
	})
}

// Codec checks the codec contract: complete capabilities with evidence
// (R15.1), deterministic single encoding (R2.3), Describe reading back what
// Encode wrote, typed errors (never a panic) for hostile bodies, a Decode
// that never returns content its ordinary Observer did not count (a body
// nested deeper than the observer scans is refused, R13.2), an Observer
// for every operation (a StreamDecoder for streaming), and, for a
// layer.ModelRewriter, a WithModel that changes the model and nothing else
// (R20.1). The sample's model must be a plain string that the request
// names once.
func Codec(t *testing.T, c layer.Codec, sample *chat.Request) {
	t.Helper()
	if err := c.Capabilities().Validate(); err != nil {
		t.Errorf("Capabilities: %v", err)
	}
	if c.Provider() == "" || !strings.HasPrefix(c.Path(), "/") {
		t.Errorf("Provider() = %q, Path() = %q", c.Provider(), c.Path())
	}
	a, err := c.Encode(sample)
	if err != nil {
		t.Fatalf("Encode: %v", err)
	}
	b, _ := c.Encode(sample)
	if !bytes.Equal(a, b) {
		t.Error("Encode is not deterministic")
	}
	info, err := c.Describe(a)
	if rt, ok := c.(layer.Router); ok {
		// The model is named in the path (R23.1).
		info, err = describeRouted(rt, sample, a)
	}
	if err != nil {
		t.Errorf("Describe(Encode(sample)): %v", err)
	} else if info.Model != sample.Model {
		t.Errorf("Describe model = %q, want %q", info.Model, sample.Model)
	}
	for _, hostile := range []string{"", "{", "null", "[]", `{"error":"x"}`, "\xff\xfe", strings.Repeat("[", 10000)} {
		comp, err := c.Decode([]byte(hostile))
		if err == nil {
			t.Errorf("Decode(%q) = %v, want an error", hostile, comp)
			continue
		}
		var pe *layer.ProtocolError
		var pv *layer.ProviderError
		if !errors.As(err, &pe) && !errors.As(err, &pv) {
			t.Errorf("Decode(%q) error %T, want *layer.ProtocolError or *layer.ProviderError", hostile, err)
		}
		_ = c.ErrorCode([]byte(hostile))
	}
	// R13.2: whatever Decode returns was observed. A body nested deeper
	// than an observer scans, in the shapes of both the OpenAI and the
	// Ollama answers, is refused, or its content was counted.
	for _, n := range []int{100, 600} {
		deep := `{"x":` + strings.Repeat("[", n) + strings.Repeat("]", n) +
			`,"model":"m","choices":[{"message":{"role":"assistant","content":"deep"}}],"message":{"role":"assistant","content":"deep"},"done":true}`
		comp, err := c.Decode([]byte(deep))
		if err != nil || comp == nil {
			continue
		}
		o := c.NewObserver(layer.RequestInfo{Model: sample.Model, Operation: layer.Ordinary})
		o.Write([]byte(deep))
		if got := o.Observed().ContentBytes; got < int64(len(comp.Message.Content)) {
			t.Errorf("Decode of a body %d deep returned %d content bytes, its observer counted %d: Decode must refuse what the observer cannot account for (R13.2)", n, len(comp.Message.Content), got)
		}
	}
	for _, op := range []layer.Operation{layer.Ordinary, layer.Structured, layer.Streaming} {
		o := c.NewObserver(layer.RequestInfo{Model: sample.Model, Operation: op})
		if o == nil {
			t.Errorf("NewObserver(%s) = nil", op)
			continue
		}
		o.Write([]byte("\xff{garbage"))
		_ = o.Observed()
		if op == layer.Streaming {
			if d, ok := o.(layer.StreamDecoder); !ok {
				t.Error("the streaming observer is not a layer.StreamDecoder")
			} else if d.End() == nil {
				t.Error("End() after garbage = nil, want an incomplete-stream error")
			}
		}
	}
	if rw, ok := c.(layer.ModelRewriter); ok {
		modelRewriter(t, c, rw, a, sample.Model)
	}
	if rt, ok := c.(layer.Router); ok {
		router(t, rt, sample, a)
	}
}

// describeRouted describes body as sent to the path a Router builds for
// sample's model and operation.
func describeRouted(rt layer.Router, sample *chat.Request, body []byte) (layer.RequestInfo, error) {
	op := layer.Ordinary
	if sample.Stream {
		op = layer.Streaming
	}
	u, err := url.Parse("https://example.invalid" + rt.RoutePath(sample.Model, op))
	if err != nil {
		return layer.RequestInfo{}, err
	}
	return rt.DescribeURL(u, body)
}

// router checks a Router (R23.1): each operation's path describes back
// as that operation and model, WithModelURL names another model and keeps
// every other part of the URL, and a URL that is no endpoint is refused.
func router(t *testing.T, rt layer.Router, sample *chat.Request, body []byte) {
	t.Helper()
	for _, op := range []layer.Operation{layer.Ordinary, layer.Streaming} {
		u, err := url.Parse("https://example.invalid/base" + rt.RoutePath(sample.Model, op))
		if err != nil {
			t.Errorf("RoutePath(%q, %s) is not a URL path: %v", sample.Model, op, err)
			continue
		}
		if info, err := rt.DescribeURL(u, body); err != nil || info.Model != sample.Model || (op == layer.Streaming) != (info.Operation == layer.Streaming) {
			t.Errorf("DescribeURL(RoutePath(%q, %s)) = %+v, %v", sample.Model, op, info, err)
		}
		other := sample.Model + "-other"
		before := *u
		nu, err := rt.WithModelURL(u, other)
		if err != nil {
			t.Errorf("WithModelURL: %v", err)
			continue
		}
		if *u != before {
			t.Error("WithModelURL changed its argument")
		}
		if info, err := rt.DescribeURL(nu, body); err != nil || info.Model != other || info.Operation != func() layer.Operation { i, _ := rt.DescribeURL(u, body); return i.Operation }() {
			t.Errorf("DescribeURL(WithModelURL(u, %q)) = %+v, %v", other, info, err)
		}
		if nu.RawQuery != u.RawQuery || nu.Host != u.Host || nu.Scheme != u.Scheme {
			t.Errorf("WithModelURL changed more than the model: %s", nu.Redacted())
		}
	}
	if _, err := rt.DescribeURL(&url.URL{Path: "/elsewhere"}, body); err == nil {
		t.Error("DescribeURL(/elsewhere) = nil error, want one")
	}
	if _, err := rt.WithModelURL(&url.URL{Path: "/elsewhere"}, "x"); err == nil {
		t.Error("WithModelURL(/elsewhere) = nil error, want one")
	}
}

// modelRewriter checks a codec's WithModel (R20.1): the body Encode wrote
// names another model, every other byte kept, and a body that is not a
// request is refused.
func modelRewriter(t *testing.T, c layer.Codec, rw layer.ModelRewriter, body []byte, model string) {
	t.Helper()
	other := model + "-other"
	out, err := rw.WithModel(body, other)
	if err != nil {
		t.Errorf("WithModel: %v", err)
		return
	}
	if info, err := c.Describe(out); err != nil || info.Model != other {
		t.Errorf("Describe(WithModel(body, %q)) = %+v, %v", other, info, err)
	}
	if want := string(bytes.Replace(body, []byte(`"`+model+`"`), []byte(`"`+other+`"`), 1)); string(out) != want {
		t.Errorf("WithModel changed more than the model:\n got %s\nwant %s", out, want)
	}
	if _, err := rw.WithModel([]byte("[]"), "x"); err == nil {
		t.Error(`WithModel("[]") = nil error, want one`)
	}
}
