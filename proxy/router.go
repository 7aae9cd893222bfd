package proxy

import (
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"path"
	"regexp"
	"slices"
	"strings"
	"time"
)

// Route is one wire a Router serves: a name, where its requests arrive,
// and the configuration of the Handler that serves them.
type Route struct {
	// Name names the route in every line the route logs (attribute route),
	// in a client key's Routes and in errors. It is required, unique
	// within a Router, and made of lower-case letters, digits, '-' and
	// '_', starting with a letter; it may not be an endpoint name
	// (RouteCompletions, RouteResponses, RouteForward).
	Name string
	// Prefix, when set, mounts the route under a path prefix, for example
	// "/mlx": a request whose path is the prefix or starts with it and "/"
	// goes to this route with the prefix removed, so a client whose base
	// URL is http://proxy/mlx/v1 reaches {upstream}/v1/…. It starts with
	// "/", has no trailing slash, no empty or dot segment, and is not
	// /healthz, /readyz or /metrics. Empty: the route serves its wire's
	// own paths (see Router).
	Prefix string
	// Config configures the route's Handler (see New). Its ClientKeys
	// must be nil: a Router admits clients for every route
	// (RouterConfig.ClientKeys). Its Logger, when nil, is the
	// RouterConfig's; either way the route's request lines carry its name
	// (attribute route).
	Config Config
}

// RouterConfig configures a Router.
type RouterConfig struct {
	// Routes are the routes, at least one. Order matters only for reading:
	// no two routes may claim the same request (see Router).
	Routes []Route
	// ClientKeys, when set, are the only keys the Router admits, for
	// every route, as Config.ClientKeys does for one Handler; a key's
	// Routes may also name routes (Route.Name), allowing every request of
	// those routes. Nil admits every client; an empty non-nil slice is an
	// error.
	ClientKeys []ClientKey
	// Default names the route that serves a request no route claims (see
	// Router), for example a path another wire's SDK lists models at.
	// Empty: with a single route without a prefix, that route; otherwise
	// none, and such a request is answered 404 no_route.
	Default string
	// Logger receives the lines of requests no route serves, and is every
	// route's logger unless its Config has one; nil logs nothing.
	Logger *slog.Logger
}

// Router is recourse-proxy for several wires in one process (R21.15): it
// sends each request to the Handler of the route that claims it. A
// request whose path starts with a route's Prefix goes to that route (the
// longest prefix wins). Otherwise the routes without a prefix are asked,
// in this order: the one whose wire recovers the request (its Endpoints,
// for Gemini any model); the one whose wire's clients mark every request
// with a header of their own, for a path under /v1/ (anthropic-version
// for Claude's SDKs, so that their GET /v1/models reaches Claude); none, when the request is a
// recovered endpoint of one of them spelled otherwise (400
// path_not_canonical in that wire's shape, R21.8); the one whose wire owns
// the path's namespace (openai and omlx /v1/, anthropic /v1/messages,
// gemini /v1beta/ and /v1alpha/, ollama /api/; the longest wins); and
// last the Default route — with a single route without a prefix, that
// route, for every request, which is what a one-wire proxy does. A request
// no route claims is answered 404 no_route. Either refusal sends nothing
// upstream. GET /healthz answers "ok".
//
// Two routes without a prefix that would recover the same endpoint (openai
// and omlx both recover POST /v1/chat/completions) are refused by
// NewRouter: give one of them a Prefix.
//
// A Router is immutable and safe for concurrent use. To change the routes
// while serving, build a new Router and swap it in (as recourse-proxy does
// on SIGHUP): a request in flight finishes on the Router that took it.
type Router struct {
	prefixed   []*mounted // longest prefix first
	bare       []*mounted // the routes without a prefix, in the configuration's order
	fallback   *mounted   // the route of a request nothing else claims, or nil (RouterConfig.Default)
	clientKeys []ClientKey
	log        *slog.Logger
}

// mounted is one route of a Router and its Handler.
type mounted struct {
	name   string
	prefix string
	h      *Handler
}

// routeName is the syntax of Route.Name.
var routeName = regexp.MustCompile(`^[a-z][a-z0-9_-]{0,62}$`)

