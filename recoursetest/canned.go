package recoursetest

import "github.com/recourse-dev/recourse/internal/scripted"

// Values used by the canned provider bodies. They are spelled out here (not
// taken from the implementation) so that godoc shows them; a test keeps them
// equal to what the bodies contain.
const (
	// OpenAIModel is the model name in the canned OpenAI bodies.
	OpenAIModel = "gpt-4o-mini-2024-07-18"
	// OpenAIID is the completion id in the canned OpenAI bodies.
	OpenAIID = "chatcmpl-1"
	// OllamaModel is the model name in the canned Ollama bodies.
	OllamaModel = "llama3.2"
	// StreamDone is the terminating Server-Sent Event of an OpenAI stream,
	// the last element of OpenAIStream.
	StreamDone = "data: [DONE]\n\n"
)

// OpenAIChat returns a non-streaming OpenAI chat.completion body with id
// OpenAIID, model OpenAIModel, one assistant choice holding content with
// finish_reason "stop", and usage 12 prompt + 7 completion = 19 total
// tokens. Play it with JSON(200, OpenAIChat(content)).
func OpenAIChat(content string) string {
	return scripted.OpenAIChat(content)
}

// OpenAIError returns an OpenAI error body
// {"error":{"message":message,"type":typ,"param":null,"code":code}}; an
// empty code is encoded as null. Play it with JSON and the error's status,
// for example JSON(503, OpenAIError("server_error", "", "overloaded")).
func OpenAIError(typ, code, message string) string {
	return scripted.OpenAIError(typ, code, message)
}

// OpenAIStream returns the Server-Sent Events of a streamed OpenAI chat
// completion, each a whole "data: ...\n\n" event: a chunk carrying the
// assistant role, one content delta chunk per element of content, a chunk
// with finish_reason "stop", a usage chunk (empty choices, usage 12 + 7 = 19
// tokens, as sent with stream_options.include_usage) and StreamDone. Play
// it with SSE(OpenAIStream(content...)...).
func OpenAIStream(content ...string) []string {
	return scripted.OpenAIStream(content...)
}

// OllamaChat returns a non-streaming Ollama /api/chat body with model
// OllamaModel: the assistant message holding content, done true,
// done_reason "stop", durations in nanoseconds, prompt_eval_count 12 and
// eval_count 7. Play it with JSON(200, OllamaChat(content)).
func OllamaChat(content string) string {
	return scripted.OllamaChat(content)
}

// OllamaError returns an Ollama error body {"error":message}, the shape
// Ollama sends with a 4xx or 5xx status (Ollama has no error codes). Play
// it with JSON and the error's status, for example
// JSON(503, OllamaError("server busy")).
func OllamaError(message string) string {
	return scripted.OllamaError(message)
}

// OllamaStream returns the NDJSON lines of a streamed Ollama /api/chat
// answer, each ending with "\n": one done:false line per element of
// content, then a final done:true line with an empty message content,
// done_reason "stop" and the metrics of OllamaChat. Play it with
// NDJSON(OllamaStream(content...)...).
func OllamaStream(content ...string) []string {
	return scripted.OllamaStream(content...)
}
