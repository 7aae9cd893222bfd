// Package ollama is the recourse codec for Ollama's native chat endpoint,
// POST /api/chat.
//
// A [Codec] encodes a provider-neutral [chat.Request] once into the body of
// an /api/chat request, reads an encoded body back ([Codec.Describe]),
// decodes a complete non-streaming reply ([Codec.Decode]) and accounts the
// semantic evidence of a reply as its bytes arrive ([Codec.NewObserver]).
// [DecodeMetrics] reads the durations and token counts of a done object.
//
// # Request encoding
//
// The body is {"model","messages","stream","format","options","tools",
// "think","keep_alive"} in that order, with absent controls left out.
// "stream" is always sent, because Ollama streams when it is absent. Images
// are sent as standard base64 strings without a data: prefix (their MIME
// type is not sent: Ollama detects the format). Tool-call arguments are sent
// as the JSON object they are; a tool call whose arguments are not a JSON
// object cannot be encoded. A schema is sent as the "format" object itself
// (its Name and Strict have no Ollama counterpart; Ollama always constrains
// the output to the schema) and JSON mode as "format":"json"; when both are
// set the schema wins. Sampling controls go into "options" (temperature,
// top_p, top_k, num_ctx, num_predict, stop, seed). The reasoning text of an
// earlier assistant message is sent back as its "thinking", so that a turn
// of reasoning alone (a broker continuation's, R17.3) is not empty; the
// reasoning of other messages is not sent.
//
// Options.ReasoningEffort is not supported: Ollama's "think" levels
// ("low", "medium", "high") are not mapped from it, so Encode returns an
// [*codec.UnsupportedError] instead of dropping it. Use Options.Think.
//
// # Responses
//
// Decode accepts the single object of a "stream":false reply, which must
// carry a message and "done":true. A top-level "error" is a
// [*codec.ProviderError]; Ollama has no error codes, so its Code is empty and
// [Codec.ErrorCode] always returns "". Ollama sends no request ID header, so
// [Codec.RequestID] always returns "".
//
// # Streaming
//
// Describe treats a body without "stream" as streaming, as Ollama does.
// For a streaming request NewObserver returns a codec.StreamDecoder of the
// NDJSON stream: blank lines are keepalives, a line with "error" is an
// in-band provider error (the status stays 200), a done:true line is the
// terminal frame and carries the metrics (R13.3, R13.6): with done_reason
// "stop", or with none (an unknown finish, FinishReason ""), it is the
// accepted end; any other done_reason ("length") ends the stream with an
// incomplete_completion error whose FinishReason names it — for a drop-in
// client a documented one ("length", "load", "unload") is the accepted end
// instead, without tool calls (codec.RequestInfo.ProviderFinish). Ollama sends whole tool calls; they become
// completed calls only at the accepted end (R13.4).
package ollama
