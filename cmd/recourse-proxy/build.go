package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/recourse-dev/recourse/proxy"
)

// builder builds the proxy's handler from the command line, the
// environment and the -config file: once at start, and again at each
// SIGHUP (reload), which re-reads the file and the key files.
type builder struct {
	args   []string
	getenv func(string) string
	log    *slog.Logger
	tel    *telemetry
	fleet  *fleet // the process's Redis store, shared by every route; nil without -redis
	// transport is every route's upstream transport, kept across reloads so
	// that their connections stay warm and a replaced build leaves none
	// behind; nil: each Handler's own.
	transport http.RoundTripper
	// redis and listen are the process's -redis and -listen at start; a
	// reload keeps them (a new store or address needs a restart).
	redis, listen string
}

// newTransport returns the process's upstream transport: HTTP/1.1, as the
// providers' streams are read, with room for 64 idle connections to each
// upstream (what a Handler without a Transport uses).
func newTransport() *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.ForceAttemptHTTP2 = false
	t.MaxIdleConnsPerHost = 64
	return t
}

// built is one build: the handler and what it holds that a replacement
// must release.
type built struct {
	handler http.Handler
	routes  []string       // the route names; empty for one wire without -config
	remote  bool           // its settings allow a -listen beyond loopback (settings.remoteAllowed)
	configs []proxy.Config // each route's configuration, in the file's order (one for one wire)
	process map[string]string
	stops   []func() // unregister its breaker metrics
}

// release stops what b publishes, after a newer build replaced it.
func (b *built) release() {
	for _, stop := range b.stops {
		stop()
	}
}

// processSettings returns the settings of the whole process — the flags,
// the environment, and a -config file's top level over them — and the
// file read, nil without -config.
func processSettings(args []string, getenv func(string) string) (*settings, *flag.FlagSet, *fileConfig, error) {
	s, fs, err := parseFlags(args, getenv, io.Discard)
	if err != nil {
		return nil, nil, nil, err
	}
	if s.configFile == "" {
		return s, fs, nil, nil
	}
	fc, err := readConfigFile(s.configFile, fs)
	if err != nil {
		return nil, nil, nil, err
	}
	if err := fc.apply(fs, s.set, "", fc.top); err != nil {
		return nil, nil, nil, err
	}
	if v := fc.keyVarsSet(getenv); len(fc.routes) > 0 && v != "" {
		return nil, nil, nil, &configError{path: fc.path, line: 1, msg: v + " is set, but a file with routes takes each route's keys from the variables its upstream-key-env and fallback-key-env name; unset it, or name it there"}
	}
	return s, fs, fc, nil
}

// keyVarsSet returns the name of a key variable of the one-wire proxy
// that is set (RECOURSE_PROXY_UPSTREAM_KEY, RECOURSE_PROXY_FALLBACK_KEY_n),
// or "".
func (fc *fileConfig) keyVarsSet(getenv func(string) string) string {
	if getenv(envUpstreamKey) != "" {
		return envUpstreamKey
	}
	for n := 1; n <= 16; n++ {
		if getenv(fallbackKeyEnv(n)) != "" {
			return fallbackKeyEnv(n)
		}
	}
	return ""
}

// processValues returns the values of the process's settings that a
// reload does not change, to say so when it would (they take effect at the
// next start). The client keys are read again at every reload.
func processValues(fs *flag.FlagSet) map[string]string {
	out := map[string]string{}
	for name := range processFlags {
		if name == "client-keys" {
			continue
		}
		if f := fs.Lookup(name); f != nil {
			out[name] = f.Value.String()
		}
	}
	return out
}

// build reads everything again and returns the handler: one Handler
// without -config or for a file without routes, a Router of the file's
// routes otherwise. An error names the flag, variable or file line.
func (b *builder) build() (_ *built, err error) {
	ps, fs, fc, err := processSettings(b.args, b.getenv)
	if err != nil {
		return nil, err
	}
	out := &built{process: processValues(fs), remote: ps.remoteAllowed()}
	defer func() {
		if err != nil {
			out.release() // the breaker metrics of the routes built before the error
		}
	}()
	if fc == nil || len(fc.routes) == 0 {
		cfg, err := b.routeConfig("", ps, out)
		if err != nil {
			if fc != nil {
				return nil, fc.explain(nil, err)
			}
			return nil, err
		}
		h, err := proxy.New(cfg)
		if err != nil {
			if fc != nil {
				return nil, fc.explain(nil, err)
			}
			return nil, err
		}
		out.handler, out.configs = h, []proxy.Config{cfg}
		return out, nil
	}
	// Settings that name one upstream cannot be every route's.
	for _, name := range []string{"provider", "upstream", "upstream-key-file"} {
		if ps.set[name] {
			return nil, &configError{path: fc.path, line: max(lineOfKey(fc.top, name), 1), field: name,
				msg: "is set at the top level, by its flag or by " + envName(name) + ", but the file has routes: each route names its own (a key: upstream-key-env or upstream-key-file in the route)"}
		}
	}
	rc := proxy.RouterConfig{Default: fc.defaultRoute, Logger: b.log}
	if ps.keys.clientKeys != "" {
		if rc.ClientKeys, err = readClientKeys(ps.keys.clientKeys); err != nil {
			return nil, fc.explain(nil, err)
		}
	}
	var routeTop []fileKey
	for _, k := range fc.top {
		if !processFlags[k.name] {
			routeTop = append(routeTop, k)
		}
	}
	for i := range fc.routes {
		r := &fc.routes[i]
		rs, rfs, err := parseFlags(b.args, r.env(b.getenv), io.Discard)
		if err != nil {
			return nil, err
		}
		if err := fc.apply(rfs, rs.set, "", routeTop); err != nil {
			return nil, err
		}
		if err := fc.apply(rfs, rs.set, fmt.Sprintf("%s[%d].", keyRoutes, r.index), r.keys); err != nil {
			return nil, err
		}
		for _, name := range []string{"provider", "upstream"} {
			if lineOfKey(r.keys, name) == 0 {
				return nil, &configError{path: fc.path, line: r.line, field: fmt.Sprintf("%s[%d] (%s)", keyRoutes, r.index, r.name), msg: "has no " + name + "; every route names its provider and its upstream's root URL"}
			}
		}
		if r.upstreamKeyEnv != "" && rs.keys.upstreamKeyFile != "" {
			return nil, &configError{path: fc.path, line: max(lineOfKey(r.keys, "upstream-key-file"), r.line), field: fmt.Sprintf("%s[%d].upstream-key-env", keyRoutes, r.index), msg: "and upstream-key-file are both set; give the route's key one way"}
		}
		cfg, err := b.routeConfig(r.name, rs, out)
		if err != nil {
			return nil, fc.explain(r, err)
		}
		cfg.ClientKeys = nil // the Router admits clients for every route
		rc.Routes = append(rc.Routes, proxy.Route{Name: r.name, Prefix: r.prefix, Config: cfg})
		out.routes = append(out.routes, r.name)
		out.configs = append(out.configs, cfg)
	}
	rt, err := proxy.NewRouter(rc)
	if err != nil {
		var ce *proxy.ConfigError
		if errors.As(err, &ce) {
			var i int
			if _, e := fmt.Sscanf(ce.Field, "Routes[%d]", &i); e == nil && i < len(fc.routes) {
				return nil, fc.explain(&fc.routes[i], err)
			}
		}
		return nil, fc.explain(nil, err)
	}
	out.handler = rt
	return out, nil
}