// NewRouter returns the Router of cfg, or a *ConfigError naming the route
// and field that is wrong (Field "Routes[i].Config.<field>" for an error
// of a route's Config, which New reports).
func NewRouter(cfg RouterConfig) (*Router, error) {
	if len(cfg.Routes) == 0 {
		return nil, &ConfigError{Field: "Routes", Problem: "is empty; want at least one route"}
	}
	rt := &Router{log: cfg.Logger}
	if rt.log == nil {
		rt.log = slog.New(slog.DiscardHandler)
	}
	names := map[string]bool{}
	prefixes := map[string]string{}
	for i, r := range cfg.Routes {
		field := fmt.Sprintf("Routes[%d]", i)
		if !routeName.MatchString(r.Name) {
			return nil, &ConfigError{Field: field + ".Name", Problem: fmt.Sprintf("is %q; want lower-case letters, digits, '-' or '_', starting with a letter", r.Name)}
		}
		if r.Name == RouteCompletions || r.Name == RouteResponses || r.Name == RouteForward {
			return nil, &ConfigError{Field: field + ".Name", Problem: fmt.Sprintf("is %q, an endpoint name of a client key's routes; choose another", r.Name)}
		}
		if names[r.Name] {
			return nil, &ConfigError{Field: field + ".Name", Problem: fmt.Sprintf("%q names an earlier route too", r.Name)}
		}
		names[r.Name] = true
		if err := checkPrefix(r.Prefix); err != nil {
			return nil, &ConfigError{Field: field + ".Prefix", Problem: err.Error()}
		}
		if other, ok := prefixes[r.Prefix]; ok && r.Prefix != "" {
			return nil, &ConfigError{Field: field + ".Prefix", Problem: fmt.Sprintf("%q is route %q's prefix too", r.Prefix, other)}
		}
		prefixes[r.Prefix] = r.Name
		if r.Config.ClientKeys != nil {
			return nil, &ConfigError{Field: field + ".Config.ClientKeys", Problem: "is set; a Router admits clients for every route: set RouterConfig.ClientKeys"}
		}
		c := r.Config
		if c.Logger == nil {
			c.Logger = rt.log
		}
		h, err := New(c)
		if ce, ok := err.(*ConfigError); ok {
			return nil, &ConfigError{Field: field + ".Config." + ce.Field, Problem: ce.Problem}
		}
		if err != nil {
			return nil, fmt.Errorf("proxy: route %q: %w", r.Name, err)
		}
		h.name = r.Name
		if h.responses != nil {
			h.responses.name = r.Name
		}
		m := &mounted{name: r.Name, prefix: r.Prefix, h: h}
		if r.Prefix != "" {
			rt.prefixed = append(rt.prefixed, m)
			continue
		}
		for _, o := range rt.bare {
			if e, ok := sharedEndpoint(o.h.endpoints, h.endpoints); ok {
				return nil, &ConfigError{Field: field + ".Prefix", Problem: fmt.Sprintf("is empty, and route %q without a prefix recovers %s too; give one of them a prefix", o.name, e)}
			}
		}
		rt.bare = append(rt.bare, m)
	}
	switch {
	case cfg.Default != "":
		for _, m := range append(slices.Clone(rt.prefixed), rt.bare...) {
			if m.name == cfg.Default {
				rt.fallback = m
			}
		}
		if rt.fallback == nil {
			return nil, &ConfigError{Field: "Default", Problem: fmt.Sprintf("is %q, which names no route", cfg.Default)}
		}
	case len(rt.bare) == 1:
		rt.fallback = rt.bare[0]
	}
	slices.SortStableFunc(rt.prefixed, func(a, b *mounted) int { return len(b.prefix) - len(a.prefix) })
	if cfg.ClientKeys != nil {
		keys, err := checkClientKeys(cfg.ClientKeys, names)
		if err != nil {
			return nil, err
		}
		rt.clientKeys = keys
	}
	return rt, nil
}

// checkPrefix reports what is wrong with a Route.Prefix, or nil.
func checkPrefix(p string) error {
	switch {
	case p == "":
		return nil
	case !strings.HasPrefix(p, "/"):
		return fmt.Errorf("is %q; want a path starting with /, for example /mlx", p)
	case p == "/" || strings.HasSuffix(p, "/"):
		return fmt.Errorf("is %q; want no trailing slash", p)
	case path.Clean(p) != p:
		return fmt.Errorf("is %q; want no empty or dot segment", p)
	case p == "/healthz" || p == "/readyz" || p == "/metrics":
		return fmt.Errorf("is %q, a path the proxy answers itself", p)
	}
	if u, err := url.Parse(p); err != nil || u.Path != p || u.RawQuery != "" {
		return fmt.Errorf("is %q; want a plain path without a query or escapes", p)
	}
	return nil
}

// sharedEndpoint returns an endpoint both lists recover, if any.
func sharedEndpoint(a, b []Endpoint) (Endpoint, bool) {
	for _, e := range a {
		if slices.Contains(b, e) {
			return e, true
		}
	}
	return Endpoint{}, false
}

