// Package openai is the recourse codec for the OpenAI chat completions
// endpoint, POST /v1/chat/completions.
//
// A [Codec] translates a provider-neutral [chat.Request] to the OpenAI
// request body, decodes a complete response body to a [chat.Completion], and
// tells the recovery layers what a body means: the operation of a request,
// the provider error code and request ID of a failed response, and the
// semantic evidence (content, reasoning and tool calls) in a response body
// that may have been cut off in transfer. A Codec is immutable after [New]
// and safe for concurrent use.
//
// # Requests
//
// Encode writes the fields in a fixed order, so the same request always
// encodes to the same bytes. Messages map as follows:
//
//   - A system message, and a user message without images, has a plain
//     string content.
//   - A user message with images has content parts: a text part (left out
//     when the text is empty) followed by one image_url part per image,
//     whose URL is a base64 data URL ("image/png" when the MIME type is
//     empty).
//   - An assistant message carries its tool calls; its content is left out
//     when it is empty and there are tool calls. Reasoning is never sent
//     back, and an assistant message that holds only reasoning is left
//     out (R14.1), so no empty assistant turn is sent. A tool call's Arguments are sent as the text of the JSON; an
//     Arguments value that is itself a JSON string is sent as that string's
//     text, which is how [Codec.Decode] keeps arguments that were not valid
//     JSON, so decoded history round-trips unchanged. Empty Arguments are
//     sent as "{}".
//   - A tool message has a tool_call_id (required) and a string content.
//     ToolName has no OpenAI field and is not sent.
//
// Images on a message other than a user message, and tool calls on a message
// other than an assistant message, would be lost: they are an error.
//
// OpenAI treats reasoning models differently (R14.1). For a model that
// [IsReasoningModel] reports (override it with [WithReasoningModel]), a
// token cap is sent as max_completion_tokens, ReasoningEffort ("low",
// "medium" or "high") as reasoning_effort, and Temperature or TopP are an
// [*codec.UnsupportedError]. For any other model the cap is sent as
// max_tokens, with temperature, top_p, seed and stop, and ReasoningEffort is
// an [*codec.UnsupportedError]. TopK, ContextLength, Think and KeepAlive are
// never supported. No control is ever dropped silently.
//
// # Responses
//
// Decode reads choices[0] of a complete response. Object keys are matched
// exactly, after JSON unescaping, as the [Codec.NewObserver] observer
// matches them (encoding/json alone would also accept "Content" for
// "content"). Reasoning is read from reasoning_content or, when that is
// absent or empty, from reasoning, the names compatible servers use. A
// legacy function_call becomes one tool call without an ID. Tool-call
// arguments that are valid JSON are kept as their JSON text; arguments that
// are not (a model can produce those, for example when it hits the token
// cap) are kept as a JSON string value holding the text. The refusal field
// is not decoded: [chat.Message] has no place for it.
//
// # Streams
//
// For a streaming request [Codec.NewObserver] returns a codec.StreamDecoder
// of the SSE chat.completion.chunk stream: comments are keepalives,
// content, reasoning and tool-call fragments are counted the moment their
// event is complete, a "data: {"error":…}" event ends the stream, and a
// finish of "stop" or "tool_calls" followed by "data: [DONE]" is the
// accepted end whose Completion carries the assembled tool calls, model and
// usage; "length" ends the stream at once with an incomplete_completion
// error (R13.3), except for a drop-in client, which reads a documented
// finish as the provider sent it, up to its [DONE]
// (codec.RequestInfo.ProviderFinish). Encode asks for usage in streams (stream_options).
package openai
