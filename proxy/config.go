package proxy

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/recourse-dev/recourse/codec"
	"github.com/recourse-dev/recourse/codecs/anthropic"
	"github.com/recourse-dev/recourse/codecs/gemini"
	"github.com/recourse-dev/recourse/codecs/ollama"
	"github.com/recourse-dev/recourse/codecs/omlx"
	"github.com/recourse-dev/recourse/codecs/openai"
	"github.com/recourse-dev/recourse/codecs/openai/responses"
	"github.com/recourse-dev/recourse/layer"
	"github.com/recourse-dev/recourse/layers/fallback"
	"github.com/recourse-dev/recourse/layers/quota"
	"github.com/recourse-dev/recourse/layers/retry"
)

// DefaultMaxBodyBytes is the default bound on a completion request body:
// 32 MiB, room for a long conversation with inline images. The proxy keeps
// the body in memory once so that a retry resends exactly the same bytes.
const DefaultMaxBodyBytes = 32 << 20

// DefaultStreamCommitAfter is the default Config.StreamCommitAfter: a
// streaming client that would otherwise wait 10 s without a byte gets its
// 200 and the retry notices.
const DefaultStreamCommitAfter = 10 * time.Second

// Providers returns the provider names Config.Provider accepts. Each call
// returns a new slice; changing it changes nothing else.
func Providers() []string { return slices.Clone(providers) }

var providers = []string{"openai", "ollama", "omlx", "gemini", "anthropic"}

// Config configures a Handler. The zero value is not usable: Provider and
// Upstream are required.
type Config struct {
	// Provider is one of Providers() ("openai", "ollama", "omlx", "gemini",
	// "anthropic"): it chooses the codec, the
	// completion endpoint and the dialect of the proxy's own error bodies.
	Provider string
	// Upstream is the provider's root URL, for example
	// https://api.openai.com or http://127.0.0.1:11434. The client's path is
	// appended to it, so it must not end in the endpoint's own prefix
	// (/v1 for openai and omlx, /api for ollama).
	Upstream string
	// Policy is the recovery policy of the completion endpoint (see
	// retry.Policy; the zero value makes one attempt). Its OnEvent, when
	// set, is called before the proxy logs an event. Tests inject its
	// clocks, Sleep and Jitter.
	Policy retry.Policy
	// Deadline, when positive, bounds each completion's admission waits and
	// backoff to Deadline after the request arrived (it sets the policy's
	// Deadline per call, R7); zero means no per-call deadline.
	Deadline time.Duration
	// MaxBodyBytes bounds a completion request body; zero means
	// DefaultMaxBodyBytes, a negative value is an error. A larger body is
	// answered 413 and nothing is sent upstream; a larger Content-Length
	// is refused before the body is read (no 100 Continue is sent).
	MaxBodyBytes int64
	// StreamCommitAfter is how long a streaming client may wait without a
	// byte before the proxy commits its 200 and writes retry notices (see
	// the package documentation for the trade-off): zero means
	// DefaultStreamCommitAfter; a negative value never commits early. It
	// has no effect on Ollama streams.
	StreamCommitAfter time.Duration
	// PerCall are layers placed outside the engine of the completion
	// endpoint's chain, in order (chain.WithPerCall): tracing
	// (otelbridge). Nil means none. A retry quota goes in
	// Quota instead, so that the proxy can charge client retries to it.
	PerCall []layer.Layer
	// PerAttempt are layers placed at layer.PerAttempt of the completion
	// endpoint's chain, in order (chain.WithPerAttempt), for example the
	// stall limits of package layers/stall. Nil means none.
	PerAttempt []layer.Layer
	// Quota is the retry quota and shared cooldown of the completion
	// endpoint (package layers/quota), placed as the innermost per-call
	// layer; nil means none. A refused resend ends the call with outcome
	// quota_exhausted. With a quota, a request its client marks as a retry
	// of its own (X-Stainless-Retry-Count above 0, as the OpenAI SDKs send)
	// is charged as a resend rather than as a new call: it deposits
	// nothing, withdraws one resend before it is sent (refunded when it
	// succeeds, as the engine's resends are) and, refused, is answered 503
	// quota_exhausted without contacting the upstream.
	Quota *quota.Layer
	// Fallback are the completion endpoint's fallback targets (package
	// layers/fallback, R20), tried in order when recovery on the upstream
	// ends exhausted, quota_exhausted or delay_ceiling, or interrupted on
	// a status of FallbackStatuses: another model, and/or another upstream
	// root of the same wire (checked like Upstream) with its own
	// credential. The fallback runs outside Quota, which gates every
	// target, and asks Policy.Admit before a fallback from an ambiguous
	// failure of a local provider. Nil means none.
	Fallback []fallback.Target
	// FallbackStatuses are the HTTP statuses of an interrupted call that
	// fall back too (fallback.Rules.Statuses), for example 404 for a model
	// that is not found; nil means none.
	FallbackStatuses []int
	// FallbackRules are the fallback's further rules (fallback.Rules):
	// the provider error codes that fall back (Codes) or never do
	// (NeverCodes), and the stall limits after which a target is left at
	// once (Stalls). Its Statuses are added to FallbackStatuses; its Admit
	// is not used (Policy.Admit is asked). The zero value adds nothing.
	FallbackRules fallback.Rules
	// Transport is the base transport for upstream requests, for both the
	// chain's sender and forwarded requests; nil means a private clone of
	// http.DefaultTransport. It must not retry or follow redirects.
	Transport http.RoundTripper
	// Logger receives one line per request and per lifecycle event; nil
	// logs nothing.
	Logger *slog.Logger
	// RepeatWindow is how long the proxy answers a repeat of a completion
	// that ended with a final failure (same request URI, credential headers
	// and body) with that same answer — status, body and the recourse
	// headers, plus X-Recourse-Replayed: true — without contacting the
	// upstream, unless the upstream has answered a completion of that
	// credential with a success since (R21.3). Clients that ignore
	// X-Should-Retry then cannot multiply the proxy's attempts. Zero means
	// DefaultRepeatWindow; a negative value turns the memory off. The
	// memory keeps at most 1024 answers of up to 16 KiB of body, and the
	// requests only as hashes.
	RepeatWindow time.Duration
	// UpstreamKey, when set, is the upstream's key the proxy holds
	// (R21.12): every request it sends upstream, recovered or forwarded,
	// carries it in the wire's own header (codec.AuthHeader: Authorization:
	// Bearer <key>, x-api-key for Claude, x-goog-api-key for Gemini), and
	// no credential the client sent goes with it: the proxy removes every
	// header of layer.CredentialHeaders and the query parameter key. It
	// never appears in a log line, metric, event, span or error. Empty:
	// the client's own credential headers pass through.
	UpstreamKey string
	// ClientKeys, when set, are the only keys the proxy admits (R21.12): a
	// client presents one as Authorization: Bearer <key>; a request without
	// a known key is answered 401, one whose key does not allow its route
	// 403, both in the wire's error document with X-Should-Retry: false and
	// nothing sent upstream. An admitted client's key is removed before
	// the request goes upstream. Keys are compared by SHA-256, in constant
	// time. GET /healthz needs no key. Nil admits every client; an empty
	// non-nil slice is an error.
	ClientKeys []ClientKey
	// OnClientRetry, when set, is told of every client retry and how the
	// proxy answered it (ClientRetryReplayed, ClientRetryCharged,
	// ClientRetryRefused), for a metric: the command counts them as
	// recourse.proxy.client_retries. It is called synchronously on the
	// request's goroutine, concurrently for concurrent requests, and must
	// not block. Nil reports nothing. The chain's own metrics come from a
	// per-call layer (otelbridge) in PerCall.
	OnClientRetry func(ctx context.Context, answer ClientRetry)
}

