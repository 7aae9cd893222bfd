package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/recourse-dev/recourse/event"
	"github.com/recourse-dev/recourse/layer"
	"github.com/recourse-dev/recourse/layers/quota"
	"github.com/recourse-dev/recourse/layers/retry"
	"github.com/recourse-dev/recourse/layers/stall"
	"github.com/recourse-dev/recourse/proxy"
)

// envPrefix starts the environment variable of every flag: -max-attempts
// is also RECOURSE_PROXY_MAX_ATTEMPTS. A flag given on the command line
// wins over its variable.
const envPrefix = "RECOURSE_PROXY_"

// envName returns the environment variable of a flag.
func envName(flagName string) string {
	return envPrefix + strings.ToUpper(strings.ReplaceAll(flagName, "-", "_"))
}

// settings are the command's settings, from flags and the environment.
type settings struct {
	provider    string
	upstream    string
	listen      string
	allowRemote bool

	maxAttempts  int
	baseDelay    time.Duration
	delayCeiling time.Duration
	budget       time.Duration
	deadline     time.Duration
	statuses     string
	categories   string
	admit        string

	headerTimeout      time.Duration
	firstOutputTimeout time.Duration
	idleTimeout        time.Duration
	providerHints      bool

	quota       bool
	quotaRatio  float64
	quotaWindow time.Duration
	quotaFloor  int
	cooldown    bool
	quotaKey    string
	fleetCap    int
	redis       string

	getenv func(string) string // the environment parse read: the Redis credentials and the fallback keys
	log    *slog.Logger        // where the Redis store reports outages; nil: nowhere
	fleet  *fleet              // the Redis store config made, closed at exit; nil without -redis

	fallback           string
	fallbackStatuses   string
	fallbackCodes      string
	fallbackNeverCodes string
	fallbackOnStall    string

	set map[string]bool // the flags given, on the command line or in the environment

	configFile string // -config: the file of routes and settings (config.go)

	keys    keySettings // the keys the proxy holds and admits (keys.go)
	version bool        // -version: print the version and exit (ready.go)

	maxBody      int64
	commitAfter  time.Duration
	repeatWindow time.Duration
	grace        time.Duration
	logFormat    string
	logLevel     string
	otlp         string
	metrics      bool
}

