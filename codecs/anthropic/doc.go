// Package anthropic is the codec of Claude's Messages API,
// POST /v1/messages (CONTRACT.md R22).
//
// The codec encodes a chat.Request exactly once (system text blocks,
// messages of text, image, thinking, tool_use and tool_result blocks,
// tools, sampling controls and the required max_tokens), decodes a
// message, and tells the recovery layers what each stream event means:
//
//   - message_start, ping and events the codec does not know carry no
//     output: a stream cut after them is resent;
//   - every content_block_start and content_block_delta is output — a
//     server_tool_use start above all, since the provider has already run
//     and billed that tool —: a stream cut after one ends interrupted and
//     is never resent;
//   - message_stop after a stop reason is the accepted end; a max_tokens
//     or model_context_window_exceeded stop reason is the length finish;
//     EOF without message_stop is an incomplete stream;
//   - an error event is a *codec.ProviderError whose Status is the one its
//     type names (overloaded_error 529, rate_limit_error 429, api_error
//     500): before any content block the engine treats it as that status,
//     so an overload is resent like a 529.
//
// The codec declares the 529 overload status as a fact of the provider
// (codec.Facts.OverloadStatus), eligible under the policy's default
// statuses. Its in-band error frame and error document are Anthropic's
// shapes, so the provider's own SDKs report a failed recovery as an error.
//
// A drop-in client (anthropic-sdk-go, the TypeScript SDK through the
// proxy) keeps its own request bytes: cache_control marks and every field
// the codec does not model are resent byte for byte.
package anthropic
