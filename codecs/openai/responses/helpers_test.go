package responses_test

import (
	"encoding/json"
	"strconv"
	"strings"

	"github.com/recourse-dev/recourse/recoursetest"
)

// A scripted Responses API stream: each function returns one whole SSE
// event ("event: <type>\ndata: {…}\n\n") as the provider sends it, with the
// sequence number seq.

const (
	respID    = "resp_0123456789abcdef"
	respModel = "gpt-4.1-mini-2025-04-14"
)

// sseEvent returns the event of type typ whose data is fields plus type and
// sequence_number.
func sseEvent(typ string, seq int, fields map[string]any) string {
	m := map[string]any{"type": typ, "sequence_number": seq}
	for k, v := range fields {
		m[k] = v
	}
	b, err := json.Marshal(m)
	if err != nil {
		panic(err)
	}
	return "event: " + typ + "\ndata: " + string(b) + "\n\n"
}

// response is the response object of a lifecycle or terminal event.
func response(status string, extra map[string]any) map[string]any {
	r := map[string]any{"id": respID, "object": "response", "created_at": 1764547200, "status": status,
		"model": respModel, "output": []any{}, "error": nil, "incomplete_details": nil}
	for k, v := range extra {
		r[k] = v
	}
	return r
}

func evCreated(seq int) string {
	return sseEvent("response.created", seq, map[string]any{"response": response("in_progress", nil)})
}

func evInProgress(seq int) string {
	return sseEvent("response.in_progress", seq, map[string]any{"response": response("in_progress", nil)})
}

func evMessageAdded(seq, out int) string {
	return sseEvent("response.output_item.added", seq, map[string]any{"output_index": out,
		"item": map[string]any{"id": "msg_1", "type": "message", "status": "in_progress", "role": "assistant", "content": []any{}}})
}

func evPartAdded(seq, out int) string {
	return sseEvent("response.content_part.added", seq, map[string]any{"item_id": "msg_1", "output_index": out, "content_index": 0,
		"part": map[string]any{"type": "output_text", "text": "", "annotations": []any{}}})
}

func evText(seq, out int, delta string) string {
	return sseEvent("response.output_text.delta", seq, map[string]any{"item_id": "msg_1", "output_index": out, "content_index": 0, "delta": delta})
}

func evTextDone(seq, out int, text string) string {
	return sseEvent("response.output_text.done", seq, map[string]any{"item_id": "msg_1", "output_index": out, "content_index": 0, "text": text})
}

func evRefusal(seq, out int, delta string) string {
	return sseEvent("response.refusal.delta", seq, map[string]any{"item_id": "msg_1", "output_index": out, "content_index": 0, "delta": delta})
}

func evReasoningAdded(seq, out int) string {
	return sseEvent("response.output_item.added", seq, map[string]any{"output_index": out,
		"item": map[string]any{"id": "rs_1", "type": "reasoning", "summary": []any{}}})
}

func evSummary(seq, out int, delta string) string {
	return sseEvent("response.reasoning_summary_text.delta", seq, map[string]any{"item_id": "rs_1", "output_index": out, "summary_index": 0, "delta": delta})
}

func evReasoningText(seq, out int, delta string) string {
	return sseEvent("response.reasoning_text.delta", seq, map[string]any{"item_id": "rs_1", "output_index": out, "content_index": 0, "delta": delta})
}

func evCallAdded(seq, out int, callID, name string) string {
	return sseEvent("response.output_item.added", seq, map[string]any{"output_index": out,
		"item": map[string]any{"id": "fc_" + strconv.Itoa(out), "type": "function_call", "status": "in_progress", "call_id": callID, "name": name, "arguments": ""}})
}

func evArgs(seq, out int, delta string) string {
	return sseEvent("response.function_call_arguments.delta", seq, map[string]any{"item_id": "fc_" + strconv.Itoa(out), "output_index": out, "delta": delta})
}

func evCallDone(seq, out int, callID, name, args string) string {
	return sseEvent("response.output_item.done", seq, map[string]any{"output_index": out,
		"item": map[string]any{"id": "fc_" + strconv.Itoa(out), "type": "function_call", "status": "completed", "call_id": callID, "name": name, "arguments": args}})
}

var usage = map[string]any{"input_tokens": 12, "output_tokens": 7, "total_tokens": 19}

func evCompleted(seq int) string {
	return sseEvent("response.completed", seq, map[string]any{"response": response("completed", map[string]any{"usage": usage})})
}

func evIncomplete(seq int, reason string) string {
	return sseEvent("response.incomplete", seq, map[string]any{"response": response("incomplete", map[string]any{
		"usage": usage, "incomplete_details": map[string]any{"reason": reason}})})
}

func evFailed(seq int, code, message string) string {
	return sseEvent("response.failed", seq, map[string]any{"response": response("failed", map[string]any{
		"error": map[string]any{"code": code, "message": message}})})
}

func evError(seq int, code, message string) string {
	return sseEvent("error", seq, map[string]any{"code": code, "message": message, "param": nil})
}

// textStream is a whole streamed text answer: created, in_progress, the
// message item and part, one delta per piece, the done events and
// response.completed.
func textStream(pieces ...string) []string {
	evs := []string{evCreated(0), evInProgress(1), evMessageAdded(2, 0), evPartAdded(3, 0)}
	seq := 4
	for _, p := range pieces {
		evs = append(evs, evText(seq, 0, p))
		seq++
	}
	evs = append(evs, evTextDone(seq, 0, strings.Join(pieces, "")), evCompleted(seq+1))
	return evs
}

// responsesSSE is a scripted 200 event-stream step of evs.
func responsesSSE(evs ...string) recoursetest.Step { return recoursetest.SSE(evs...) }

// unary returns a response object body with the given status and output
// items.
func unary(status string, output []any, extra map[string]any) string {
	r := response(status, map[string]any{"output": output, "usage": usage})
	for k, v := range extra {
		r[k] = v
	}
	b, err := json.Marshal(r)
	if err != nil {
		panic(err)
	}
	return string(b)
}

func msgItem(parts ...map[string]any) map[string]any {
	ps := make([]any, len(parts))
	for i, p := range parts {
		ps[i] = p
	}
	return map[string]any{"id": "msg_1", "type": "message", "status": "completed", "role": "assistant", "content": ps}
}

func outputText(s string) map[string]any {
	return map[string]any{"type": "output_text", "text": s, "annotations": []any{}}
}

func refusalPart(s string) map[string]any { return map[string]any{"type": "refusal", "refusal": s} }

func callItem(callID, name, args string) map[string]any {
	return map[string]any{"id": "fc_1", "type": "function_call", "status": "completed", "call_id": callID, "name": name, "arguments": args}
}

func reasoningItem(summary string) map[string]any {
	return map[string]any{"id": "rs_1", "type": "reasoning", "summary": []any{map[string]any{"type": "summary_text", "text": summary}}}
}
