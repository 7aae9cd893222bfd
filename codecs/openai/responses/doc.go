// Package responses is the recourse codec for OpenAI's Responses API,
// POST /v1/responses, the endpoint OpenAI recommends for new work (the
// chat completions codec is package codecs/openai).
//
// A [Codec] translates a provider-neutral [chat.Request] to a Responses API
// request body, decodes a response object to a [chat.Completion], and tells
// the recovery layers what a body means: the operation of a request, the
// provider error code and request ID of a failed response, and the semantic
// evidence in a body or stream that may have been cut off in transfer. A
// Codec is immutable after [New] and safe for concurrent use. By default it
// sends foreground requests only (no "background", no "store", no
// "previous_response_id"): the whole conversation travels in every request,
// as with chat completions, so a resend needs nothing stored at the
// provider. With [Background] streamed requests are background responses
// (see Background responses below).
//
// # Requests
//
// Encode writes the fields in a fixed order, so the same request always
// encodes to the same bytes. Messages become input items, in order:
//
//   - A system, user or assistant message is a message item
//     {"type":"message","role":…,"content":"text"}. Decision: a system
//     message stays an input message with role "system" rather than
//     becoming "instructions", so that several system messages, and their
//     place in the history, are kept exactly.
//   - A user message with images has content parts: an input_text part
//     (left out when the text is empty) followed by one input_image part
//     per image, a base64 data URL ("image/png" when the MIME type is
//     empty).
//   - An assistant message's tool calls follow it as function_call items
//     with their call_id (the chat.ToolCall ID, required), name and
//     arguments text; an assistant message with tool calls and no text has
//     no message item. Arguments that are a JSON string are sent as that
//     string's text (how Decode keeps arguments that were not valid JSON),
//     empty arguments as "{}". Reasoning is never sent back, and an
//     assistant message that holds only reasoning is left out: it would be
//     an empty assistant turn.
//   - A tool message is a function_call_output item with its call_id (the
//     ToolCallID, required) and its content as output. ToolName has no
//     field and is not sent.
//
// Tools are flat function tools {"type":"function","name","description",
// "parameters","strict":false}: the Responses API makes a function tool
// strict unless told otherwise, and strict schemas refuse most ordinary
// ones, so strict is always sent false, as chat completions default. A
// Schema is text.format {"type":"json_schema","name","schema","strict"}
// (name "response" when empty), JSONMode is text.format json_object, and
// both together are an error. MaxTokens is max_output_tokens.
//
// As with chat completions (R14.1), the model family decides the sampling
// controls: for a model that [openai.IsReasoningModel] reports (override it
// with [WithReasoningModel]) ReasoningEffort ("low", "medium" or "high") is
// reasoning.effort and Temperature or TopP are an [*codec.UnsupportedError];
// for any other model Temperature and TopP are sent and ReasoningEffort is
// an [*codec.UnsupportedError]. The endpoint has no seed, stop sequences,
// top_k, context length, think or keep_alive: Seed, Stop, TopK,
// ContextLength, Think and KeepAlive are an [*codec.UnsupportedError],
// never dropped silently.
//
// # Responses
//
// Decode reads a response object. Its output items become one assistant
// message: the output_text parts of message items, then their refusal
// parts, are the Content (in output order), the summary_text parts and
// reasoning_text content parts of reasoning items are the Reasoning, and
// each function_call item is a tool call whose ID is its call_id (the ID a
// tool result must answer, not the item id). Output items of hosted tools
// are not decoded. Arguments that are valid JSON are kept as their JSON
// text, others as a JSON string holding the text. The model, the response
// ID and the usage (input_tokens, output_tokens) are kept.
//
// The status decides the finish reason (R19.5). "completed" finishes
// "tool_calls" when the output calls a tool, "refusal" when the model
// refused (Decision: a refusal is delivered as content, so a caller
// shows it, and marked by this finish reason, since chat.Message has no
// refusal field), and "stop" otherwise. "incomplete" finishes with
// incomplete_details.reason mapped: max_output_tokens is "length",
// content_filter stays "content_filter", any other reason is kept as sent,
// and none is "incomplete". "failed" is a [*codec.ProviderError] with the
// code and message of its error, as is "cancelled" (code "cancelled") and
// any body whose "error" is not null. "queued", "in_progress" and an
// unknown status are a [*codec.ProtocolError]: a foreground request is
// answered when it is finished; the exception is the answer to a
// background create ("background":true in the response), whose queued or
// in_progress object is its acceptance (R19.14). A body with no status but
// with output (some compatible servers) reads as completed.
//
// # Streams
//
// For a streaming request [Codec.NewObserver] returns a [*StreamDecoder] of
// the SSE event stream (R19.3): every event is one frame. Output events
// carry semantic evidence the moment their event is complete:
// response.output_text.delta and response.refusal.delta are content,
// response.reasoning_text.delta and response.reasoning_summary_text.delta
// are reasoning, a response.output_item.added whose item is a function_call
// is the first tool fragment of a call (its output_index, call_id and
// name), and response.function_call_arguments.delta is a fragment carrying
// a piece of its arguments. Lifecycle events — response.created, .queued,
// .in_progress, a message's or reasoning item's output_item.added,
// content_part.added and the …done events — are frames without evidence,
// so a cut after them alone is resent; SSE comments are keepalives. To fail
// closed, an event type the decoder does not know that carries a delta is
// observed as content it does not deliver, and an output item of a hosted
// tool as a tool fragment.
//
// response.completed is the accepted end: a Done frame whose Completion
// holds the streamed text (empty with codec.RequestInfo.DropText), the tool
// calls assembled in output order (the arguments of a call's
// output_item.done win over its deltas), the model, ID, usage and the
// finish reason a completed body would have. response.incomplete is
// terminal at once with an [*codec.IncompleteError]
// (R13.3) whose FinishReason is mapped as above, except for a drop-in
// client, for which it is the provider's answer: the Done frame
// (codec.RequestInfo.ProviderFinish). response.failed and an
// error event (event: error, or data whose type is "error") are an in-band
// [*codec.ProviderError], never resent (R4.7). A stream that reaches EOF
// without one of these fails closed with [ErrIncomplete], and a
// "data: [DONE]" before them is a [*codec.ProtocolError].
//
// The decoder keeps what a background resume needs:
// [StreamDecoder.ResponseID], the ID of the response from
// response.created, [StreamDecoder.DeliveredSequence], the
// sequence_number of the last frame handed over, and
// [StreamDecoder.FrameSequence], that of the frame Next returned last.
//
// # Background responses
//
// With [Background], a streamed request is sent with "background":true and
// "store":true (R19.9); a drop-in body that says "background":true is
// treated the same. The Codec is a [codec.Resumer]: once the stream gave
// the response's ID, the engine answers a cut, a stall or a transport
// failure with a resume read, GET /v1/responses/{id}?stream=true&
// starting_after={cursor}, whose decoder drops the events the consumer
// already had and continues the text and tool calls, instead of sending
// the request again (R19.9, R19.10, R19.13). A failure before the ID is
// known is ambiguous unless it is a status answer (R19.11). When the caller
// cancels, the engine sends POST /v1/responses/{id}/cancel, best effort,
// unless the codec was built with [KeepRunning] (R19.12).
package responses
