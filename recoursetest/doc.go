// Package recoursetest provides a scripted loopback LLM provider for tests
// and examples of code that uses recourse.
//
// A Server listens on 127.0.0.1, answers the i-th request it receives with
// the i-th Step of its script and records every request, so a test can count
// the POSTs that reached the wire and look at their bodies:
//
//	srv := recoursetest.NewServer(
//		recoursetest.JSON(503, recoursetest.OpenAIError("server_error", "", "busy")),
//		recoursetest.JSON(200, recoursetest.OpenAIChat("hello")),
//	)
//	defer srv.Close()
//	cl, _ := client.New(srv.URL, ch)
//	// ... call cl; then srv.Count() is 2.
//
// NewMemoryServer runs the same script on an in-memory network instead of
// a TCP port, reached through Server.Transport, so that a test inside a
// testing/synctest bubble waits out backoffs, Retry-After hints and stall
// limits on the bubble's clock: nothing sleeps, and no policy clock needs
// faking. ServeMemory puts a handler of the test's own (a proxy in front of
// a memory server, a provider fed by hand) on the same network.
//
// The steps reproduce the answers and failures that matter when retrying LLM
// chat completion calls:
//
//   - a JSON answer with any status and headers (a 429 with Retry-After, a
//     503, a 400), see JSON;
//   - a Server-Sent Events stream (OpenAI) or an NDJSON stream (Ollama),
//     written and flushed chunk by chunk, see SSE and NDJSON;
//   - a body cut off after exactly n bytes, see Step.Cut;
//   - a connection reset before any response byte, see Reset;
//   - a redirect, which a recourse chain never follows, see Redirect and
//     Target;
//   - a response held open until the client goes away, see Step.Held and
//     Server.Left, and a chunk delayed until the test releases it, see
//     Step.Gated;
//   - a script that grows while it plays (Server.Push), for example to
//     drive an interactive demo, and connections closed after every
//     response (Server.CloseIdleAfterEach);
//   - OpenAI's Responses API in background mode: a server-side event log
//     per response id that later requests read again from a cursor, poll
//     or cancel, see ResponsesBackground, ResponsesResume,
//     ResponsesRetrieve, ResponsesCancel and Server.Cancelled, and a stream
//     cut after a number of events, see Step.CutEvents.
//
// OpenAIChat, OpenAIError, OpenAIStream, OllamaChat, OllamaError,
// OllamaStream, ResponsesEvents and ResponsesJSON return realistic provider
// bodies to play in those steps.
//
// The package is meant for tests: servers listen on 127.0.0.1 only and keep
// every request they receive in memory. It is recourse's own scripted
// provider too: recourse's tests, benchmarks and demo use it, and
// internal/rigtest assembles a chain on top of it.
package recoursetest
