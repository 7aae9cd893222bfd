package recoursetest

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
)

// Values shared by the canned provider bodies.
const (
	// OpenAIModel is the model name used by the canned OpenAI bodies.
	OpenAIModel = "gpt-4o-mini-2024-07-18"
	// OpenAIID is the completion id used by the canned OpenAI bodies.
	OpenAIID = "chatcmpl-1"
	// OllamaModel is the model name used by the canned Ollama bodies.
	OllamaModel = "llama3.2"
	// StreamDone is the terminating Server-Sent Event of an OpenAI stream.
	StreamDone = "data: [DONE]\n\n"
)

const (
	openAICreated     = 1700000000
	openAIFingerprint = "fp_44709d6fcb"
	ollamaCreatedAt   = "2024-01-01T00:00:00.000000Z"
)

type openAIUsage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	TotalTokens      int `json:"total_tokens"`
}

var cannedUsage = openAIUsage{PromptTokens: 12, CompletionTokens: 7, TotalTokens: 19}

type openAIMessage struct {
	Role    string  `json:"role"`
	Content string  `json:"content"`
	Refusal *string `json:"refusal"`
}

type openAIChoice struct {
	Index        int           `json:"index"`
	Message      openAIMessage `json:"message"`
	Logprobs     *struct{}     `json:"logprobs"`
	FinishReason string        `json:"finish_reason"`
}

type openAICompletion struct {
	ID                string         `json:"id"`
	Object            string         `json:"object"`
	Created           int64          `json:"created"`
	Model             string         `json:"model"`
	Choices           []openAIChoice `json:"choices"`
	Usage             openAIUsage    `json:"usage"`
	SystemFingerprint string         `json:"system_fingerprint"`
}

type openAIDelta struct {
	Role    string  `json:"role,omitempty"`
	Content *string `json:"content,omitempty"`
}

type openAIChunkChoice struct {
	Index        int         `json:"index"`
	Delta        openAIDelta `json:"delta"`
	Logprobs     *struct{}   `json:"logprobs"`
	FinishReason *string     `json:"finish_reason"`
}

type openAIChunk struct {
	ID                string              `json:"id"`
	Object            string              `json:"object"`
	Created           int64               `json:"created"`
	Model             string              `json:"model"`
	SystemFingerprint string              `json:"system_fingerprint"`
	Choices           []openAIChunkChoice `json:"choices"`
	Usage             *openAIUsage        `json:"usage"`
}

type openAIErrorBody struct {
	Error struct {
		Message string  `json:"message"`
		Type    string  `json:"type"`
		Param   *string `json:"param"`
		Code    *string `json:"code"`
	} `json:"error"`
}

type ollamaErrorBody struct {
	Error string `json:"error"`
}

type ollamaMessage struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

type ollamaChunk struct {
	Model              string        `json:"model"`
	CreatedAt          string        `json:"created_at"`
	Message            ollamaMessage `json:"message"`
	DoneReason         string        `json:"done_reason,omitempty"`
	Done               bool          `json:"done"`
	TotalDuration      int64         `json:"total_duration,omitempty"`
	LoadDuration       int64         `json:"load_duration,omitempty"`
	PromptEvalCount    int           `json:"prompt_eval_count,omitempty"`
	PromptEvalDuration int64         `json:"prompt_eval_duration,omitempty"`
	EvalCount          int           `json:"eval_count,omitempty"`
	EvalDuration       int64         `json:"eval_duration,omitempty"`
}

// marshal encodes v as compact JSON without HTML escaping, like the providers
// do. It panics on error, which cannot happen for the types above.
func marshal(v any) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		panic("recoursetest: " + err.Error())
	}
	return string(bytes.TrimSuffix(b.Bytes(), []byte("\n")))
}

// OpenAIChat returns a non-streaming OpenAI chat.completion body with id
// "chatcmpl-1", model "gpt-4o-mini-2024-07-18", one assistant choice holding
// content with finish_reason "stop", and usage 12 prompt + 7 completion = 19
// total tokens.
func OpenAIChat(content string) string {
	return marshal(openAICompletion{
		ID:      OpenAIID,
		Object:  "chat.completion",
		Created: openAICreated,
		Model:   OpenAIModel,
		Choices: []openAIChoice{{
			Message:      openAIMessage{Role: "assistant", Content: content},
			FinishReason: "stop",
		}},
		Usage:             cannedUsage,
		SystemFingerprint: openAIFingerprint,
	})
}

