package codec

import "time"

// Counts are semantic byte and fragment counters (R13.2). Byte counts are
// UTF-8 bytes of decoded strings: "é🙂" counts 6.
type Counts struct {
	// ReasoningBytes is the number of UTF-8 bytes of decoded reasoning text.
	ReasoningBytes int64 `json:"reasoning_bytes"`
	// ContentBytes is the number of UTF-8 bytes of decoded assistant
	// content.
	ContentBytes int64 `json:"content_bytes"`
	// ToolFragments is the number of streamed tool-call fragments.
	ToolFragments int64 `json:"tool_fragments"`
	// CompletedToolCalls is the number of completed tool calls: those of an
	// ordinary body, or of a stream's accepted terminal frame.
	CompletedToolCalls int64 `json:"completed_tool_calls"`
}

// Any reports whether any semantic evidence was counted.
func (c Counts) Any() bool {
	return c.ReasoningBytes > 0 || c.ContentBytes > 0 || c.ToolFragments > 0 || c.CompletedToolCalls > 0
}

// Add returns the sum of c and d.
func (c Counts) Add(d Counts) Counts {
	return Counts{c.ReasoningBytes + d.ReasoningBytes, c.ContentBytes + d.ContentBytes, c.ToolFragments + d.ToolFragments, c.CompletedToolCalls + d.CompletedToolCalls}
}

// Metrics are the numeric durations and token counts of an Ollama done frame
// (R13.6). Durations are as reported (nanoseconds on the wire).
type Metrics struct {
	// TotalDuration is Ollama's total_duration: the time spent on the whole
	// request, model load included. Like every field, it is zero when
	// Ollama left it out.
	TotalDuration time.Duration `json:"total_duration_ns"`
	// LoadDuration is Ollama's load_duration: the time spent loading the
	// model.
	LoadDuration time.Duration `json:"load_duration_ns"`
	// PromptEvalCount is Ollama's prompt_eval_count: the number of prompt
	// tokens evaluated.
	PromptEvalCount int `json:"prompt_eval_count"`
	// PromptEvalDuration is Ollama's prompt_eval_duration: the time spent
	// evaluating the prompt.
	PromptEvalDuration time.Duration `json:"prompt_eval_duration_ns"`
	// EvalCount is Ollama's eval_count: the number of tokens generated.
	EvalCount int `json:"eval_count"`
	// EvalDuration is Ollama's eval_duration: the time spent generating
	// them.
	EvalDuration time.Duration `json:"eval_duration_ns"`
}
