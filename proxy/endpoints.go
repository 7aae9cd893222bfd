package proxy

import (
	"net/http"
	"path"
	"strings"

	"github.com/recourse-dev/recourse/codec"
)

// Endpoint is a request a Handler recovers: a method and a path. In Path,
// "{id}" stands for one path segment, the ID of a stored response.
type Endpoint struct {
	// Method is the request's method, http.MethodPost or http.MethodGet.
	Method string
	// Path is the request's path, for example "/v1/chat/completions".
	Path string
}

// String returns the method and path, for example
// "POST /v1/chat/completions".
func (e Endpoint) String() string { return e.Method + " " + e.Path }

// Endpoints returns the requests a Handler of provider recovers, in a fixed
// order: the completion endpoint first, then, for openai, the Responses
// API's create and read of a stored response. Every other request is
// forwarded once, unrecovered, except one that is a recovered endpoint
// spelled otherwise, which is refused (R21.8). An unknown provider is a
// *ConfigError. Each call returns a new slice.
func Endpoints(provider string) ([]Endpoint, error) {
	d, err := dialectFor(provider)
	if err != nil {
		return nil, err
	}
	return d.endpoints(), nil
}

// endpoints returns the dialect's recovered endpoints (see Endpoints).
func (d dialect) endpoints() []Endpoint {
	out := []Endpoint{{Method: http.MethodPost, Path: d.codec.Path()}}
	if d.routes != nil {
		out = out[:0]
		for _, r := range d.routes {
			out = append(out, Endpoint{Method: http.MethodPost, Path: r})
		}
	}
	if d.responses != nil {
		out = append(out, Endpoint{Method: http.MethodPost, Path: responsesPath},
			Endpoint{Method: http.MethodGet, Path: responsesPath + "/{id}"})
	}
	return out
}

// matches reports whether the path p is e's path, "{id}" matching one
// non-empty segment and "{model}:method" a segment of a non-empty model
// and that method (R23.8). With fold, letter case is ignored (the
// spelling check of misspelled).
func (e Endpoint) matches(p string, fold bool) bool {
	same := func(a, b string) bool { return a == b || fold && strings.EqualFold(a, b) }
	want := strings.Split(e.Path, "/")
	got := strings.Split(p, "/")
	if len(want) != len(got) {
		return false
	}
	for i, w := range want {
		switch method, ok := strings.CutPrefix(w, "{model}:"); {
		case w == "{id}":
			if got[i] == "" {
				return false
			}
		case ok:
			j := strings.LastIndexByte(got[i], ':')
			if j <= 0 || !same(got[i][j+1:], method) {
				return false
			}
		case !same(w, got[i]):
			return false
		}
	}
	return true
}

// misspelled returns the recovered endpoint that r is in all but spelling —
// a doubled or trailing slash, a dot segment, other letter case — and
// true; or false when r is no recovered endpoint at all. ServeHTTP asks it
// only of requests it does not recover, so an exact spelling never gets
// here.
func (h *Handler) misspelled(r *http.Request) (Endpoint, bool) {
	canon := strings.ToLower(path.Clean("/" + r.URL.Path))
	if canon == r.URL.Path {
		return Endpoint{}, false
	}
	for _, e := range h.endpoints {
		if e.Method == r.Method && e.matches(canon, true) {
			return e, true
		}
	}
	return Endpoint{}, false
}

// refuseMisspelled answers a request that is endpoint e spelled otherwise:
// 400 path_not_canonical, nothing sent upstream (R21.8).
func (h *Handler) refuseMisspelled(w http.ResponseWriter, r *http.Request, e Endpoint) {
	h.writeError(w, http.StatusBadRequest, "path_not_canonical",
		"recourse-proxy: the path is the recovered endpoint "+e.String()+" spelled otherwise (a doubled or trailing slash, a dot segment or another letter case); "+
			"the proxy neither forwards it unrecovered nor rewrites it: send it as "+e.Path+" (check the client's base URL); nothing was sent upstream", "")
}

// KeyHeader returns the header, and the prefix of its value, in which
// provider's upstream takes an API key: "Authorization" and "Bearer " for
// openai, ollama and omlx, "X-Api-Key" and "" for anthropic,
// "X-Goog-Api-Key" and "" for gemini (the codec's codec.KeyHeader). A held
// upstream key and a fallback target's key are sent in it. An unknown
// provider is a *ConfigError.
func KeyHeader(provider string) (name, prefix string, err error) {
	d, err := dialectFor(provider)
	if err != nil {
		return "", "", err
	}
	name, prefix = codec.AuthHeader(d.codec)
	return name, prefix, nil
}
