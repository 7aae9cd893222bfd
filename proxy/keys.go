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
	"slices"
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

// checkRoute reports whether rt is a route a ClientKey may hold: an
// endpoint name, a path prefix, or something spelled as a route name
// (Route.Name), which only a Router's own route names are (checkClientKeys).
func checkRoute(rt string) error {
	switch {
	case rt == RouteCompletions, rt == RouteResponses, rt == RouteForward:
		return nil
	case strings.HasPrefix(rt, "/"):
		return nil
	case routeName.MatchString(rt):
		return nil
	}
	return fmt.Errorf("route %q is not %s, %s, %s, a route's name or a path prefix starting with /", rt, RouteCompletions, RouteResponses, RouteForward)
}

// checkClientKeys returns a copy of keys after checking them: at least one,
// every route an endpoint name, a path prefix or one of names (the routes
// of a Router; nil for a Handler, which has none).
func checkClientKeys(keys []ClientKey, names map[string]bool) ([]ClientKey, error) {
	if len(keys) == 0 {
		return nil, &ConfigError{Field: "ClientKeys", Problem: "is empty; want at least one key, or nil to admit every client"}
	}
	keys = slices.Clone(keys)
	for _, k := range keys {
		for _, rt := range k.Routes {
			if err := checkRoute(rt); err != nil {
				return nil, &ConfigError{Field: "ClientKeys", Problem: "has a " + err.Error()}
			}
			isName := rt != RouteCompletions && rt != RouteResponses && rt != RouteForward && !strings.HasPrefix(rt, "/")
			if isName && !names[rt] {
				return nil, &ConfigError{Field: "ClientKeys", Problem: fmt.Sprintf("has a route %q that is no route of this proxy", rt)}
			}
		}
	}
	return keys, nil
}

// allows reports whether k may make request r, whose endpoint name is
// endpoint, on the route named route ("" for a Handler of its own), its
// path as the client sent it being fullPath.
func (k *ClientKey) allows(route, endpoint, fullPath string) bool {
	if len(k.Routes) == 0 {
		return true
	}
	for _, rt := range k.Routes {
		if rt == endpoint || (route != "" && rt == route) || (strings.HasPrefix(rt, "/") && strings.HasPrefix(fullPath, rt)) {
			return true
		}
	}
	return false
}

// admittedKey is the context key of an admitted client's *ClientKey.
type admittedKey struct{}

// presentedKey returns the proxy key a client sent and the header it sent
// it in: "Authorization: Bearer <key>", as every SDK can send it, or else
// the wire's own key header (x-api-key for Claude, x-goog-api-key for
// Gemini), where a client at its defaults puts its API key. It returns ""
// when there is none.
func presentedKey(hd http.Header, cdc codec.Codec) (token, header string) {
	v := hd.Get("Authorization")
	if len(v) > 7 && strings.EqualFold(v[:7], "bearer ") {
		return strings.TrimSpace(v[7:]), "Authorization"
	}
	if name, prefix := codec.AuthHeader(cdc); !strings.EqualFold(name, "Authorization") {
		if v := strings.TrimSpace(strings.TrimPrefix(hd.Get(name), prefix)); v != "" {
			return v, name
		}
	}
	return "", ""
}

// lookupKey returns the key of keys whose hash is the SHA-256 of token, or
// nil. It compares with every key, each in constant time, whichever
// matches.
func lookupKey(keys []ClientKey, token string) *ClientKey {
	if token == "" {
		return nil
	}
	sum := sha256.Sum256([]byte(token))
	var found *ClientKey
	for i := range keys {
		if subtle.ConstantTimeCompare(sum[:], keys[i].Hash[:]) == 1 {
			found = &keys[i]
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
// with client keys it admits r only as admit does. With a held upstream
// key, every credential header the client sent (layer.CredentialHeaders)
// and every key query parameter are removed, and the held key is set in
// the wire's own header (codec.AuthHeader). It returns r with the client's
// name in its context, for the log.
func (h *Handler) credentials(w http.ResponseWriter, r *http.Request) (*http.Request, bool) {
	if h.clientKeys != nil {
		var ok bool
		if r, ok = h.admit(w, r, h.clientKeys, "", r.URL.Path); !ok {
			return r, false
		}
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

// admit admits r only with a key of keys that allows its route (route is
// the Router's route name, "" for a Handler of its own; fullPath the path
// as the client sent it), answering 401 or 403 otherwise and reporting
// false; the key is then removed from the header it came in
// (presentedKey), so it never reaches the upstream.
func (h *Handler) admit(w http.ResponseWriter, r *http.Request, keys []ClientKey, route, fullPath string) (*http.Request, bool) {
	token, header := presentedKey(r.Header, h.codec)
	k := lookupKey(keys, token)
	if k == nil {
		h.refuseClient(w, r, http.StatusUnauthorized, "invalid_proxy_key",
			"recourse-proxy: this proxy admits only clients with a proxy key, sent as Authorization: Bearer <key> or in the wire's own API key header; the request had none or an unknown one; nothing was sent upstream")
		return r, false
	}
	if !k.allows(route, h.route(r), fullPath) {
		h.refuseClient(w, r, http.StatusForbidden, "route_not_allowed",
			"recourse-proxy: the proxy key does not allow this route; nothing was sent upstream")
		return r, false
	}
	r.Header.Del(header)
	return r.WithContext(context.WithValue(r.Context(), admittedKey{}, k)), true
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