// routeConfig returns the proxy.Config of one wire's settings s, the
// route named route ("" for the one-wire proxy): it shares the process's
// Redis store, transport, logger and telemetry, its spans and metrics
// carry its name, and its breaker metrics are registered on out.
func (b *builder) routeConfig(route string, s *settings, out *built) (proxy.Config, error) {
	s.log = b.log
	s.redis = b.redis
	s.fleet = b.fleet
	cfg, err := s.config()
	if err != nil {
		return cfg, err
	}
	cfg.Logger = b.log
	if b.transport != nil {
		cfg.Transport = b.transport
	}
	if b.tel != nil {
		cfg.PerCall = append(cfg.PerCall, b.tel.layer(route))
		cfg.OnClientRetry = b.tel.onClientRetry(route)
		out.stops = append(out.stops, b.tel.breakers(cfg.Quota))
	}
	return cfg, nil
}

// env returns the environment a route's settings read: the one-wire key
// variables (RECOURSE_PROXY_UPSTREAM_KEY, RECOURSE_PROXY_FALLBACK_KEY_n)
// are the variables the route names in upstream-key-env and
// fallback-key-env, so that one route's key never reaches another route's
// upstream.
func (r *fileRoute) env(getenv func(string) string) func(string) string {
	return func(name string) string {
		if name == envUpstreamKey {
			if r.upstreamKeyEnv == "" {
				return ""
			}
			return getenv(r.upstreamKeyEnv)
		}
		if rest, ok := strings.CutPrefix(name, envPrefix+"FALLBACK_KEY_"); ok {
			if n, err := strconv.Atoi(rest); err == nil && n >= 1 && n <= len(r.fallbackKeyEnvs) && r.fallbackKeyEnvs[n-1] != "" {
				return getenv(r.fallbackKeyEnvs[n-1])
			}
			return ""
		}
		return getenv(name)
	}
}

// readClientKeys reads a -client-keys file.
func readClientKeys(path string) ([]proxy.ClientKey, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("-client-keys: %v", err)
	}
	defer f.Close()
	keys, err := proxy.ParseClientKeys(f)
	if err != nil {
		return nil, fmt.Errorf("-client-keys: %v", err)
	}
	return keys, nil
}

// swapper serves the handler of the latest build; a request keeps the
// handler it started on to its end, so a reload cuts nothing in flight.
type swapper struct {
	mu  sync.Mutex // serialises reloads
	cur atomic.Pointer[built]
}

func (s *swapper) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.cur.Load().handler.ServeHTTP(w, r)
}

// reload builds again and, when that succeeds, serves the new build; when
// it fails, the running build stays and the log says why. A process
// setting the new build changes is named in the log: it takes effect at
// the next start.
func (s *swapper) reload(ctx context.Context, b *builder) {
	s.mu.Lock()
	defer s.mu.Unlock()
	nb, err := b.build()
	if err == nil && !nb.remote {
		// The address was allowed at start by client keys the new
		// configuration drops.
		err = checkListen(b.listen, false)
	}
	if err != nil {
		b.log.LogAttrs(ctx, slog.LevelError, "reload refused: the running configuration stays", slog.String("error", err.Error()))
		return
	}
	old := s.cur.Swap(nb)
	for name, v := range nb.process {
		if old.process[name] != v {
			b.log.LogAttrs(ctx, slog.LevelWarn, "reload: a setting of the whole process changed; it takes effect at the next start",
				slog.String("setting", name))
		}
	}
	old.release()
	b.log.LogAttrs(ctx, slog.LevelInfo, "reloaded", slog.Any("routes", nb.routes))
}

// lineOfKey returns the line of the key name among keys, or 0.
func lineOfKey(keys []fileKey, name string) int {
	for _, k := range keys {
		if k.name == name {
			return k.line
		}
	}
	return 0
}
