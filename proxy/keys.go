package proxy

import (
	"bufio"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/recourse-dev/recourse/codec"
	"github.com/recourse-dev/recourse/layer"
)

// ClientKey is one key a client may present to the proxy (R21.12): only
// the SHA-256 of the key is kept, with a name for the log and the routes
// the key may use.
type ClientKey struct {
	// Hash is the SHA-256 of the key as the client sends it after
	// "Bearer ".
	Hash [sha256.Size]byte
	// Name labels the key in the request log (attribute client); it is
	// not secret. Empty logs no name.
	Name string
	// Routes are what the key may reach; empty means every route. Each is
	// an endpoint name — RouteCompletions (the provider's completion
	// endpoint), RouteResponses (the Responses API's create and read) or
	// RouteForward (every request the proxy forwards unrecovered) — or a
	// path prefix starting with "/", which allows every request whose path
	// starts with it.
	Routes []string
}

// The endpoint names a ClientKey's Routes may hold.
const (
	RouteCompletions = "completions"
	RouteResponses   = "responses"
	RouteForward     = "forward"
)

// HashKey returns the SHA-256 of a client key, as a ClientKey and a file
// of keys (ParseClientKeys) hold it.
func HashKey(key string) [sha256.Size]byte { return sha256.Sum256([]byte(key)) }

// ParseClientKeys reads a file of client keys: one key a line, as
// "<sha256 in hex> [name] [routes]", routes comma-separated (see
// ClientKey.Routes; absent: every route). Blank lines and lines starting
// with "#" are skipped. An error names the line and what is wrong with it,
// never the line's text. No two lines may have the same hash, and the file
// must hold at least one key.
func ParseClientKeys(r io.Reader) ([]ClientKey, error) {
	var out []ClientKey
	seen := map[[sha256.Size]byte]bool{}
	sc := bufio.NewScanner(r)
	n := 0
	for sc.Scan() {
		n++
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Fields(line)
		if len(f) > 3 {
			return nil, fmt.Errorf("client keys, line %d: %d fields; want a SHA-256 in hex, a name and routes", n, len(f))
		}
		raw, err := hex.DecodeString(f[0])
		if err != nil || len(raw) != sha256.Size {
			return nil, fmt.Errorf("client keys, line %d: the first field is not a SHA-256 in hex (64 hex digits); a file holds the keys' hashes, never the keys", n)
		}
		var k ClientKey
		copy(k.Hash[:], raw)
		if seen[k.Hash] {
			return nil, fmt.Errorf("client keys, line %d: the same hash as an earlier line", n)
		}
		seen[k.Hash] = true
		if len(f) > 1 {
			k.Name = f[1]
		}
		if len(f) > 2 {
			for _, rt := range strings.Split(f[2], ",") {
				if err := checkRoute(rt); err != nil {
					return nil, fmt.Errorf("client keys, line %d: %v", n, err)
				}
				k.Routes = append(k.Routes, rt)
			}
		}
		out = append(out, k)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("client keys: %v", err)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("client keys: the file holds no key")
	}
	return out, nil
}

// checkRoute reports whether rt is a route a ClientKey may hold.
func checkRoute(rt string) error {
	switch {
	case rt == RouteCompletions, rt == RouteResponses, rt == RouteForward:
		return nil
	case strings.HasPrefix(rt, "/"):
		return nil
	}
	return fmt.Errorf("route %q is not %s, %s, %s or a path prefix starting with /", rt, RouteCompletions, RouteResponses, RouteForward)
}

// allows reports whether k may make request r, routed as route.
func (k *ClientKey) allows(route string, r *http.Request) bool {
	if len(k.Routes) == 0 {
		return true
	}
	for _, rt := range k.Routes {
		if rt == route || (strings.HasPrefix(rt, "/") && strings.HasPrefix(r.URL.Path, rt)) {
			return true
		}
	}
	return false
}

// admittedKey is the context key of an admitted client's *ClientKey.
type admittedKey struct{}

