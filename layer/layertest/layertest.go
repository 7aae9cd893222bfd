// Package layertest holds the contract test that every recourse layer must
// pass. The project's own layers run it; a custom layer proves the same
// contract from its own tests:
//
//	func TestMyLayer(t *testing.T) { layertest.Layer(t, mylayer.New()) }
//
// A codec's contract test is package codec/codectest.
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