// define registers every flag on fs. Adding a setting is one line here and
// one where config reads it; its environment variable follows from its
// name.
func define(fs *flag.FlagSet, s *settings) {
	fs.StringVar(&s.provider, "provider", "openai", "the provider's dialect, one of "+strings.Join(proxy.Providers(), ", "))
	fs.StringVar(&s.upstream, "upstream", "", "the provider's root URL, for example https://api.openai.com or http://127.0.0.1:11434 (required); the client's path is kept")
	fs.StringVar(&s.listen, "listen", "127.0.0.1:8787", "the address to listen on; a non-loopback address also needs -allow-remote")
	fs.BoolVar(&s.allowRemote, "allow-remote", false, "allow a -listen address other than loopback without -client-keys (every client is then admitted)")

	fs.IntVar(&s.maxAttempts, "max-attempts", 4, "wire attempts per completion, the first included (1 to "+strconv.Itoa(retry.MaxAttemptsLimit)+")")
	fs.DurationVar(&s.baseDelay, "base-delay", retry.DefaultBaseDelay, "backoff base delay (full jitter up to base*2^(n-1))")
	fs.DurationVar(&s.delayCeiling, "delay-ceiling", retry.DefaultDelayCeiling, "the longest single delay; a longer Retry-After ends recovery with delay_ceiling")
	fs.DurationVar(&s.budget, "budget", 0, "bound on the time spent waiting between attempts, from the first failure (0: none)")
	fs.DurationVar(&s.deadline, "deadline", 0, "bound on waiting between attempts, counted from the request's arrival (0: none)")
	fs.StringVar(&s.statuses, "retry-statuses", joinInts(retry.DefaultRetryableStatuses()), "comma-separated HTTP statuses eligible for a retry (400, 401 and 403 never are); unset, also the provider's overload status (529 for anthropic)")
	fs.StringVar(&s.categories, "retry-categories", joinCategories(retry.DefaultRetryableCategories()), "comma-separated failure categories eligible for a retry ("+joinCategories(event.Categories())+")")
	fs.StringVar(&s.admit, "admit", "deny", "admission of a resend to a local provider: deny gives no permission, so ollama and omlx stop with admission_required (openai needs none); allow lets every resend through")

	fs.DurationVar(&s.headerTimeout, "header-timeout", 0, "stall limit per attempt: from the request sent to the response headers (0: off); when it fires the attempt fails as header_timeout and is retried like a transport failure")
	fs.DurationVar(&s.firstOutputTimeout, "first-output-timeout", 0, "stall limit per attempt: from the response headers to the first reasoning, content or tool byte, keepalives not counted (0: off); set it above the longest thinking of a reasoning model")
	fs.DurationVar(&s.idleTimeout, "idle-timeout", 0, "stall limit per attempt: the longest wait for the next byte, keepalives included (0: off); before the first output the attempt is retried, after it the stream ends interrupted")
	fs.BoolVar(&s.providerHints, "provider-hints", false, "off by default; honour the providers' resend hints: retry-after-ms and x-ms-retry-after-ms as delay minima, x-should-retry: false and a 429 insufficient_quota as not retryable")

	fs.BoolVar(&s.quota, "quota", true, "bound resends per upstream with a retry quota and share Retry-After cooldowns between this proxy's clients (-quota=false: off); a refused resend answers quota_exhausted, and a client's own retry (X-Stainless-Retry-Count above 0) is charged as a resend")
	fs.Float64Var(&s.quotaRatio, "quota-ratio", quota.DefaultRatio, "resends allowed per window as a share of the window's calls (at least -quota-floor)")
	fs.DurationVar(&s.quotaWindow, "quota-window", quota.DefaultWindow, "the window over which the quota counts calls and resends (at least "+quota.MinWindow.String()+")")
	fs.IntVar(&s.quotaFloor, "quota-floor", quota.DefaultFloor, "resends allowed per window whatever the traffic")
	fs.BoolVar(&s.cooldown, "quota-cooldown", true, "with -quota, share a Retry-After (and, with -provider-hints, retry-after-ms) as a cooldown: every client's attempts to the upstream wait for it, within -delay-ceiling (-quota-cooldown=false: only the call that saw it waits)")
	fs.StringVar(&s.quotaKey, "quota-key", "upstream", "what one quota counts: upstream (scheme, host and port), or narrowed by model, credential (the Authorization or API key header, kept only as a hash) or model,credential")

	fs.StringVar(&s.configFile, "config", "", "read the settings from this YAML file: its keys are these flags' names (max-attempts: 4) and its routes serve several wires in one process, each with its own upstream and settings (see docs/proxy-team.md); a key in the file wins over its flag and variable; SIGHUP reads it again (empty: the flags alone)")
	defineFallback(fs, s)
	defineKeys(fs, s)
	defineVersion(fs, s)
	fs.StringVar(&s.redis, "redis", "", "share the quota's cooldown horizon and -quota-fleet-cap between every proxy of a fleet through this Redis: host:port, or a redis:// or rediss:// (TLS) URL without a password; the password is read from "+envRedisPassword+" (and a username from "+envRedisUsername+", TLS for a host:port from "+envRedisTLS+"=true), never from the command line. When Redis fails or is slow the quota fails open: each proxy decides alone (empty: each proxy keeps its own)")
	fs.IntVar(&s.fleetCap, "quota-fleet-cap", 0, "with -redis, the most resends per -quota-window that every proxy of the fleet together may send to one upstream, whatever the ratio and floor allow each (0: none)")
	fs.Int64Var(&s.maxBody, "max-body", proxy.DefaultMaxBodyBytes, "the largest completion request body in bytes; a larger one is answered 413")
	fs.DurationVar(&s.commitAfter, "stream-commit-after", proxy.DefaultStreamCommitAfter, "how long a streaming client may wait without a byte before the proxy commits its 200 and writes retry notices; a later failure is then an in-band error (0: at the first backoff; negative: never; no effect on ollama)")
	fs.DurationVar(&s.repeatWindow, "repeat-window", proxy.DefaultRepeatWindow, "how long a repeat of a completion that ended with a final failure (same credential, same body) is answered that same answer without contacting the upstream, unless the credential has had a success since; it keeps clients that ignore X-Should-Retry from multiplying attempts, and a person retrying within it gets the same answer (0: off)")
	fs.DurationVar(&s.grace, "grace", proxy.DefaultGrace, "on SIGTERM or SIGINT, how long in-flight requests may finish before they are cut")
	fs.StringVar(&s.logFormat, "log-format", "text", "log format on stderr: text or json")
	fs.StringVar(&s.logLevel, "log-level", "info", "log level: debug (adds Ollama telemetry events), info, warn or error")
	fs.StringVar(&s.otlp, "otlp-endpoint", "", "send traces (one span per call, one per wire attempt) and metrics to this OTLP/HTTP receiver, for example http://127.0.0.1:4318 (to /v1/traces and /v1/metrics), with the OpenTelemetry exporters; empty: only if the standard OTEL_EXPORTER_OTLP_ENDPOINT (or _TRACES_ENDPOINT, _METRICS_ENDPOINT) is set, whose other OTEL_EXPORTER_OTLP_* variables apply too")
	fs.BoolVar(&s.metrics, "metrics", true, "serve the metrics (attempts, resends, outcomes, stalls, hints, quota, client retries) in the Prometheus text format on GET /metrics at the listen address (-metrics=false: not)")
}