// bearer returns the token of an "Authorization: Bearer <token>" header,
// or "".
func bearer(h http.Header) string {
	v := h.Get("Authorization")
	if len(v) > 7 && strings.EqualFold(v[:7], "bearer ") {
		return strings.TrimSpace(v[7:])
	}
	return ""
}

// lookupKey returns the client key whose hash is the SHA-256 of token, or
// nil. It compares with every key, each in constant time, whichever
// matches.
func (h *Handler) lookupKey(token string) *ClientKey {
	if token == "" {
		return nil
	}
	sum := sha256.Sum256([]byte(token))
	var found *ClientKey
	for i := range h.clientKeys {
		if subtle.ConstantTimeCompare(sum[:], h.clientKeys[i].Hash[:]) == 1 {
			found = &h.clientKeys[i]
		}
	}
	return found
}

// route returns the endpoint name of a request (see ClientKey.Routes).
func (h *Handler) route(r *http.Request) string {
	switch {
	case r.URL.Path == h.codec.Path() && r.Method == http.MethodPost:
		return RouteCompletions
	case h.responses != nil && h.responses.routes(r):
		return RouteResponses
	}
	return RouteForward
}

// credentials applies the proxy's keys to r before it is routed (R21.12):
// with client keys it admits r only with a known key that allows its
// route, answering 401 or 403 otherwise and reporting false; the client's
// key is then removed, so it never reaches the upstream. With a held
// upstream key, every credential header the client sent
// (layer.CredentialHeaders) and every key query parameter are removed,
// and the held key is set in the wire's own header (codec.AuthHeader).
// It returns r with the client's name in its context, for the log.
func (h *Handler) credentials(w http.ResponseWriter, r *http.Request) (*http.Request, bool) {
	if h.clientKeys != nil {
		k := h.lookupKey(bearer(r.Header))
		if k == nil {
			h.refuseClient(w, r, http.StatusUnauthorized, "invalid_proxy_key",
				"recourse-proxy: this proxy admits only clients with a proxy key, sent as Authorization: Bearer <key>; the request had none or an unknown one; nothing was sent upstream")
			return r, false
		}
		if !k.allows(h.route(r), r) {
			h.refuseClient(w, r, http.StatusForbidden, "route_not_allowed",
				"recourse-proxy: the proxy key does not allow this route; nothing was sent upstream")
			return r, false
		}
		r.Header.Del("Authorization")
		r = r.WithContext(context.WithValue(r.Context(), admittedKey{}, k))
	}
	if h.upstreamKey != "" {
		for _, name := range layer.CredentialHeaders() {
			r.Header.Del(name)
		}
		if q, ok := withoutKeyParam(r.URL.RawQuery); ok {
			u := *r.URL
			u.RawQuery = q
			r.URL = &u
		}
		name, prefix := codec.AuthHeader(h.codec)
		r.Header.Set(name, prefix+h.upstreamKey)
	}
	return r, true
}

// withoutKeyParam returns query without its key parameters (Gemini's API
// key, R21.12), every other parameter as it was, and whether it removed
// any.
func withoutKeyParam(query string) (string, bool) {
	if query == "" {
		return query, false
	}
	parts := strings.Split(query, "&")
	kept := parts[:0]
	for _, p := range parts {
		name, _, _ := strings.Cut(p, "=")
		if n, err := url.QueryUnescape(name); name == "key" || (err == nil && n == "key") {
			continue
		}
		kept = append(kept, p)
	}
	if len(kept) == len(parts) {
		return query, false
	}
	return strings.Join(kept, "&"), true
}

// refuseClient answers a request the client keys refuse, in the wire's
// error document, and logs it (kind refused).
func (h *Handler) refuseClient(w http.ResponseWriter, r *http.Request, status int, code, msg string) {
	start := time.Now()
	if status == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", `Bearer realm="recourse-proxy"`)
	}
	h.writeError(w, status, code, msg, "")
	h.logRequest(r, requestLine{kind: "refused", status: status, start: start})
}