// ConfigError reports an invalid Config field; its message names the field
// and says what is wrong.
type ConfigError struct {
	// Field is the name of the Config field.
	Field string
	// Problem says what is wrong.
	Problem string
}

// Error returns "proxy: <Field> <Problem>".
func (e *ConfigError) Error() string { return "proxy: " + e.Field + " " + e.Problem }

// dialect is what a provider name chooses: the codec of the completion
// endpoint, and the codec of a Responses API served beside it, or nil.
// This is the one place the proxy reads a provider's name; everything
// else it asks the codec (its Facts, codec.ErrorFramer,
// codec.ErrorDocumenter).
type dialect struct {
	codec, responses codec.Codec
	// routes are the completion paths of a codec that names the model in
	// the path (codec.Router), "{model}" standing for the model segment;
	// nil for a codec with one fixed Path.
	routes []string
	// namespaces are the path prefixes the wire owns among a Router's
	// routes without a prefix (see Router).
	namespaces []string
	// marker is a header every client of the wire sends and no other
	// wire's does, which claims a request among a Router's routes without
	// a prefix (see Router); empty: none.
	marker string
}

// modelToken stands for the model in a route built by a codec.Router.
const modelToken = "MODEL"

// dialectFor returns the dialect of a provider name, or a *ConfigError.
func dialectFor(provider string) (dialect, error) {
	switch provider {
	case "openai":
		return dialect{codec: openai.New(), responses: responses.New(), namespaces: []string{"/v1/"}}, nil
	case "ollama":
		return dialect{codec: ollama.New(), namespaces: []string{"/api/"}}, nil
	case "omlx":
		return dialect{codec: omlx.New(), namespaces: []string{"/v1/"}}, nil
	case "gemini":
		// Both endpoints, under v1beta and v1 (R23.8).
		var routes []string
		for _, c := range []*gemini.Codec{gemini.New(), gemini.New(gemini.WithAPIVersion("v1"))} {
			for _, op := range []codec.Operation{codec.Ordinary, codec.Streaming} {
				p, _, _ := strings.Cut(c.RoutePath(modelToken, op), "?")
				routes = append(routes, strings.Replace(p, modelToken, "{model}", 1))
			}
		}
		return dialect{codec: gemini.New(), routes: routes, namespaces: []string{"/v1beta/", "/v1alpha/"}}, nil
	case "anthropic":
		return dialect{codec: anthropic.New(), namespaces: []string{"/v1/messages"}, marker: "Anthropic-Version"}, nil
	}
	return dialect{}, &ConfigError{Field: "Provider", Problem: fmt.Sprintf("is %q; want one of %s", provider, strings.Join(providers, ", "))}
}

// parseUpstream checks and parses the upstream root URL for codec.
func parseUpstream(raw string, cdc codec.Codec) (*url.URL, error) {
	if raw == "" {
		return nil, &ConfigError{Field: "Upstream", Problem: "is empty; want the provider's root URL, for example https://api.openai.com"}
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, &ConfigError{Field: "Upstream", Problem: "is not an http or https URL with a host"}
	}
	if u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return nil, &ConfigError{Field: "Upstream", Problem: "must not carry credentials, a query or a fragment; clients send their own headers"}
	}
	u.Path = strings.TrimRight(u.Path, "/")
	u.RawPath = ""
	prefix := cdc.Path()[:strings.Index(cdc.Path()[1:], "/")+1] // "/v1" or "/api"
	if strings.HasSuffix(u.Path, prefix) {
		return nil, &ConfigError{Field: "Upstream", Problem: "ends in " + prefix + "; give the provider's root URL (the proxy keeps the client's path, so a client with base URL …" + prefix + " would reach " + prefix + prefix + ")"}
	}
	return u, nil
}
