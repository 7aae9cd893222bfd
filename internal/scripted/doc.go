// Package scripted provides a scripted loopback HTTP provider for recourse's
// own tests and demo.
//
// A Server plays back a fixed script of Steps, one per incoming request, and
// records every request it receives byte for byte. Steps can reproduce the
// failure modes that matter when retrying LLM chat completion calls against
// OpenAI-compatible (/v1/chat/completions), Ollama (/api/chat) and oMLX
// endpoints:
//
//   - plain JSON answers with any status and headers (429 with Retry-After,
//     500, 400, ...), see JSON;
//   - Server-Sent Events and NDJSON streams written and flushed chunk by
//     chunk, see SSE and NDJSON;
//   - a body cut off abruptly after exactly N bytes, see Step.Cut;
//   - a connection reset before any response byte, see Reset;
//   - a response held open until the client goes away, see Step.Held and
//     Server.Left;
//   - a chunk delayed until the test releases it, see Step.Gated;
//   - redirects that a safe client must not follow, see Redirect and Target;
//   - OpenAI's Responses API, foreground and background: a background
//     create keeps a server-side event log per response id
//     (ResponsesBackground) that later requests read again from a cursor
//     (ResponsesResume, GET /v1/responses/{id}?stream=true&starting_after=N),
//     poll (ResponsesRetrieve) or cancel (ResponsesCancel), and any of these
//     streams can be cut after a number of events (Step.CutEvents).
//
// The canned bodies (OpenAIChat, OpenAIStream, OpenAIError, OllamaChat,
// OllamaStream, OllamaError, ResponsesEvents, ResponsesJSON) are realistic provider payloads built with
// encoding/json.
//
// Servers listen on 127.0.0.1 only. The package is internal and intended for
// recourse's own tests and the demo; it is not part of recourse's public API.
// Package recoursetest exposes a subset of it to users (and to the Examples)
// through its own exported types.
package scripted
