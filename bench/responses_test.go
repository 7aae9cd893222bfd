package bench

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/recourse-dev/recourse/chain"
	"github.com/recourse-dev/recourse/codecs/openai/responses"
	"github.com/recourse-dev/recourse/recoursetest"
)

// responsesStream returns the Server-Sent Events of a streamed Responses API
// answer whose text is content, one output_text delta per element, as the
// provider sends them: response.created and response.in_progress, the
// message item and its text part, the deltas, the text's done event, the
// item's done event and response.completed with its usage.
func responsesStream(tb testing.TB, content []string) []string {
	tb.Helper()
	const id, model = "resp_0123456789abcdef", "gpt-4.1-mini-2025-04-14"
	seq := 0
	event := func(typ string, fields map[string]any) string {
		fields["type"] = typ
		fields["sequence_number"] = seq
		seq++
		b, err := json.Marshal(fields)
		if err != nil {
			tb.Fatal(err)
		}
		return "event: " + typ + "\ndata: " + string(b) + "\n\n"
	}
	resp := func(status string, usage any) map[string]any {
		return map[string]any{"id": id, "object": "response", "created_at": 1764547200, "status": status,
			"model": model, "output": []any{}, "error": nil, "incomplete_details": nil, "usage": usage}
	}
	text := strings.Join(content, "")
	events := []string{
		event("response.created", map[string]any{"response": resp("in_progress", nil)}),
		event("response.in_progress", map[string]any{"response": resp("in_progress", nil)}),
		event("response.output_item.added", map[string]any{"output_index": 0,
			"item": map[string]any{"id": "msg_1", "type": "message", "status": "in_progress", "role": "assistant", "content": []any{}}}),
		event("response.content_part.added", map[string]any{"item_id": "msg_1", "output_index": 0, "content_index": 0,
			"part": map[string]any{"type": "output_text", "text": "", "annotations": []any{}}}),
	}
	for _, c := range content {
		events = append(events, event("response.output_text.delta", map[string]any{"item_id": "msg_1", "output_index": 0, "content_index": 0, "delta": c}))
	}
	return append(events,
		event("response.output_text.done", map[string]any{"item_id": "msg_1", "output_index": 0, "content_index": 0, "text": text}),
		event("response.output_item.done", map[string]any{"output_index": 0,
			"item": map[string]any{"id": "msg_1", "type": "message", "status": "completed", "role": "assistant",
				"content": []any{map[string]any{"type": "output_text", "text": text, "annotations": []any{}}}}}),
		event("response.completed", map[string]any{"response": resp("completed",
			map[string]any{"input_tokens": 12, "output_tokens": 7, "total_tokens": 19})}),
	)
}

// responsesCodec is the Responses codec comparison: the same 1000-chunk text
// streamed through the default chain with the Responses API codec and with
// the chat-completions codec, each from its own endpoint.
type responsesCodec struct {
	responses, chat side
}

func newResponsesCodec(tb testing.TB) *responsesCodec {
	text := contents(streamChunks)
	respPayload := []byte(strings.Join(responsesStream(tb, text), ""))
	chatPayload := []byte(strings.Join(recoursetest.OpenAIStream(text...), ""))
	srv := server(tb, func(w http.ResponseWriter, r *http.Request) {
		drainRequest(r)
		sseHeaders(w)
		if r.URL.Path == "/v1/responses" {
			_, _ = w.Write(respPayload)
			return
		}
		_, _ = w.Write(chatPayload)
	})
	ch, err := chain.Default(responses.New())
	if err != nil {
		tb.Fatal(err)
	}
	rc, err := chain.NewClient(srv.URL, ch, chain.WithAPIKey("sk-bench"))
	if err != nil {
		tb.Fatal(err)
	}
	s := nativeStreamSide(rc, streamChunks)
	s.name = "responses"
	c := nativeStreamSide(nativeClient(tb, srv.URL), streamChunks)
	c.name = "chat"
	return &responsesCodec{responses: s, chat: c}
}

// BenchmarkResponsesStream1000 streams the text of BenchmarkStream1000
// through the native Client.Stream over the default chain with the
// Responses API codec (codecs/openai/responses, its stream decoder) and
// with the chat-completions codec (chat), each over its own endpoint's
// SSE: the Responses decoder's cost against the chat-completions decoder's
// on the same text.
func BenchmarkResponsesStream1000(b *testing.B) {
	r := newResponsesCodec(b)
	b.Run("ratio", func(b *testing.B) { compare(b, 1, r.responses, r.chat) })
}
