package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"runtime/debug"
	"time"
)

// readyTimeout bounds the Redis PING of one readiness check.
const readyTimeout = time.Second

// readiness serves GET /readyz (R21.13) and passes every other request to
// next. It answers 200 {"status":"ready","redis":…} where redis is "off"
// without -redis, "ok" when Redis answers a PING within readyTimeout, and
// "unavailable" otherwise: the quota then fails open and the proxy still
// serves. With ?require=redis an unavailable Redis is 503 "not ready", for
// a probe that wants the fleet's shared limits to hold. No key is needed,
// and the answer names nothing but these words.
func readiness(f *fleet, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/readyz" || (r.Method != http.MethodGet && r.Method != http.MethodHead) {
			next.ServeHTTP(w, r)
			return
		}
		redis := "off"
		if f != nil {
			ctx, cancel := context.WithTimeout(r.Context(), readyTimeout)
			err := f.rdb.Ping(ctx).Err()
			cancel()
			redis = "ok"
			if err != nil {
				redis = "unavailable"
			}
		}
		status, code := "ready", http.StatusOK
		if redis == "unavailable" && r.URL.Query().Get("require") == "redis" {
			status, code = "not ready", http.StatusServiceUnavailable
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		w.WriteHeader(code)
		fmt.Fprintf(w, "{\"status\":%q,\"redis\":%q}\n", status, redis)
	})
}

// noEnv are the flags without an environment variable: -version only, so
// that a RECOURSE_PROXY_VERSION set for another purpose (an image's
// version label) never stops the proxy.
var noEnv = map[string]bool{"version": true}

// defineVersion registers -version.
func defineVersion(fs *flag.FlagSet, s *settings) {
	fs.BoolVar(&s.version, "version", false, "print the version (from the build information) and exit")
}

// printVersion writes "recourse-proxy <version> (recourse <version>, <go>)"
// from the binary's build information: a module version for a binary built
// with go install …@version, "(devel)" for one built in a work tree.
func printVersion(w io.Writer) {
	own, lib := "(unknown)", "(unknown)"
	if bi, ok := debug.ReadBuildInfo(); ok {
		own = bi.Main.Version
		for _, d := range bi.Deps {
			if d.Path == "github.com/recourse-dev/recourse" {
				lib = d.Version
				if d.Replace != nil {
					lib = "(devel)"
					if d.Replace.Version != "" {
						lib = d.Replace.Version
					}
				}
			}
		}
		if own == "" {
			own = "(devel)"
		}
	}
	fmt.Fprintf(w, "recourse-proxy %s (recourse %s, %s)\n", own, lib, runtime.Version())
}