// usageHead returns what -h prints before the flags; its list of recovered
// endpoints is the proxy's own (proxy.Endpoints, R21.11).
func usageHead() string {
	var b strings.Builder
	b.WriteString(`recourse-proxy: a local recovery proxy for LLM completion calls.

Clients change only their base URL. These requests are recovered with
recourse's default chain, by -provider:
`)
	for _, p := range proxy.Providers() {
		es, _ := proxy.Endpoints(p)
		names := make([]string, len(es))
		for i, e := range es {
			names[i] = e.String()
		}
		b.WriteString("  " + p + ": " + strings.Join(names, ", ") + "\n")
	}
	b.WriteString(usageTail)
	return b.String()
}

// usageTail follows the list of recovered endpoints in -h.
const usageTail = `One of them spelled otherwise (a doubled or trailing slash, a dot segment,
another letter case) is refused with 400 path_not_canonical; every other
request is forwarded once, untouched. GET /healthz answers "ok"; GET /readyz
says whether the proxy is ready and whether Redis (-redis) answers.

Usage:
  recourse-proxy -upstream https://api.openai.com -provider openai -max-attempts 4
  recourse-proxy -listen 127.0.0.1:11435 -upstream http://127.0.0.1:11434 -provider ollama -admit allow
  recourse-proxy -config /etc/recourse-proxy/routes.yaml   # every wire in one process; SIGHUP reloads it

Every flag can also be set with its environment variable (shown in
brackets); a flag on the command line wins.

Flags:
`

// parse reads the settings from args and the environment getenv; help
// output goes to out. It returns flag.ErrHelp for -h.
func parse(args []string, getenv func(string) string, out io.Writer) (*settings, error) {
	s, _, err := parseFlags(args, getenv, out)
	return s, err
}

