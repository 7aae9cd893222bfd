package gemini

import (
	"errors"
	"net/url"
	"strings"

	"github.com/recourse-dev/recourse/codec"
)

// The methods of the generateContent endpoints.
const (
	methodUnary  = "generateContent"
	methodStream = "streamGenerateContent"
)

// errNotEndpoint is DescribeURL's and WithModelURL's error for a path that
// is not a generateContent endpoint. It quotes nothing of the path.
var errNotEndpoint = errors.New("gemini: the request path is not …/models/{model}:generateContent or :streamGenerateContent")

// target is what a request path names: the model, the method, and where in
// the path the model segment lies.
type target struct {
	model, method string
	start, end    int // the model segment's byte range in the path
}

// parsePath finds …/models/{model}:{method} at the end of path. A model
// named "tunedModels/x" is not one of these endpoints.
func parsePath(path string) (target, bool) {
	i := strings.LastIndex(path, "/models/")
	if i < 0 {
		return target{}, false
	}
	start := i + len("/models/")
	rest := path[start:]
	j := strings.LastIndexByte(rest, ':')
	if j <= 0 || strings.IndexByte(rest[:j], '/') >= 0 {
		return target{}, false
	}
	t := target{model: rest[:j], method: rest[j+1:], start: start, end: start + j}
	if t.method != methodUnary && t.method != methodStream {
		return target{}, false
	}
	return t, true
}

// DescribeURL reads a request from its URL and body (codec.Router): the
// model from the path's …/models/{model}: segment, streaming for
// :streamGenerateContent with alt=sse, and, for :generateContent, structured
// when the body's generationConfig asks for JSON (a responseMimeType of
// application/json, a responseSchema or a responseJsonSchema). A
// :streamGenerateContent without alt=sse answers one JSON array of
// responses: it is an ordinary call, decoded whole. A path that is not one
// of these endpoints is an error.
func (c *Codec) DescribeURL(u *url.URL, body []byte) (codec.RequestInfo, error) {
	t, ok := parsePath(u.Path)
	if !ok {
		return codec.RequestInfo{}, errNotEndpoint
	}
	info, err := c.Describe(body)
	info.Model = t.model
	if t.method == methodStream && u.Query().Get("alt") == "sse" {
		info.Operation = codec.Streaming
	} else if t.method == methodStream && info.Operation == codec.Structured {
		info.Operation = codec.Ordinary
	}
	return info, err
}

// RoutePath returns the endpoint path of a request for model with
// operation op (codec.Router): "/v1beta/models/{model}:generateContent", or
// ":streamGenerateContent?alt=sse" for a stream. A model given as
// "models/{name}", as the Gemini SDKs accept it, is named once; the model
// is escaped as a path segment.
func (c *Codec) RoutePath(model string, op codec.Operation) string {
	model = strings.TrimPrefix(model, "models/")
	p := c.Path() + "/" + url.PathEscape(model)
	if op == codec.Streaming {
		return p + ":" + methodStream + "?alt=sse"
	}
	return p + ":" + methodUnary
}

// WithModelURL returns a copy of u whose path names model instead
// (codec.Router): the method, the query (alt=sse, a key) and every other
// part are kept, u is not modified. A path that is not a generateContent
// endpoint, or a model that holds a "/" or ":", is an error.
func (c *Codec) WithModelURL(u *url.URL, model string) (*url.URL, error) {
	model = strings.TrimPrefix(model, "models/")
	t, ok := parsePath(u.Path)
	if !ok {
		return nil, errNotEndpoint
	}
	if model == "" || strings.ContainsAny(model, "/:?#") {
		return nil, errors.New("gemini: a model name holds no '/', ':', '?' or '#'")
	}
	nu := *u
	if nu.User != nil {
		user := *nu.User
		nu.User = &user
	}
	nu.Path = u.Path[:t.start] + model + u.Path[t.end:]
	nu.RawPath = ""
	return &nu, nil
}
