package recoursetest

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// tricky is content that breaks naive string concatenation into JSON.
const tricky = "He said \"hi\"\n\tand left \\ <b>&</b> — 日本語 🚀 \u2028"

func TestOpenAIChatIsValidJSON(t *testing.T) {
	var got struct {
		ID      string `json:"id"`
		Object  string `json:"object"`
		Model   string `json:"model"`
		Choices []struct {
			Index   int `json:"index"`
			Message struct {
				Role    string `json:"role"`
				Content string `json:"content"`
			} `json:"message"`
			FinishReason string `json:"finish_reason"`
		} `json:"choices"`
		Usage struct {
			PromptTokens     int `json:"prompt_tokens"`
			CompletionTokens int `json:"completion_tokens"`
			TotalTokens      int `json:"total_tokens"`
		} `json:"usage"`
	}
	body := OpenAIChat(tricky)
	require.NoError(t, json.Unmarshal([]byte(body), &got), "unmarshal %q", body)
	require.Equal(t, "chatcmpl-1", got.ID, "id")
	require.Equal(t, "chat.completion", got.Object, "object")
	require.Equal(t, "gpt-4o-mini-2024-07-18", got.Model, "model")
	require.Equal(t, 1, len(got.Choices), "choices")
	require.Equal(t, "assistant", got.Choices[0].Message.Role, "role")
	require.Equal(t, tricky, got.Choices[0].Message.Content, "content")
	require.Equal(t, "stop", got.Choices[0].FinishReason, "finish reason")
	require.Equal(t, [3]int{12, 7, 19}, [3]int{got.Usage.PromptTokens, got.Usage.CompletionTokens, got.Usage.TotalTokens}, "usage")
}

func TestOpenAIErrorIsValidJSON(t *testing.T) {
	var got map[string]map[string]any
	require.NoError(t, json.Unmarshal([]byte(OpenAIError("invalid_request_error", "", tricky)), &got))
	require.Equal(t, map[string]any{"message": tricky, "type": "invalid_request_error", "param": nil, "code": nil}, got["error"], "error with null code")

	require.NoError(t, json.Unmarshal([]byte(OpenAIError("rate_limit_exceeded", "rate_limit_exceeded", "slow down")), &got))
	require.Equal(t, map[string]any{"message": "slow down", "type": "rate_limit_exceeded", "param": nil, "code": "rate_limit_exceeded"}, got["error"], "error with code")
}

func TestOpenAIStreamEvents(t *testing.T) {
	pieces := []string{"Hel", tricky, ""}
	events := OpenAIStream(pieces...)
	require.Equal(t, len(pieces)+4, len(events), "event count")
	require.Equal(t, "data: [DONE]\n\n", events[len(events)-1], "last event")

	type chunk struct {
		ID      string `json:"id"`
		Object  string `json:"object"`
		Model   string `json:"model"`
		Choices []struct {
			Delta struct {
				Role    string  `json:"role"`
				Content *string `json:"content"`
			} `json:"delta"`
			FinishReason *string `json:"finish_reason"`
		} `json:"choices"`
		Usage *struct {
			TotalTokens int `json:"total_tokens"`
		} `json:"usage"`
	}
	var chunks []chunk
	for _, e := range events[:len(events)-1] {
		data, ok := strings.CutPrefix(e, "data: ")
		require.False(t, !ok || !strings.HasSuffix(data, "\n\n") || strings.Contains(strings.TrimSuffix(data, "\n\n"), "\n"), "malformed event %q", e)
		var c chunk
		require.NoError(t, json.Unmarshal([]byte(data), &c), "unmarshal %q", data)
		require.Equal(t, "chatcmpl-1", c.ID, "id")
		require.Equal(t, "chat.completion.chunk", c.Object, "object")
		require.Equal(t, "gpt-4o-mini-2024-07-18", c.Model, "model")
		chunks = append(chunks, c)
	}

	role := chunks[0]
	require.Equal(t, "assistant", role.Choices[0].Delta.Role, "role chunk")
	require.Equal(t, true, role.Usage == nil, "role chunk usage")
	var content []string
	for _, c := range chunks[1 : 1+len(pieces)] {
		require.Equal(t, 1, len(c.Choices), "content chunk choices")
		require.Equal(t, true, c.Choices[0].FinishReason == nil, "content chunk finish reason")
		content = append(content, *c.Choices[0].Delta.Content)
	}
	require.Equal(t, pieces, content, "content deltas")
	finish := chunks[1+len(pieces)]
	require.Equal(t, "stop", *finish.Choices[0].FinishReason, "finish chunk")
	usage := chunks[2+len(pieces)]
	require.Equal(t, 0, len(usage.Choices), "usage chunk choices")
	require.Equal(t, 19, usage.Usage.TotalTokens, "usage chunk total")
}

type ollamaLine struct {
	Model   string `json:"model"`
	Message struct {
		Role    string `json:"role"`
		Content string `json:"content"`
	} `json:"message"`
	Done            bool   `json:"done"`
	DoneReason      string `json:"done_reason"`
	TotalDuration   int64  `json:"total_duration"`
	EvalDuration    int64  `json:"eval_duration"`
	PromptEvalCount int    `json:"prompt_eval_count"`
	EvalCount       int    `json:"eval_count"`
}

func TestOllamaChatIsValidJSON(t *testing.T) {
	var got ollamaLine
	require.NoError(t, json.Unmarshal([]byte(OllamaChat(tricky)), &got))
	require.Equal(t, OllamaModel, got.Model, "model")
	require.Equal(t, "assistant", got.Message.Role, "role")
	require.Equal(t, tricky, got.Message.Content, "content")
	require.Equal(t, true, got.Done, "done")
	require.Equal(t, "stop", got.DoneReason, "done reason")
	require.Equal(t, true, got.TotalDuration > 0 && got.EvalDuration > 0, "durations")
	require.Equal(t, [2]int{12, 7}, [2]int{got.PromptEvalCount, got.EvalCount}, "counts")
}

func TestOllamaErrorIsValidJSON(t *testing.T) {
	var got map[string]any
	require.NoError(t, json.Unmarshal([]byte(OllamaError(tricky)), &got))
	require.Equal(t, map[string]any{"error": tricky}, got, "error")
	require.Equal(t, `{"error":"server busy"}`, OllamaError("server busy"), "exact body")
}

func TestOllamaStreamLines(t *testing.T) {
	pieces := []string{"Hi", tricky}
	lines := OllamaStream(pieces...)
	require.Equal(t, len(pieces)+1, len(lines), "line count")
	var content []string
	for i, l := range lines {
		require.False(t, !strings.HasSuffix(l, "\n") || strings.Count(l, "\n") != 1, "line %d is not one NDJSON line: %q", i, l)
		var got ollamaLine
		require.NoError(t, json.Unmarshal([]byte(l), &got), "unmarshal %q", l)
		last := i == len(lines)-1
		require.Equal(t, last, got.Done, "done")
		if last {
			require.Equal(t, "stop", got.DoneReason, "done reason")
			require.Equal(t, 7, got.EvalCount, "eval count")
			require.Equal(t, "", got.Message.Content, "final content")
		} else {
			content = append(content, got.Message.Content)
		}
	}
	require.Equal(t, pieces, content, "content")
}