// OpenAIError returns an OpenAI error body
// {"error":{"message":message,"type":typ,"param":null,"code":code}}; an empty
// code is encoded as null.
func OpenAIError(typ, code, message string) string {
	var e openAIErrorBody
	e.Error.Message = message
	e.Error.Type = typ
	if code != "" {
		e.Error.Code = &code
	}
	return marshal(e)
}

// OpenAIStream returns the Server-Sent Events of a streamed OpenAI chat
// completion, each a whole "data: ...\n\n" event: a chunk carrying the
// assistant role, one content delta chunk per element of content, a chunk
// with finish_reason "stop", a usage chunk (empty choices, usage 12 + 7 = 19
// tokens, as sent with stream_options.include_usage) and StreamDone. Pass the
// result to SSE.
func OpenAIStream(content ...string) []string {
	chunk := func(choices []openAIChunkChoice, usage *openAIUsage) string {
		return "data: " + marshal(openAIChunk{
			ID:                OpenAIID,
			Object:            "chat.completion.chunk",
			Created:           openAICreated,
			Model:             OpenAIModel,
			SystemFingerprint: openAIFingerprint,
			Choices:           choices,
			Usage:             usage,
		}) + "\n\n"
	}
	empty := ""
	stop := "stop"
	events := []string{chunk([]openAIChunkChoice{{Delta: openAIDelta{Role: "assistant", Content: &empty}}}, nil)}
	for _, c := range content {
		events = append(events, chunk([]openAIChunkChoice{{Delta: openAIDelta{Content: &c}}}, nil))
	}
	usage := cannedUsage
	events = append(events,
		chunk([]openAIChunkChoice{{FinishReason: &stop}}, nil),
		chunk([]openAIChunkChoice{}, &usage),
		StreamDone,
	)
	return events
}

// OpenAIStreamFinish returns the events of OpenAIStream with finish
// instead of "stop" as the finish reason ("length" for a client's
// max_tokens, "content_filter"), the usage chunk and StreamDone after it,
// as the provider ends a completion cut short by its own limit.
func OpenAIStreamFinish(finish string, content ...string) []string {
	events := OpenAIStream(content...)
	i := len(events) - 3
	events[i] = strings.Replace(events[i], `"finish_reason":"stop"`, `"finish_reason":`+strconv.Quote(finish), 1)
	return events
}

// ollamaFinal returns the final done:true /api/chat object for content.
func ollamaFinal(content string) ollamaChunk {
	return ollamaChunk{
		Model:              OllamaModel,
		CreatedAt:          ollamaCreatedAt,
		Message:            ollamaMessage{Role: "assistant", Content: content},
		DoneReason:         "stop",
		Done:               true,
		TotalDuration:      512345678,
		LoadDuration:       12345678,
		PromptEvalCount:    12,
		PromptEvalDuration: 98765432,
		EvalCount:          7,
		EvalDuration:       345678901,
	}
}

// OllamaChat returns a non-streaming Ollama /api/chat body: the assistant
// message holding content, done true, done_reason "stop", durations in
// nanoseconds, prompt_eval_count 12 and eval_count 7.
func OllamaChat(content string) string {
	return marshal(ollamaFinal(content))
}

// OllamaError returns an Ollama error body {"error":message}, the shape
// Ollama sends with a 4xx or 5xx status (Ollama has no error codes).
func OllamaError(message string) string {
	return marshal(ollamaErrorBody{Error: message})
}

// OllamaStream returns the NDJSON lines of a streamed Ollama /api/chat
// answer, each ending with "\n": one done:false line per element of content,
// then a final done:true line with an empty message content, done_reason
// "stop" and the metrics of OllamaChat. Pass the result to NDJSON.
func OllamaStream(content ...string) []string {
	lines := make([]string, 0, len(content)+1)
	for _, c := range content {
		lines = append(lines, marshal(ollamaChunk{
			Model:     OllamaModel,
			CreatedAt: ollamaCreatedAt,
			Message:   ollamaMessage{Role: "assistant", Content: c},
		})+"\n")
	}
	return append(lines, marshal(ollamaFinal(""))+"\n")
}
