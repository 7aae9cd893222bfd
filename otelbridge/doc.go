// Package otelbridge is the tracing layer of a recourse chain: it turns the
// retry layer's safe lifecycle events into OpenTelemetry spans and
// metrics. It is the only package of the core module that imports
// OpenTelemetry, and it imports only the API (go.opentelemetry.io/otel,
// .../otel/trace and .../otel/metric); the application chooses the SDK and
// the exporter.
//
// Put it outermost, for example with chain.WithPerCall:
//
//	ch, err := chain.Default(openai.New(),
//		chain.WithPerCall(otelbridge.New()),
//		chain.WithPolicy(retry.Policy{MaxAttempts: 3}))
//
// # The span tree
//
// Every logical completion gets one span, and every request that actually
// went on the wire gets one child span:
//
//	chat gpt-4o-mini   CLIENT  the logical completion: admission waits, every attempt,
//	│                           every backoff sleep and the whole stream
//	├── POST           CLIENT  attempt 1             503  status Error, error.type "503"
//	└── POST           CLIENT  resend_count 1        200  status Unset
//
// The logical span follows the OpenTelemetry GenAI conventions (development
// status): its name is "chat {model}" ("chat" when the request names no
// model) and it carries gen_ai.operation.name ("chat"),
// gen_ai.provider.name (the codec's provider: "openai", "anthropic" and
// "gcp.gemini", the well-known values, and the custom values "ollama" and
// "omlx"), gen_ai.request.model,
// gen_ai.request.stream (true for streamed calls), server.address,
// server.port, and recourse.outcome, recourse.attempts,
// recourse.operation and recourse.logical_request_id. It starts when
// RoundTrip is called and ends when the response body reaches EOF or an
// error, or is closed — for a native stream (layer.CallResult.Stream), when its
// frame reader returns io.EOF or an error, or is closed — or at once when
// RoundTrip returns an error. A response body that is neither drained nor
// closed leaves the span open, as with otelhttp.
//
// recourse.outcome is "success", one of the outcomes event.Outcomes lists
// ("exhausted", "interrupted", "cancelled", "admission_required",
// "admission_rejected", "admission_no_decision", "deadline",
// "delay_ceiling"), "closed" for a body the caller closed before the
// completion ended, or "error" for an error that is not a recovery outcome
// (an invalid policy, a failing OnEvent observer). The logical span gets
// status Error and error.type only when the call finally failed; failures
// that a retry recovered stay on their attempt spans (recording-errors
// convention). error.type is then the final failure's HTTP status
// ("503") for an HTTP failure, or its failure category ("transport",
// "provider_response", …); a caller that cancelled its context is not an
// error (recourse.outcome "cancelled", status Unset), while a context
// deadline is (error.type "timeout").
//
// Response evidence — gen_ai.response.model, gen_ai.response.finish_reasons,
// gen_ai.usage.input_tokens and gen_ai.usage.output_tokens — is read from
// the Result of the call's *layer.Call: the one the chain or the native
// client placed in the request context, or one the layer adds itself. The
// layer never asks for typed errors, so a drop-in SDK still gets a final
// non-retryable response (a 400, a 404) passed through; Ollama stream usage
// also comes from the metrics event. Because response evidence is sensitive,
// the finish reasons are kept only from a fixed set of known
// values, and a response model is kept only when it equals the requested
// model, or is a short model-like token that occurs neither in a request
// header value nor in the request body.
//
// Each attempt span follows the stable HTTP client conventions: its name is
// the method ("POST"), and it carries http.request.method, url.full,
// server.address, server.port (always, also for 80 and 443),
// http.response.status_code when a response arrived,
// http.request.resend_count = n-1 on the n-th attempt (absent on the first)
// and recourse.attempt_id. It starts at attempt_started (when the request
// is about to leave) and ends at attempt_succeeded or attempt_failed; for a
// stream attempt_succeeded comes with the terminal frame, so a stream cut in
// the middle lands on the attempt that broke. A failed attempt has status
// Error and error.type (the status as a string for an HTTP failure,
// otherwise the failure category), except for a caller's cancellation. An
// attempt that a stall limit ended (package layers/stall) also carries
// recourse.failure.stall (header_timeout, first_output_timeout or
// idle_timeout), which is then its status description; a failure whose
// classification honoured a provider hint (retry.Policy.ProviderHints)
// carries recourse.failure.hint (x_should_retry_false or
// insufficient_quota). A failed attempt whose failure record holds the
// usage it reported (event.Failure.Usage, for example a Messages API
// message_start ahead of an in-band overload) carries it as
// gen_ai.usage.input_tokens and gen_ai.usage.output_tokens on its own
// span, so what a discarded attempt cost is visible; the usage of the
// answer stays on the logical span. The resume read of a background stream is
// an attempt span of its own with http.request.method GET and
// recourse.resume.cursor, the sequence number it reads after; its url.full
// stays the call's, which names no response.
//
// url.full is scheme://host/path only: user information is stripped and
// the query and fragment are dropped entirely rather than redacted,
// because API keys are commonly passed as query parameters (?key=,
// ?api-key=) and no redaction list can know every name.
//
// # Span events
//
// The decision plane appears as span events on the logical span (in
// Jaeger: the span's logs): recourse.admission.pending,
// recourse.admission.allowed, recourse.admission.rejected,
// recourse.admission.no_decision, recourse.admission.required,
// recourse.delay.scheduled (with recourse.delay_ms), recourse.retry.started,
// with a retry quota (package layers/quota) recourse.quota.refused (with
// recourse.quota.upstream and recourse.quota.resends),
// recourse.quota.unavailable and recourse.cooldown.wait (with
// recourse.delay_ms), and the terminal recourse.exhausted, recourse.interrupted and
// recourse.cancelled. Their attributes are the safe values of the event
// only: recourse.event, recourse.attempt, recourse.next_attempt,
// recourse.failure.category, recourse.failure.reason,
// recourse.failure.stall and recourse.failure.hint when set,
// recourse.resume.cursor on the events of a background stream's resume,
// http.response.status_code and, on terminal events, recourse.outcome.
//
// Nothing the layer records contains a prompt, completion text, tool
// argument, header value, URL query or credential.
//
// # Metrics
//
// The layer records these instruments with the meter provider of
// WithMeterProvider (by default the global one), under the instrumentation
// scope ScopeName. The two gen_ai.* instruments are the client metrics of
// the GenAI conventions (development status); the recourse.* ones measure
// what no convention defines.
//
//	instrument                            kind       unit          recorded
//	gen_ai.client.operation.duration      histogram  s             once per logical completion, when its span ends
//	gen_ai.client.token.usage             histogram  {token}       twice per successful completion whose usage is known
//	recourse.client.attempts              counter    {attempt}     once per wire attempt, when it ends
//	recourse.client.resends               counter    {resend}      at every retry_started event
//	recourse.client.retry.delay           histogram  s             at every delay_scheduled event: its Delay
//	recourse.client.admission.decisions   counter    {decision}    at every admission decision
//	recourse.client.outcomes              counter    {completion}  once per logical completion that has a recourse.outcome
//	recourse.client.time_to_first_output  histogram  s             at most once per streamed completion
//
// Every measurement carries gen_ai.operation.name ("chat"),
// gen_ai.provider.name and gen_ai.request.model (once an event named them,
// the same values as on the logical span: the requested model, never the
// response model), server.address and server.port. Beside these:
//
//   - gen_ai.client.operation.duration: error.type when the completion
//     finally failed, with the logical span's value. It runs from RoundTrip
//     to the end of the logical span (the last byte of the body or stream,
//     an error, or Close).
//   - gen_ai.client.token.usage: gen_ai.token.type ("input", "output");
//     the same counts as gen_ai.usage.* on the span.
//   - recourse.client.attempts: recourse.attempt.outcome,
//     http.response.status_code when a response arrived, and error.type for
//     a failure other than the caller's cancellation, as on the attempt
//     span; such a failure also carries recourse.failure.stall and
//     recourse.failure.hint when set, as the attempt span does. The outcome is "succeeded" (attempt_succeeded), "failed"
//     (attempt_failed, or an attempt left open by a call that failed, such
//     as an observer error) or "closed" (an attempt the engine left without
//     an attempt_succeeded or attempt_failed event; a stream the caller
//     closes early is recorded as failed).
//   - recourse.client.resends and recourse.client.retry.delay:
//     recourse.failure.category of the failure that caused the resend, its
//     http.response.status_code when it had one, and its
//     recourse.failure.stall and recourse.failure.hint when set.
//   - recourse.client.admission.decisions: recourse.admission.decision —
//     "allowed", "rejected", "no_decision" or "required" (the codec's rule
//     requires a hook and there is none). admission_pending is not a decision.
//   - recourse.client.outcomes: recourse.outcome (the logical span's value:
//     "success", an outcome event.Outcomes lists, "closed" or "error"), error.type
//     when the completion failed, and the final failure's
//     recourse.failure.stall and recourse.failure.hint when set, as on the
//     terminal span event.
//   - recourse.client.time_to_first_output: no other attribute. It runs from
//     RoundTrip to the first semantic output of a stream — the first
//     content, reasoning or tool-call fragment — as the layer first sees it:
//     the first frame of a native stream (layer.CallResult.Stream, which the
//     layer wraps) with content, reasoning or fragments, or the first
//     telemetry event whose Progress.Observed counts any of them (Ollama
//     streams, drop-in ones included). Other events are not used: their
//     counts are read after the fact (attempt_succeeded comes at the end of
//     the stream). The layer does not decode a response body, so a drop-in
//     stream of a provider without frame telemetry (OpenAI, oMLX through an
//     SDK) records no sample. The conventions' time_to_first_chunk is not
//     the same measure: a first chunk can carry no output.
//
// No attribute names a logical request, an attempt or a URL path, so the
// number of series is bounded by the configuration (providers, models,
// servers) and the small value sets above. recourse.failure.stall is one of
// header_timeout, first_output_timeout and idle_timeout, and
// recourse.failure.hint one of x_should_retry_false and insufficient_quota;
// no other value is recorded, on a metric or a span. Measurements are recorded in
// the logical span's context, so an SDK that keeps exemplars links them to
// the trace.
//
// Explicit bucket boundaries, in the instrument's unit:
//
//	gen_ai.client.operation.duration      0.01 0.02 0.04 0.08 0.16 0.32 0.64 1.28 2.56 5.12 10.24 20.48 40.96 81.92
//	                                      (the conventions' advice)
//	gen_ai.client.token.usage             1 4 16 64 256 1024 4096 16384 65536 262144 1048576 4194304 16777216 67108864
//	                                      (the conventions' advice)
//	recourse.client.retry.delay           0 0.005 0.01 0.025 0.05 0.1 0.25 0.5 1 2.5 5 10 15 30 60 120 300
//	                                      (a zero delay in its own bucket; the default backoff from 100 ms
//	                                      to its 30 s ceiling; long Retry-After values under a raised ceiling)
//	recourse.client.time_to_first_output  0.001 0.005 0.01 0.02 0.04 0.06 0.08 0.1 0.25 0.5 0.75 1 2.5 5 7.5 10 20 40 80
//	                                      (the conventions' advice for gen_ai.server.time_to_first_token,
//	                                      extended to 80 s for admission waits, backoff and resends)
//
// A view of the SDK can replace them.
//
// # Propagation
//
// By default the layer sends nothing: no traceparent or other header is
// added, so every attempt stays byte-identical to what the caller built
// and a provider learns nothing about the caller's traces.
// WithPropagation(p) opts in: the layer clones the request and injects the
// logical span's context with p once, before the retry layer copies the
// headers, so every attempt of one completion carries the same traceparent
// (naming the logical span, not the attempt span). The trade-off: a
// provider or proxy that records traces can join the attempts to the
// caller's trace, but the header is an extra identifier sent to the
// provider, it cannot tell the attempts apart, and the logical span has to
// start before the model is known, so a sampler sees the name "chat"
// (renamed to "chat {model}" at the first event) without the gen_ai
// attributes.
//
// Without a recovery policy (chain.WithoutRecovery, or a nil per-call
// policy) the retry layer emits no events; the layer then records only the
// logical span, its gen_ai.client.operation.duration (without provider and
// model) and, when the span has a recourse.outcome, its
// recourse.client.outcomes.
package otelbridge
