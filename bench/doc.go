// Package bench holds recourse's benchmarks (run them with make bench).
//
// Every comparison is measured in one run against a baseline in the same
// process, on loopback servers (127.0.0.1), and reported as a ratio; no
// benchmark asserts a number. A comparison benchmark has a leaf
// sub-benchmark per side (raw, recourse, …) for benchstat and one
// "ratio" sub-benchmark that runs all sides interleaved, block by block and
// in rotating order, so that other work on the machine slows every side
// alike. A ratio sub-benchmark reports:
//
//   - ns/op, B/op and allocs/op: the recourse side;
//   - <baseline>-ns/op, <baseline>-B/op, <baseline>-allocs/op: a baseline;
//   - x-time-vs-<baseline>: the median over blocks of recourse time divided
//     by baseline time (1.00 means no difference);
//   - x-cpu-vs-<baseline>: the same for the process's CPU time (user and
//     system, all goroutines), steadier than wall time on a busy machine;
//   - new-conns/op and <baseline>-new-conns/op: connections the server
//     accepted per call (0 when the client reuses its connection);
//   - extra-allocs/op and extra-B/op (or extra-allocs-vs-<baseline>/op with
//     several baselines): recourse minus baseline, per call.
//
// A "floor" sub-benchmark runs three sides interleaved: recourse, the
// baseline and a floor side that does, with a plain client (or the chain
// without the layer) and the codec's exported pieces, only the work the
// contract's rules require on the success path and nothing else
// (floor_test.go says which rule requires each piece). Besides the ratio
// figures against both (x-time-vs-floor, x-cpu-vs-floor,
// extra-allocs-vs-floor/op, …) it reports the floor against the baseline:
// x-time-floor-vs-<baseline>, x-cpu-floor-vs-<baseline>,
// floor-extra-allocs/op and floor-extra-B/op. A target below its floor
// cannot be met without breaking a rule.
//
// Allocation counts come from runtime.ReadMemStats and CPU time from
// getrusage, so both include the in-process loopback server; it does the
// same work for every side, so differences are recourse's own. The raw
// sides of the native-API comparisons encode their request with
// json.Marshal each call, as recourse encodes its chat.Request.
//
// The benchmarks, and what each ratio compares:
//
//   - BenchmarkDropIn: a small JSON chat completion POST through a plain
//     http.Client (raw) versus http.Client{Transport:
//     chain.Default(openai.New())} (recourse): the drop-in overhead in time,
//     allocations and bytes per call. floor: the same POST through a plain
//     client whose transport takes the IDs, the header and body copies and
//     the request's Describe, the connection trace, the observer and the
//     judged full-body buffer (R2.3, R4.6, R9.2, R10.1, R13.2).
//   - BenchmarkStream1000: a 1000-chunk OpenAI SSE stream through the native
//     Client.Stream versus raw net/http splitting lines (raw-lines, the
//     floor: it parses nothing) and raw net/http plus json.Unmarshal of
//     every chunk (raw-json, a client that uses the stream).
//   - BenchmarkTimeToFirstChunk: request to first content chunk over a
//     server that flushes it and then holds the rest until the client has it
//     (ns/op is that time; the ratio benchmark adds diff-ns/op, recourse
//     minus raw; its CPU ratio covers the whole, short, stream), native
//     Client.Stream versus raw net/http plus json.Unmarshal. floor: the raw
//     client plus the IDs, the connection trace and the codec's stream
//     decoder in place of json.Unmarshal (R9.2, R10.1, R13.1, R13.2);
//     it adds diff-vs-floor-ns/op.
//   - BenchmarkKeepaliveFrame and BenchmarkContentFrame: allocations per
//     keepalive and per content frame through the whole chain (one stream of
//     b.N frames; the cost of the same stream without them, reported as
//     allocs/stream, is subtracted). No baseline: the figures are absolute.
//   - BenchmarkStreamConns: new connections per native stream
//     (new-conns/op) over a server that flushes every event, so the end of
//     the chunked body arrives after [DONE], versus a raw client that reads
//     every stream to HTTP EOF (raw-new-conns/op).
//   - BenchmarkUnary10MB: a completion with 10 MiB of content. native: the
//     native Client.Complete versus raw io.ReadAll plus json.Unmarshal
//     (raw-json); dropin: the default chain as an http.Client's Transport
//     versus a plain http.Client, both reading the body with io.ReadAll
//     (raw). Each reports B/body-byte and <baseline>-B/body-byte, the bytes
//     allocated per byte of the response body.
//   - BenchmarkDropInStream1000: the 1000-chunk stream of
//     BenchmarkStream1000 read line by line through the default chain as an
//     http.Client's Transport versus through a plain http.Client reading the
//     same SSE (ratio: raw, which parses nothing, the floor; json/ratio: both
//     clients also decode every chunk with encoding/json and keep its text,
//     raw-json, as an SDK over the transport does anyway; json/floor: the
//     same through a plain client whose transport also does the drop-in
//     floor, each event framed and decoded by the codec's stream decoder
//     and the caller reading whole, judged frames, R13.1, R13.2).
//   - BenchmarkDropInStreamHeld: the memory a long drop-in stream holds: the
//     live heap after a GC at the [DONE] line of a 10,000- and a
//     100,000-chunk stream, minus the live heap before the call, through the
//     default chain (held-B/op) versus a plain http.Client (raw-held-B/op),
//     medians over b.N streams of each, sides alternating;
//     extra-held-B/op is the difference, which stays flat from 10,000 to
//     100,000 chunks when a stream costs O(1) memory.
//   - BenchmarkHistory: a completion whose request carries 10, 100 or 1000
//     messages, through the native Client.Complete versus a raw client that
//     encodes with json.Marshal and decodes with json.Unmarshal; it also
//     reports ns/msg, extra-ns/msg and extra-B/msg (the cost per message of
//     the history).
//   - BenchmarkConcurrent: 1, 8 or 64 drop-in calls at once on one chain
//     versus the same batch on one plain http.Client over
//     http.DefaultTransport's pool (raw: two idle connections per host, so
//     a wide batch dials) and on one over a pool as wide as the sender's
//     default (pooled: 64 idle connections per host, the fair baseline for
//     time). One op is the batch; ns/call, new-conns/call and their raw-
//     and pooled- counterparts divide it by the batch.
//   - BenchmarkQuotaCall: a successful native completion through the
//     default chain plus the retry quota (layers/quota, in-process store)
//     versus the same chain without it; diff-ns/op is the median per-call
//     difference, quota minus none.
//   - BenchmarkResponsesStream1000: the text of BenchmarkStream1000
//     streamed through the native Client.Stream over the default chain with
//     the Responses API codec (codecs/openai/responses) versus with the
//     chat-completions codec (chat), each from its own endpoint's SSE.
//   - BenchmarkStall: a native completion (unary) and a 1000-chunk native
//     stream (stream1000) through the default chain plus a stall layer with
//     all three limits on (none fires) versus the default chain alone;
//     diff-ns/op is the median per-call difference and, for the stream,
//     extra-allocs/frame the extra allocations per chunk. unary/floor: the
//     default chain plus a per-attempt layer that keeps its request and
//     does only what a limit that can fire needs (the attempt's
//     cancellable context, the request copy carrying it, one timer, R7.2).
//   - BenchmarkQuotaStage: the quota's own work on the success path without
//     the network (placing its gate in the call, Bind, Deposit and the
//     cooldown horizon's local read) versus the same round trip without the
//     layer.
//   - BenchmarkFallback: a drop-in completion (unary) and a 1000-chunk
//     drop-in stream (stream1000) whose first target answers, through the
//     default chain plus the fallback layer (layers/fallback, one target of
//     another model, never used) as an http.Client's Transport versus the
//     default chain alone; diff-ns/op is the median per-call difference,
//     fallback minus none, and extra-allocs/op the layer's allocations.
//     unary/floor: the default chain under a RoundTripper that only places
//     a *layer.Call in the request's context and reads its outcome
//     (R20.2, R20.5).
//   - BenchmarkGeminiStreamDecoder: the Gemini codec's stream decoder over
//     a 1000-frame streamGenerateContent?alt=sse answer versus the OpenAI
//     chat codec's over the 1000-chunk chat stream of the same text, in
//     memory (no network), one Write per event; ns/frame, allocs/frame and
//     their chat- counterparts divide an op by its frames.
//
// The proxy's figures are in package proxy: BenchmarkProxyVsReverseProxy
// (recourse-proxy versus httputil.ReverseProxy in front of the same
// provider, the load generator in a separate OS process; per frame, per
// unary request, allocations per frame) and BenchmarkProxyStreams (N
// concurrent streams through recourse-proxy versus direct connections, all
// in one process; first byte and per frame). The openai-go comparison lives in the examples module
// (examples/bench-openai), which may depend on openai-go.
package bench
