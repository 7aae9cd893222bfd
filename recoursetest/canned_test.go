package recoursetest

import (
	"encoding/json"
	"strings"
	"testing"
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
	if err := json.Unmarshal([]byte(body), &got); err != nil {
		t.Fatalf("unmarshal %q: %v", body, err)
	}
	eq(t, got.ID, "chatcmpl-1", "id")
	eq(t, got.Object, "chat.completion", "object")
	eq(t, got.Model, "gpt-4o-mini-2024-07-18", "model")
	eq(t, len(got.Choices), 1, "choices")
	eq(t, got.Choices[0].Message.Role, "assistant", "role")
	eq(t, got.Choices[0].Message.Content, tricky, "content")
	eq(t, got.Choices[0].FinishReason, "stop", "finish reason")
	eq(t, [3]int{got.Usage.PromptTokens, got.Usage.CompletionTokens, got.Usage.TotalTokens}, [3]int{12, 7, 19}, "usage")
}

func TestOpenAIErrorIsValidJSON(t *testing.T) {
	var got map[string]map[string]any
	if err := json.Unmarshal([]byte(OpenAIError("invalid_request_error", "", tricky)), &got); err != nil {
		t.Fatal(err)
	}
	eq(t, got["error"], map[string]any{"message": tricky, "type": "invalid_request_error", "param": nil, "code": nil}, "error with null code")

	if err := json.Unmarshal([]byte(OpenAIError("rate_limit_exceeded", "rate_limit_exceeded", "slow down")), &got); err != nil {
		t.Fatal(err)
	}
	eq(t, got["error"], map[string]any{"message": "slow down", "type": "rate_limit_exceeded", "param": nil, "code": "rate_limit_exceeded"}, "error with code")
}

func TestOpenAIStreamEvents(t *testing.T) {
	pieces := []string{"Hel", tricky, ""}
	events := OpenAIStream(pieces...)
	eq(t, len(events), len(pieces)+4, "event count")
	eq(t, events[len(events)-1], "data: [DONE]\n\n", "last event")

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
		if !ok || !strings.HasSuffix(data, "\n\n") || strings.Contains(strings.TrimSuffix(data, "\n\n"), "\n") {
			t.Fatalf("malformed event %q", e)
		}
		var c chunk
		if err := json.Unmarshal([]byte(data), &c); err != nil {
			t.Fatalf("unmarshal %q: %v", data, err)
		}
		eq(t, c.ID, "chatcmpl-1", "id")
		eq(t, c.Object, "chat.completion.chunk", "object")
		eq(t, c.Model, "gpt-4o-mini-2024-07-18", "model")
		chunks = append(chunks, c)
	}

	role := chunks[0]
	eq(t, role.Choices[0].Delta.Role, "assistant", "role chunk")
	eq(t, role.Usage == nil, true, "role chunk usage")
	var content []string
	for _, c := range chunks[1 : 1+len(pieces)] {
		eq(t, len(c.Choices), 1, "content chunk choices")
		eq(t, c.Choices[0].FinishReason == nil, true, "content chunk finish reason")
		content = append(content, *c.Choices[0].Delta.Content)
	}
	eq(t, content, pieces, "content deltas")
	finish := chunks[1+len(pieces)]
	eq(t, *finish.Choices[0].FinishReason, "stop", "finish chunk")
	usage := chunks[2+len(pieces)]
	eq(t, len(usage.Choices), 0, "usage chunk choices")
	eq(t, usage.Usage.TotalTokens, 19, "usage chunk total")
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
	if err := json.Unmarshal([]byte(OllamaChat(tricky)), &got); err != nil {
		t.Fatal(err)
	}
	eq(t, got.Model, OllamaModel, "model")
	eq(t, got.Message.Role, "assistant", "role")
	eq(t, got.Message.Content, tricky, "content")
	eq(t, got.Done, true, "done")
	eq(t, got.DoneReason, "stop", "done reason")
	eq(t, got.TotalDuration > 0 && got.EvalDuration > 0, true, "durations")
	eq(t, [2]int{got.PromptEvalCount, got.EvalCount}, [2]int{12, 7}, "counts")
}

func TestOllamaErrorIsValidJSON(t *testing.T) {
	var got map[string]any
	if err := json.Unmarshal([]byte(OllamaError(tricky)), &got); err != nil {
		t.Fatal(err)
	}
	eq(t, got, map[string]any{"error": tricky}, "error")
	eq(t, OllamaError("server busy"), `{"error":"server busy"}`, "exact body")
}

func TestOllamaStreamLines(t *testing.T) {
	pieces := []string{"Hi", tricky}
	lines := OllamaStream(pieces...)
	eq(t, len(lines), len(pieces)+1, "line count")
	var content []string
	for i, l := range lines {
		if !strings.HasSuffix(l, "\n") || strings.Count(l, "\n") != 1 {
			t.Fatalf("line %d is not one NDJSON line: %q", i, l)
		}
		var got ollamaLine
		if err := json.Unmarshal([]byte(l), &got); err != nil {
			t.Fatalf("unmarshal %q: %v", l, err)
		}
		last := i == len(lines)-1
		eq(t, got.Done, last, "done")
		if last {
			eq(t, got.DoneReason, "stop", "done reason")
			eq(t, got.EvalCount, 7, "eval count")
			eq(t, got.Message.Content, "", "final content")
		} else {
			content = append(content, got.Message.Content)
		}
	}
	eq(t, content, pieces, "content")
}
