// Command recourse-proxy is recourse's local recovery proxy: clients in any
// language (the OpenAI Node or Python SDK, curl, an Ollama UI) get the
// default chain's recovery by changing one base URL.
//
//	go install github.com/recourse-dev/recourse/cmd/recourse-proxy@latest
//	recourse-proxy -upstream https://api.openai.com -provider openai -max-attempts 4
//	OPENAI_BASE_URL=http://127.0.0.1:8787/v1 node app.js
//
// The completion endpoint (POST /v1/chat/completions for openai and omlx,
// POST /api/chat for ollama, POST /v1/messages for anthropic) is recovered, and for openai the Responses API
// too (POST /v1/responses, GET /v1/responses/{id}); -h lists them, from
// proxy.Endpoints. Every other request is forwarded once, untouched. Every flag has an environment variable,
// RECOURSE_PROXY_ and the flag's name in capitals with underscores
// (-max-attempts is RECOURSE_PROXY_MAX_ATTEMPTS); run with -h for the
// list. It listens on loopback unless -allow-remote or -client-keys is
// given; with -client-keys it admits only clients with a proxy key, and
// with -upstream-key-file (or RECOURSE_PROXY_UPSTREAM_KEY) it holds the
// upstream's key itself (see docs/proxy-keys.md). It logs one
// structured line per request and per lifecycle event on stderr, and on
// SIGTERM or SIGINT stops accepting, closes the connections with no
// request in flight at once, lets in-flight calls finish within -grace,
// cuts the rest with an in-band error and exits 0. With
// -otlp-endpoint, or the standard OTEL_EXPORTER_OTLP_* variables, it sends
// traces and metrics with the OpenTelemetry OTLP/HTTP exporters, and it
// serves its metrics on GET /metrics through the OpenTelemetry Prometheus
// exporter (-metrics=false: not). The stall limits
// (-header-timeout, -first-output-timeout, -idle-timeout) and the provider
// hints (-provider-hints) are off unless set; the retry quota (-quota,
// -quota-ratio, -quota-window, -quota-floor, -quota-key, -quota-cooldown) is on, because one
// proxy serves many clients whose resends would otherwise add up during an
// outage. GET /readyz answers whether the proxy is ready and whether Redis
// answers (R21.13); -version prints the module version from the build
// information. With -config FILE it reads a YAML file whose keys are the
// flags' names and whose routes serve every wire in one process, each with
// its own upstream, policy and held key (proxy.Router; see
// docs/proxy-team.md); SIGHUP reads the file and the key files again
// without cutting a request in flight, and a bad file keeps the running
// configuration. See package proxy for what clients see.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"syscall"

	"go.opentelemetry.io/otel"

	"github.com/recourse-dev/recourse/proxy"
)

func main() {
	os.Exit(run(os.Args[1:], os.Getenv, os.Stdout, os.Stderr))
}

// run is the command; it returns the exit status: 0 after -h or a
// shutdown, 2 for bad settings, 1 when the proxy could not start.
func run(args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	s, err := parse(args, getenv, stdout)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintln(stderr, "recourse-proxy:", err)
		return 2
	}
	if s.version {
		printVersion(stdout)
		return 0
	}
	// The process's settings: the flags, and a -config file's top level.
	if s, _, _, err = processSettings(args, getenv); err != nil {
		fmt.Fprintln(stderr, "recourse-proxy:", err)
		return 2
	}
	log, err := s.logger(stderr)
	if err == nil {
		err = checkListen(s.listen, s.remoteAllowed())
	}
	b := &builder{args: args, getenv: getenv, log: log, transport: newTransport(), redis: s.redis, listen: s.listen}
	if err == nil && s.redis != "" {
		opts, e := redisOptions(s.redis, getenv)
		if err = e; err == nil {
			b.fleet = newFleet(opts, log)
			defer b.fleet.Close()
		}
	}
	var tel *telemetry
	if err == nil {
		otel.SetErrorHandler(otel.ErrorHandlerFunc(func(e error) {
			log.LogAttrs(context.Background(), slog.LevelWarn, "telemetry export failed", slog.String("error", e.Error()))
		}))
		if tel, err = newTelemetry(context.Background(), s, getenv); err == nil {
			b.tel = tel
		}
	}
	sw := &swapper{}
	if err == nil {
		var first *built
		if first, err = b.build(); err == nil {
			sw.cur.Store(first)
		}
	}
	if err != nil {
		fmt.Fprintln(stderr, "recourse-proxy:", err)
		return 2
	}
	ln, err := net.Listen("tcp", s.listen)
	if err != nil {
		fmt.Fprintln(stderr, "recourse-proxy:", err)
		return 1
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	go func() {
		for {
			select {
			case <-ctx.Done():
				return
			case <-hup:
				sw.reload(ctx, b)
			}
		}
	}()
	attrs := []slog.Attr{slog.String("addr", ln.Addr().String())}
	if routes := sw.cur.Load().routes; len(routes) > 0 {
		attrs = append(attrs, slog.String("config", s.configFile), slog.Any("routes", routes), slog.String("redis", redisAddr(s.redis)))
	} else {
		attrs = append(attrs, slog.String("provider", s.provider), slog.String("upstream", s.upstream),
			slog.Int("max_attempts", s.maxAttempts), slog.String("admit", s.admit),
			slog.Bool("quota", s.quota), slog.Bool("provider_hints", s.providerHints),
			slog.String("header_timeout", s.headerTimeout.String()), slog.String("first_output_timeout", s.firstOutputTimeout.String()),
			slog.String("idle_timeout", s.idleTimeout.String()),
			slog.String("redis", redisAddr(s.redis)), slog.Int("quota_fleet_cap", s.fleetCap))
	}
	log.LogAttrs(ctx, slog.LevelInfo, "listening", attrs...)
	code := 0
	if err := proxy.Serve(ctx, ln, readiness(b.fleet, tel.handler(sw)), s.grace, log); err != nil {
		fmt.Fprintln(stderr, "recourse-proxy:", err)
		code = 1
	}
	tel.shutdown(log)
	return code
}