// parseFlags is parse, also returning the flag set bound to the settings,
// on which a -config file's keys are then set (config.go).
func parseFlags(args []string, getenv func(string) string, out io.Writer) (*settings, *flag.FlagSet, error) {
	s := &settings{getenv: getenv}
	fs := flag.NewFlagSet("recourse-proxy", flag.ContinueOnError)
	fs.SetOutput(out)
	define(fs, s)
	fs.VisitAll(func(f *flag.Flag) {
		if !noEnv[f.Name] {
			f.Usage += " [" + envName(f.Name) + "]"
		}
	})
	fs.Usage = func() {
		fmt.Fprint(out, usageHead())
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return nil, nil, err
	}
	if fs.NArg() > 0 {
		return nil, nil, fmt.Errorf("unexpected argument %q (flags only; see -h)", fs.Arg(0))
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	var err error
	fs.VisitAll(func(f *flag.Flag) {
		if err != nil || set[f.Name] || noEnv[f.Name] {
			return
		}
		if v := getenv(envName(f.Name)); v != "" {
			if e := fs.Set(f.Name, v); e != nil {
				err = envError(f, v)
			}
		}
	})
	if err != nil {
		return nil, nil, err
	}
	s.set = map[string]bool{}
	fs.Visit(func(f *flag.Flag) { s.set[f.Name] = true })
	return s, fs, nil
}

// envError is the error of a flag's environment variable whose value v
// does not parse: the variable, the value (quoted, at most 64 bytes of
// it), the flag, and the form the flag wants (R21.10).
func envError(f *flag.Flag, v string) error {
	if len(v) > 64 {
		v = v[:64] + "…"
	}
	return fmt.Errorf("%s is %q; want %s (it sets -%s)", envName(f.Name), v, formOf(f), f.Name)
}

// config returns the proxy's Config for s, or an error naming the bad
// setting.
func (s *settings) config() (proxy.Config, error) {
	cfg := proxy.Config{Provider: s.provider, Upstream: s.upstream, MaxBodyBytes: s.maxBody, Deadline: s.deadline}
	if s.upstream == "" {
		return cfg, errors.New("-upstream is required: the provider's root URL, for example https://api.openai.com")
	}
	if s.maxAttempts < 1 || s.maxAttempts > retry.MaxAttemptsLimit {
		return cfg, fmt.Errorf("-max-attempts must be between 1 and %d", retry.MaxAttemptsLimit)
	}
	if s.maxBody <= 0 {
		return cfg, errors.New("-max-body must be positive")
	}
	if s.deadline < 0 || s.budget < 0 {
		return cfg, errors.New("-budget and -deadline must not be negative")
	}
	p := retry.Policy{MaxAttempts: s.maxAttempts, BaseDelay: new(s.baseDelay), DelayCeiling: new(s.delayCeiling)}
	if s.budget > 0 {
		p.Budget = new(s.budget)
	}
	var err error
	// Unset, the policy keeps its default statuses, which add the
	// provider's overload status (Claude's 529, R22.1); set, it is the
	// list as given.
	if s.set["retry-statuses"] {
		if p.RetryableStatuses, err = parseStatuses(s.statuses); err != nil {
			return cfg, fmt.Errorf("-retry-statuses: %w", err)
		}
	}
	if p.RetryableCategories, err = parseCategories(s.categories); err != nil {
		return cfg, err
	}
	switch s.admit {
	case "deny":
	case "allow":
		p.Admit = retry.AllowAll()
	default:
		return cfg, fmt.Errorf("-admit is %q; want allow or deny", s.admit)
	}
	p.ProviderHints = s.providerHints
	if err := p.Validate(); err != nil {
		return cfg, err
	}
	cfg.Policy = p
	switch {
	case s.repeatWindow < 0:
		return cfg, fmt.Errorf("-repeat-window is %v; want a positive duration, or 0 to send every repeat upstream", s.repeatWindow)
	case s.repeatWindow == 0:
		cfg.RepeatWindow = -1
	default:
		cfg.RepeatWindow = s.repeatWindow
	}
	if cfg.PerAttempt, err = s.stallLayers(); err != nil {
		return cfg, err
	}
	if err = s.keyConfig(&cfg); err != nil {
		return cfg, err
	}
	// The quota comes last: with -redis it opens a client, which no later
	// error may leak.
	if cfg.Quota, err = s.quotaLayer(); err != nil {
		return cfg, err
	}
	if cfg.Fallback, cfg.FallbackStatuses, err = s.fallbackTargets(); err != nil {
		return cfg, err
	}
	if cfg.Fallback != nil {
		if cfg.FallbackRules, err = s.fallbackRules(cfg.FallbackStatuses, cfg.Fallback); err != nil {
			return cfg, err
		}
	}
	cfg.StreamCommitAfter = s.commitAfter
	if s.commitAfter == 0 {
		cfg.StreamCommitAfter = time.Nanosecond // commit at the first backoff
	}
	return cfg, nil
}

// stallLayers returns the per-attempt stall limits of s: none when every
// limit is 0.
func (s *settings) stallLayers() ([]layer.Layer, error) {
	lim := stall.Limits{Header: s.headerTimeout, FirstOutput: s.firstOutputTimeout, Idle: s.idleTimeout}
	for _, f := range []struct {
		name string
		d    time.Duration
	}{{"-header-timeout", lim.Header}, {"-first-output-timeout", lim.FirstOutput}, {"-idle-timeout", lim.Idle}} {
		if f.d < 0 {
			return nil, fmt.Errorf("%s is %v; want a positive duration, or 0 for no limit", f.name, f.d)
		}
		if f.d > layer.MaxDuration {
			return nil, fmt.Errorf("%s is %v; the largest limit is %v", f.name, f.d, layer.MaxDuration)
		}
	}
	if lim == (stall.Limits{}) {
		return nil, nil
	}
	l, err := stall.New(lim)
	if err != nil {
		return nil, err
	}
	return []layer.Layer{l}, nil
}

// quotaFlags are the settings that only mean something with -quota.
var quotaFlags = []string{"quota-ratio", "quota-window", "quota-floor", "quota-key", "quota-cooldown", "redis", "quota-fleet-cap"}

// quotaLayer returns the retry quota of s, or nil with -quota=false.
func (s *settings) quotaLayer() (*quota.Layer, error) {
	if !s.quota {
		for _, name := range quotaFlags {
			if s.set[name] {
				return nil, fmt.Errorf("-%s is set but -quota is false; drop it, or turn the quota on", name)
			}
		}
		return nil, nil
	}
	if math.IsNaN(s.quotaRatio) || math.IsInf(s.quotaRatio, 0) || s.quotaRatio < 0 {
		return nil, fmt.Errorf("-quota-ratio is %v; want a number of 0 or more, for example 0.2", s.quotaRatio)
	}
	if s.quotaWindow < quota.MinWindow {
		return nil, fmt.Errorf("-quota-window is %v; want at least %v, for example 60s", s.quotaWindow, quota.MinWindow)
	}
	if s.quotaFloor < 0 {
		return nil, fmt.Errorf("-quota-floor is %d; want 0 or more", s.quotaFloor)
	}
	opts := []quota.Option{quota.WithRatio(s.quotaRatio), quota.WithWindow(s.quotaWindow), quota.WithFloor(s.quotaFloor)}
	if !s.cooldown {
		opts = append(opts, quota.WithoutCooldown())
	}
	for _, k := range splitList(s.quotaKey) {
		switch k {
		case "upstream":
		case "model":
			opts = append(opts, quota.ByModel())
		case "credential":
			opts = append(opts, quota.ByCredential())
		default:
			return nil, fmt.Errorf("-quota-key: %q is not a key; want upstream, model, credential or model,credential", k)
		}
	}
	fo, f, err := s.fleetOptions(s.getenv, s.log)
	if err != nil {
		return nil, err
	}
	q, err := quota.New(append(opts, fo...)...)
	if err != nil {
		if f != nil && f != s.fleet {
			f.Close()
		}
		return nil, err
	}
	s.fleet = f
	return q, nil
}

// logger returns the stderr logger for s.
func (s *settings) logger(w io.Writer) (*slog.Logger, error) {
	var level slog.Level
	if err := level.UnmarshalText([]byte(s.logLevel)); err != nil {
		return nil, fmt.Errorf("-log-level is %q; want debug, info, warn or error", s.logLevel)
	}
	opts := &slog.HandlerOptions{Level: level}
	switch s.logFormat {
	case "text":
		return slog.New(slog.NewTextHandler(w, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	}
	return nil, fmt.Errorf("-log-format is %q; want text or json", s.logFormat)
}

// checkListen refuses a listen address that is not loopback unless
// allowRemote: an empty host listens on every interface.
func checkListen(addr string, allowRemote bool) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("-listen %q: %v", addr, err)
	}
	if allowRemote || host == "localhost" {
		return nil
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return nil
	}
	return fmt.Errorf("-listen %q is not a loopback address; add -client-keys to admit only clients with a proxy key, or -allow-remote to admit every client there", addr)
}

func parseStatuses(v string) ([]int, error) {
	var out []int
	for _, f := range splitList(v) {
		n, err := strconv.Atoi(f)
		if err != nil || n < 100 || n > 599 {
			return nil, fmt.Errorf("%q is not an HTTP status", f)
		}
		out = append(out, n)
	}
	if out == nil {
		out = []int{}
	}
	return out, nil
}

func parseCategories(v string) ([]event.Category, error) {
	var out []event.Category
	for _, f := range splitList(v) {
		c := event.Category(f)
		if !c.Valid() {
			return nil, fmt.Errorf("-retry-categories: %q is not a category (%s)", f, joinCategories(event.Categories()))
		}
		out = append(out, c)
	}
	if out == nil {
		out = []event.Category{}
	}
	return out, nil
}

func splitList(v string) []string {
	var out []string
	for _, f := range strings.Split(v, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

func joinInts(v []int) string {
	s := make([]string, len(v))
	for i, n := range v {
		s[i] = strconv.Itoa(n)
	}
	return strings.Join(s, ",")
}

func joinCategories(v []event.Category) string {
	s := make([]string, len(v))
	for i, c := range v {
		s[i] = string(c)
	}
	return strings.Join(s, ",")
}
