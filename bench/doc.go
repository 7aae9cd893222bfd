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
// Allocation counts come from runtime.ReadMemStats and CPU time from
// getrusage, so both include the in-process loopback server; it does the
// same work for every side, so differences are recourse's own. The raw
// sides of the native-API comparisons encode their request with
// json.Marshal each call, as recourse encodes its chat.Request.
//
// The benchmarks:
//
//   - BenchmarkDropIn: a small JSON chat completion POST through a plain
//     http.Client versus http.Client{Transport: chain.Default(openai.New())}.
//   - BenchmarkStream1000: a 1000-chunk OpenAI SSE stream through the native
//     Client.Stream versus raw net/http splitting lines (raw-lines) and
//     raw net/http plus json.Unmarshal of every chunk (raw-json).
//   - BenchmarkTimeToFirstChunk: request to first content chunk over a
//     server that flushes it and then holds the rest until the client has it
//     (ns/op is that time; the ratio benchmark adds diff-ns/op, recourse
//     minus raw; its CPU ratio covers the whole, short, stream).
//   - BenchmarkKeepaliveFrame and BenchmarkContentFrame: allocations per
//     keepalive and per content frame through the whole chain (one stream of
//     b.N frames; the cost of the same stream without them, reported as
//     allocs/stream, is subtracted).
//
// The openai-go comparison lives in the examples module
// (examples/bench-openai), which may depend on openai-go.
package bench
