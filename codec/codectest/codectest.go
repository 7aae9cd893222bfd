// Package codectest holds the contract test that every recourse codec must
// pass. The project's own codecs run it; a custom codec proves the same
// contract from its own tests:
//
//	func TestMyCodec(t *testing.T) { codectest.Codec(t, mycodec.New(), sampleRequest) }
package codectest

import (
	"bytes"
	"errors"
	"net/url"
	"strings"
	"testing"

	"github.com/recourse-dev/recourse/chat"
	"github.com/recourse-dev/recourse/codec"
)

// Codec checks the codec contract: complete capabilities with evidence
// (R15.1), deterministic single encoding (R2.3), Describe reading back what
// Encode wrote, typed errors (never a panic) for hostile bodies, a Decode
// that never returns content its ordinary Observer did not count (a body
// nested deeper than the observer scans is refused, R13.2), an Observer
// for every operation (a StreamDecoder for streaming), and, for a
// codec.ModelRewriter, a WithModel that changes the model and nothing else
// and, for a codec.Router, a DescribeURL, RoutePath and WithModelURL that
// agree (R23.1)
// (R20.1). The sample's model must be a plain string that the request
// names once.
func Codec(t *testing.T, c codec.Codec, sample *chat.Request) {
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
	if rt, ok := c.(codec.Router); ok {
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
		var pe *codec.ProtocolError
		var pv *codec.ProviderError
		if !errors.As(err, &pe) && !errors.As(err, &pv) {
			t.Errorf("Decode(%q) error %T, want *codec.ProtocolError or *codec.ProviderError", hostile, err)
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
		o := c.NewObserver(codec.RequestInfo{Model: sample.Model, Operation: codec.Ordinary})
		o.Write([]byte(deep))
		if got := o.Observed().ContentBytes; got < int64(len(comp.Message.Content)) {
			t.Errorf("Decode of a body %d deep returned %d content bytes, its observer counted %d: Decode must refuse what the observer cannot account for (R13.2)", n, len(comp.Message.Content), got)
		}
	}
	for _, op := range []codec.Operation{codec.Ordinary, codec.Structured, codec.Streaming} {
		o := c.NewObserver(codec.RequestInfo{Model: sample.Model, Operation: op})
		if o == nil {
			t.Errorf("NewObserver(%s) = nil", op)
			continue
		}
		o.Write([]byte("\xff{garbage"))
		_ = o.Observed()
		if op == codec.Streaming {
			if d, ok := o.(codec.StreamDecoder); !ok {
				t.Error("the streaming observer is not a codec.StreamDecoder")
			} else if d.End() == nil {
				t.Error("End() after garbage = nil, want an incomplete-stream error")
			}
		}
	}
	if rw, ok := c.(codec.ModelRewriter); ok {
		modelRewriter(t, c, rw, a, sample.Model)
	}
	if rt, ok := c.(codec.Router); ok {
		router(t, rt, sample, a)
	}
}

// describeRouted describes body as sent to the path a Router builds for
// sample's model and operation.
func describeRouted(rt codec.Router, sample *chat.Request, body []byte) (codec.RequestInfo, error) {
	op := codec.Ordinary
	if sample.Stream {
		op = codec.Streaming
	}
	u, err := url.Parse("https://example.invalid" + rt.RoutePath(sample.Model, op))
	if err != nil {
		return codec.RequestInfo{}, err
	}
	return rt.DescribeURL(u, body)
}

// router checks a Router (R23.1): each operation's path describes back
// as that operation and model, WithModelURL names another model and keeps
// every other part of the URL, and a URL that is no endpoint is refused.
func router(t *testing.T, rt codec.Router, sample *chat.Request, body []byte) {
	t.Helper()
	for _, op := range []codec.Operation{codec.Ordinary, codec.Streaming} {
		u, err := url.Parse("https://example.invalid/base" + rt.RoutePath(sample.Model, op))
		if err != nil {
			t.Errorf("RoutePath(%q, %s) is not a URL path: %v", sample.Model, op, err)
			continue
		}
		info, err := rt.DescribeURL(u, body)
		if err != nil || info.Model != sample.Model || (op == codec.Streaming) != (info.Operation == codec.Streaming) {
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
		if got, err := rt.DescribeURL(nu, body); err != nil || got.Model != other || got.Operation != info.Operation {
			t.Errorf("DescribeURL(WithModelURL(u, %q)) = %+v, %v", other, got, err)
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
func modelRewriter(t *testing.T, c codec.Codec, rw codec.ModelRewriter, body []byte, model string) {
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
