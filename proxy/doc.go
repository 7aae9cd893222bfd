// Package proxy is recourse's local recovery proxy as an http.Handler: the
// default chain's recovery for clients in any language, which change only
// their base URL. The command recourse-proxy (cmd/recourse-proxy) serves
// it; a Go program may embed it.
//
// A Handler serves one provider (openai, ollama, omlx, gemini or anthropic)
// in front of one upstream root URL; a Router serves several, each a
// route with its own Handler, in one process (see Router for how a
// request finds its route). A Handler keeps the client's path (a client
// whose base URL is http://127.0.0.1:8787/v1 reaches
// {upstream}/v1/chat/completions, never /v1/v1):
//
//   - The completion endpoint (POST /v1/chat/completions for openai and
//     omlx, POST /api/chat for ollama; for gemini, every model, POST
//     /v1beta/models/{model}:generateContent, POST
//     /v1beta/models/{model}:streamGenerateContent, POST
//     /v1/models/{model}:generateContent and POST
//     /v1/models/{model}:streamGenerateContent; POST /v1/messages for anthropic) goes through
//     chain.Default with the
//     Config's policy. Its body is read once, up to Config.MaxBodyBytes
//     (DefaultMaxBodyBytes); a larger body is answered 413 and nothing is
//     sent upstream. A body whose Content-Length is larger is refused on
//     that header, before a byte of it is read and before any 100 Continue;
//     a chunked body as soon as it crosses the limit.
//   - For openai, the Responses API too, with a chain of its own (the
//     Responses codec, the same Config): POST /v1/responses, foreground or
//     background, and GET /v1/responses/{id} (a retrieve, or a stream read
//     with stream=true), which are reads retried without admission. A
//     background stream is resumed inside the proxy from its cursor, so an
//     SSE client reads one stream, and a client that goes away from a
//     background stream the proxy started has it cancelled upstream.
//   - A recovered endpoint spelled otherwise (//v1/chat/completions,
//     /api/chat/, a dot segment, another letter case) is answered 400 with
//     code path_not_canonical; nothing is sent upstream.
//   - Every other path and method is forwarded once, untouched, without
//     recovery; its body streams through unbuffered.
//   - GET /healthz answers 200 "ok" without contacting the upstream.
//
// Endpoints returns the recovered endpoints of a provider: openai
// POST /v1/chat/completions, POST /v1/responses and GET /v1/responses/{id};
// ollama POST /api/chat; omlx POST /v1/chat/completions; anthropic
// POST /v1/messages.
//
// Optionally the proxy holds the upstream's key (Config.UpstreamKey) and
// admits only clients that present a proxy key of their own
// (Config.ClientKeys, a key's SHA-256 and the routes it may use; CONTRACT.md
// R21.12). Without them, client headers (Authorization and the rest) go
// upstream as given, except
// the hop-by-hop headers a reverse proxy must drop (and, on the completion
// endpoint, Accept-Encoding: the chain reads the body it recovers, so the
// proxy asks for the encoding itself and hands the client the decoded
// bytes). No header value, body or query string is ever logged.
//
// What a client sees:
//
//   - Success: the upstream's status, headers and body byte for byte,
//     streams flushed frame by frame (keepalives included), plus
//     X-Recourse-Call-Id naming the logical call in the proxy's log.
//   - On every completion answer, success or not, X-Recourse-Attempts: the
//     wire attempts it took ("2" after a 503 and a 200), with
//     X-Recourse-Resumes and X-Recourse-Fallbacks when a background stream
//     was resumed or the call fell back. A stream's status may
//     leave before its recovery ends: its header then counts the attempts
//     sent by then, and the stream, when it ends cleanly, carries the
//     final counts as HTTP trailers of the same names. The request log
//     line always has the final counts (attempts, resumes, fallbacks).
//   - Recovery ended on an HTTP failure: the final upstream status and body,
//     plus X-Should-Retry: false (OpenAI's SDKs then do not retry on top)
//     and X-Recourse-Outcome naming the outcome (exhausted, interrupted,
//     delay_ceiling, deadline, admission_required …).
//   - A failure without a complete upstream answer (the connection reset on
//     every attempt, a 2xx error document, a budget or deadline that ran
//     out, cancellation at shutdown): a status (502, 503 or 504) and an
//     error body in the provider's dialect carrying the recovery error's
//     safe text, with the same two headers.
//   - An upstream redirect, on any path: 502 and an error body naming the
//     refused redirect (code redirect_refused), never a Location, so a
//     client that follows redirects (fetch does, with the body and the
//     credentials) contacts nothing.
//   - A stream that fails after output: the provider's in-band error frame
//     (OpenAI: a data: {"error":…} event; Ollama: an {"error":…} line),
//     then the connection is closed without the chunked terminator; never a
//     silent end and never a synthesised [DONE] or "done":true. A stream
//     cut at shutdown says so: code "shutdown" (where the dialect has a
//     code field) and ErrShutdown's text.
//   - While an OpenAI or oMLX stream waits in backoff after its response was
//     committed: SSE comment lines, for example
//     ": retrying after HTTP 503 (attempt 2/4 in 1.2s)", which SSE clients
//     ignore and a UI may show. A resend after a stall limit names it:
//     ": retrying after idle timeout (attempt 2/4 in 1.2s)". The failure
//     and the wait read as in the broker's status line (event.Failure.Text,
//     layer.FormatDelay: "transport error", "2.0s", "800ms"); an
//     Ollama stream, NDJSON without comment lines, gets no notice.
//   - With Config.Quota, a resend the retry quota refuses ends with outcome
//     quota_exhausted like the other outcomes (the final upstream answer,
//     or 503 and code quota_exhausted when there is none). A request its
//     client marks as a retry of its own (X-Stainless-Retry-Count above 0)
//     is charged as a resend, not as a new call, and is answered 503
//     quota_exhausted without contacting the upstream when the quota has
//     none left. Each completion answer whose status is written after
//     recovery carries X-Recourse-Quota-Remaining, the resends the quota
//     allows now.
//
// Committing a stream early is a trade-off, governed by
// Config.StreamCommitAfter. Until the first upstream attempt answers 2xx,
// the proxy holds the client's status line, so that a final failure still
// reaches the client as a real status its SDK turns into its own error
// type. A client that waits long without a byte may time out, though, and
// sees no retry notice. When the wait so far plus the next scheduled
// backoff reaches StreamCommitAfter (DefaultStreamCommitAfter, 10 s), the
// proxy commits 200 text/event-stream and starts writing the notices; a
// later final failure of that call is then an in-band error frame, not a
// status. Ollama's NDJSON has no comment syntax, so an Ollama stream is
// never committed early and gets no notices.
//
// Each lifecycle event of a recovered call is one structured slog line on
// the Config's Logger, written as package eventlog writes it (message
// eventlog.Message, attributes eventlog.Attrs), as is each request (message
// "request"); see Handler for the attributes. Tracing and metrics are a
// per-call layer in Config.PerCall (the command puts otelbridge's there, on
// the OpenTelemetry OTLP and Prometheus exporters); stall limits are
// per-attempt layers in Config.PerAttempt, and provider hints are a field
// of Config.Policy. A repeat of a request that ended with a final failure
// is answered from memory (Config.RepeatWindow), so that the proxy stays
// the only retry owner whatever the client does. A Handler is safe for
// concurrent use; Serve runs it with a graceful shutdown (CONTRACT.md R21).
package proxy
