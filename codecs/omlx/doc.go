// Package omlx is the recourse codec for oMLX's OpenAI-compatible chat
// endpoint, POST /v1/chat/completions (https://github.com/jundot/omlx).
//
// oMLX speaks the OpenAI Chat Completions shapes with a few differences that
// this codec keeps apart from the OpenAI codec:
//
//   - The length cap is sent as "max_tokens", never "max_completion_tokens",
//     which compatible servers silently ignore.
//   - "top_k" and "reasoning_effort" ("low", "medium" or "high") are sent as
//     top-level fields.
//   - Seed, ContextLength, Think and KeepAlive are not supported: Encode
//     returns an [*codec.UnsupportedError] naming the control instead of
//     dropping it.
//   - Reasoning comes back as "reasoning_content" (oMLX) or "reasoning"
//     (other compatible servers); both are decoded and observed.
//   - An ordinary reply may start with whitespace: oMLX answers 200 at once
//     and sends a space every few seconds until the JSON is ready. Decode
//     accepts leading and trailing whitespace, and the Observer counts
//     nothing for it, since it is not semantic output.
//   - A reply is decoded by the OpenAI codec's decoder, in oMLX's reading:
//     keys match exactly after unescaping, as the Observer counts them; an
//     "error" that is neither an object nor a string is malformed; a tool
//     call must name its function and carry arguments that are a JSON
//     object in a string (absent or blank arguments are {}).
//
// # Request encoding
//
// The body is {"model","messages","stream","stream_options","temperature",
// "top_p","top_k","max_tokens","stop","tools","response_format",
// "reasoning_effort"} in that order, with absent controls left out; "stream"
// is always sent, and a streaming request asks for usage with
// "stream_options":{"include_usage":true}. Images of user messages become
// content parts with data URLs; assistant tool calls carry their arguments
// as a JSON string; tool messages carry "tool_call_id" (Message.ToolName has
// no counterpart and is not sent). A schema becomes a "json_schema"
// response_format (named "response" when unnamed) and JSON mode a
// "json_object" one; when both are set the schema wins. Reasoning text of
// earlier assistant messages is never sent back, and an assistant message
// that holds only reasoning is left out (R14.1).
//
// # Legacy timeout
//
// [Codec.LegacyTimeout] is the ordinary-request timeout that applies only
// when recovery is disabled (300 s unless [WithLegacyTimeout] changes it).
// Recovery-enabled calls never apply it (R7.2).
//
// # Streaming
//
// For a streaming request NewObserver returns a codec.StreamDecoder of the
// SSE chat.completion.chunk stream, shared with the OpenAI codec: the
// ": keep-alive" comments oMLX sends before and during a long prefill, and
// {"model":"keepalive"}-style chunks, are keepalives; an error chunk ends
// the stream even when "data: [DONE]" follows it; a finish of "stop" or
// "tool_calls" followed by [DONE] is the accepted end (R13.3, R14.2).
package omlx