// Routes returns the names of the router's routes, sorted. Each call
// returns a new slice.
func (rt *Router) Routes() []string {
	var out []string
	for _, m := range rt.prefixed {
		out = append(out, m.name)
	}
	for _, m := range rt.bare {
		out = append(out, m.name)
	}
	slices.Sort(out)
	return out
}

// ServeHTTP sends r to the route that claims it (see Router).
func (rt *Router) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/healthz" && (r.Method == http.MethodGet || r.Method == http.MethodHead) {
		healthy(w)
		return
	}
	fullPath := r.URL.Path
	m, r := rt.claim(r)
	if m == nil {
		rt.unclaimed(w, r)
		return
	}
	if rt.clientKeys != nil {
		var ok bool
		if r, ok = m.h.admit(w, r, rt.clientKeys, m.name, fullPath); !ok {
			return
		}
	}
	m.h.ServeHTTP(w, r)
}

// claim returns the route that claims r, with r as that route's Handler
// is to see it (its prefix removed), or nil.
func (rt *Router) claim(r *http.Request) (*mounted, *http.Request) {
	p := r.URL.Path
	for _, m := range rt.prefixed {
		if rest, ok := strings.CutPrefix(p, m.prefix); ok && (rest == "" || rest[0] == '/') {
			return m, stripPrefix(r, m.prefix, rest)
		}
	}
	for _, m := range rt.bare {
		if m.h.claims(r) {
			return m, r
		}
	}
	for _, m := range rt.bare {
		if m.h.marker != "" && r.Header.Get(m.h.marker) != "" && strings.HasPrefix(p, "/v1/") {
			return m, r
		}
	}
	for _, m := range rt.bare {
		if _, ok := m.h.misspelled(r); ok {
			return nil, r // unclaimed refuses it as that route would
		}
	}
	var best *mounted
	n := 0
	for _, m := range rt.bare {
		for _, ns := range m.h.namespaces {
			if len(ns) > n && strings.HasPrefix(p, ns) {
				best, n = m, len(ns)
			}
		}
	}
	if best != nil {
		return best, r
	}
	return rt.fallback, r
}

// stripPrefix returns a shallow copy of r whose URL path is rest (prefix
// removed; "/" when nothing is left), as http.StripPrefix makes it.
func stripPrefix(r *http.Request, prefix, rest string) *http.Request {
	if rest == "" {
		rest = "/"
	}
	r2 := new(http.Request)
	*r2 = *r
	u := *r.URL
	u.Path = rest
	if r.URL.RawPath != "" {
		if rp, ok := strings.CutPrefix(r.URL.RawPath, prefix); ok {
			u.RawPath = rp
		} else {
			u.RawPath = ""
		}
	}
	r2.URL = &u
	return r2
}

// unclaimed answers a request no route claims: a recovered endpoint of a
// route without a prefix spelled otherwise is refused as that route would
// (400 path_not_canonical), anything else 404 no_route. Nothing is sent
// upstream.
func (rt *Router) unclaimed(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	for _, m := range rt.bare {
		if e, ok := m.h.misspelled(r); ok {
			m.h.refuseMisspelled(w, r, e)
			m.h.logRequest(r, requestLine{kind: "refused", status: http.StatusBadRequest, start: start})
			return
		}
	}
	body := `{"error":{"type":"not_found_error","code":"no_route","message":"recourse-proxy: no route of this proxy serves this path; check the client's base URL against the proxy's routes; nothing was sent upstream"}}`
	hd := w.Header()
	hd.Set("Content-Type", "application/json")
	hd.Set("X-Should-Retry", "false")
	w.WriteHeader(http.StatusNotFound)
	_, _ = w.Write([]byte(body + "\n"))
	rt.log.LogAttrs(r.Context(), slog.LevelInfo, "request", slog.String("kind", "refused"), slog.String("method", r.Method),
		slog.String("path", r.URL.Path), slog.Int("status", http.StatusNotFound), slog.String("code", "no_route"),
		slog.Int64("duration_ms", time.Since(start).Milliseconds()))
}

// healthy answers GET /healthz.
func healthy(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write([]byte("ok\n"))
}

// claims reports whether r is a request h recovers: its completion
// endpoint or, for openai, the Responses API.
func (h *Handler) claims(r *http.Request) bool {
	return (r.Method == http.MethodPost && h.recovers(r.URL)) || (h.responses != nil && h.responses.routes(r))
}
