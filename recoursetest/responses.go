package recoursetest

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
)

// Values of the canned Responses API bodies.
const (
	// ResponsesID is the response id used by the canned Responses API
	// bodies when a test does not name one.
	ResponsesID = "resp_1"
	// ResponsesPath is the path of the Responses API create endpoint.
	ResponsesPath = "/v1/responses"
)

// ResponsesEvents returns the Server-Sent Events of a streamed Responses
// API response id of model OpenAIModel, each a whole "event: …\ndata:
// …\n\n" event carrying a sequence_number that counts from 0:
// response.created, response.in_progress, a message's output_item.added
// and content_part.added, one response.output_text.delta per element of
// content, response.output_text.done, content_part.done, output_item.done
// and response.completed (usage 12 input + 7 output tokens). The first
// delta is the event of sequence number 4, so the i-th piece of content
// (0-based) is event 4+i. Pass the result to SSE or ResponsesBackground.
func ResponsesEvents(id string, content ...string) []string {
	var evs []string
	seq := 0
	add := func(typ string, fields map[string]any) {
		fields["type"] = typ
		fields["sequence_number"] = seq
		seq++
		evs = append(evs, "event: "+typ+"\ndata: "+marshal(fields)+"\n\n")
	}
	text := strings.Join(content, "")
	msg := func(status string, parts []any) map[string]any {
		return map[string]any{"id": "msg_1", "type": "message", "status": status, "role": "assistant", "content": parts}
	}
	part := map[string]any{"type": "output_text", "text": text, "annotations": []any{}}
	add("response.created", map[string]any{"response": responseObject(id, "in_progress", nil)})
	add("response.in_progress", map[string]any{"response": responseObject(id, "in_progress", nil)})
	add("response.output_item.added", map[string]any{"output_index": 0, "item": msg("in_progress", []any{})})
	add("response.content_part.added", map[string]any{"item_id": "msg_1", "output_index": 0, "content_index": 0,
		"part": map[string]any{"type": "output_text", "text": "", "annotations": []any{}}})
	for _, c := range content {
		add("response.output_text.delta", map[string]any{"item_id": "msg_1", "output_index": 0, "content_index": 0, "delta": c})
	}
	add("response.output_text.done", map[string]any{"item_id": "msg_1", "output_index": 0, "content_index": 0, "text": text})
	add("response.content_part.done", map[string]any{"item_id": "msg_1", "output_index": 0, "content_index": 0, "part": part})
	add("response.output_item.done", map[string]any{"output_index": 0, "item": msg("completed", []any{part})})
	add("response.completed", map[string]any{"response": responseObject(id, "completed", []any{msg("completed", []any{part})})})
	return evs
}

// ResponsesIncompleteEvents returns the events of ResponsesEvents whose
// last event is response.incomplete instead of response.completed: the
// response's status is incomplete, its incomplete_details.reason is
// reason (max_output_tokens, content_filter) and its usage is 12 input +
// 7 output tokens, as the provider ends a response cut short by its own
// limit.
func ResponsesIncompleteEvents(id, reason string, content ...string) []string {
	evs := ResponsesEvents(id, content...)
	text := strings.Join(content, "")
	part := map[string]any{"type": "output_text", "text": text, "annotations": []any{}}
	item := map[string]any{"id": "msg_1", "type": "message", "status": "incomplete", "role": "assistant", "content": []any{part}}
	resp := responseObject(id, "incomplete", []any{item})
	resp["incomplete_details"] = map[string]any{"reason": reason}
	resp["usage"] = map[string]any{"input_tokens": 12, "output_tokens": 7, "total_tokens": 19}
	evs[len(evs)-1] = "event: response.incomplete\ndata: " + marshal(map[string]any{
		"type": "response.incomplete", "sequence_number": len(evs) - 1, "response": resp}) + "\n\n"
	return evs
}

// ResponsesJSON returns a complete (foreground, unary) Responses API
// response object id with status completed whose one message item holds
// content, and usage 12 input + 7 output tokens.
func ResponsesJSON(id, content string) string {
	part := map[string]any{"type": "output_text", "text": content, "annotations": []any{}}
	item := map[string]any{"id": "msg_1", "type": "message", "status": "completed", "role": "assistant", "content": []any{part}}
	return marshal(responseObject(id, "completed", []any{item}))
}

// responseObject is a response object with status and output (nil: none).
func responseObject(id, status string, output []any) map[string]any {
	if output == nil {
		output = []any{}
	}
	r := map[string]any{"id": id, "object": "response", "created_at": openAICreated, "status": status,
		"model": OpenAIModel, "output": output}
	if status == "completed" {
		r["usage"] = map[string]any{"input_tokens": 12, "output_tokens": 7, "total_tokens": 19}
	}
	return r
}

// responseLog is the server-side event log of one background response.
type responseLog struct {
	events    []string
	seqs      []int64
	cancelled bool
}

// eventSequence returns the sequence_number of an SSE event, or -1.
func eventSequence(ev string) int64 {
	for line := range strings.SplitSeq(ev, "\n") {
		data, ok := strings.CutPrefix(line, "data:")
		if !ok {
			continue
		}
		var v struct {
			Seq *int64 `json:"sequence_number"`
		}
		if json.Unmarshal([]byte(strings.TrimSpace(data)), &v) == nil && v.Seq != nil {
			return *v.Seq
		}
	}
	return -1
}

// ResponsesBackground returns a 200 text/event-stream step answering a
// background create (POST /v1/responses with "background":true) with
// events, and keeping them as the server-side event log of response id:
// the log exists from the moment the step is played, whether or not the
// client reads the whole stream (cut it with CutEvents), so later
// ResponsesResume, ResponsesRetrieve and ResponsesCancel steps find it. A
// step played again replaces the log.
func ResponsesBackground(id string, events ...string) Step {
	st := SSE(events...)
	log := &responseLog{events: append([]string(nil), events...)}
	for _, e := range events {
		log.seqs = append(log.seqs, eventSequence(e))
	}
	st.dynamic = func(s *Server, _ Request) Step {
		s.mu.Lock()
		if s.logs == nil {
			s.logs = map[string]*responseLog{}
		}
		l := *log
		s.logs[id] = &l
		s.mu.Unlock()
		return st
	}
	return st
}

// ResponsesResume returns a step answering a resume read of response id,
// GET /v1/responses/{id}?stream=true&starting_after=N: a 200
// text/event-stream of the logged events whose sequence_number is greater
// than N (every event when starting_after is absent), in log order. An
// unknown id is a 404 OpenAI error body, and a
// starting_after that is not an integer is a 400. Refine it with CutEvents
// to cut the resumed stream too. The request's path is not checked: the
// step answers whatever request consumes it, as every step does.
func ResponsesResume(id string) Step {
	return Step{dynamic: func(s *Server, r Request) Step {
		s.mu.Lock()
		log := s.logs[id]
		s.mu.Unlock()
		if log == nil {
			return notFound(id)
		}
		after := int64(-1)
		if v := queryValue(r.RawQuery, "starting_after"); v != "" {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				return JSON(http.StatusBadRequest, OpenAIError("invalid_request_error", "invalid_request_error", "starting_after is not an integer"))
			}
			after = n
		}
		var evs []string
		for i, e := range log.events {
			if log.seqs[i] > after {
				evs = append(evs, e)
			}
		}
		return SSE(evs...)
	}}
}

// ResponsesRetrieve returns a step answering GET /v1/responses/{id}
// (polling) with the response object as its log last carried it (the
// "response" of the last logged event that has one): status in_progress
// while the log has no terminal event, completed after response.completed,
// and cancelled once ResponsesCancel ran. An unknown id is a 404.
func ResponsesRetrieve(id string) Step {
	return withLog(id, func(log *responseLog) Step {
		obj := lastResponse(log)
		if log.cancelled {
			obj["status"] = "cancelled"
		}
		return JSON(http.StatusOK, marshal(obj))
	})
}

// ResponsesCancel returns a step answering POST /v1/responses/{id}/cancel:
// the response is marked cancelled (Server.Cancelled reports it) and the
// answer is its response object with status cancelled. An unknown id is a
// 404.
func ResponsesCancel(id string) Step {
	return withLog(id, func(log *responseLog) Step {
		log.cancelled = true
		obj := lastResponse(log)
		obj["status"] = "cancelled"
		return JSON(http.StatusOK, marshal(obj))
	})
}

// withLog returns a step that plays what answer returns for the log of
// response id, with the server's lock held, or a 404 when the server has
// no log of id.
func withLog(id string, answer func(*responseLog) Step) Step {
	return Step{dynamic: func(s *Server, _ Request) Step {
		s.mu.Lock()
		defer s.mu.Unlock()
		log := s.logs[id]
		if log == nil {
			return notFound(id)
		}
		return answer(log)
	}}
}

// Cancelled reports whether a ResponsesCancel step cancelled response id.
func (s *Server) Cancelled(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.logs[id] != nil && s.logs[id].cancelled
}

// lastResponse returns a copy of the response object of the last logged
// event that carries one, or a bare in_progress object.
func lastResponse(log *responseLog) map[string]any {
	for i := len(log.events) - 1; i >= 0; i-- {
		for line := range strings.SplitSeq(log.events[i], "\n") {
			data, ok := strings.CutPrefix(line, "data:")
			if !ok {
				continue
			}
			var v struct {
				Response map[string]any `json:"response"`
			}
			if json.Unmarshal([]byte(strings.TrimSpace(data)), &v) == nil && v.Response != nil {
				return v.Response
			}
		}
	}
	return map[string]any{"object": "response", "status": "in_progress"}
}

func notFound(id string) Step {
	return JSON(http.StatusNotFound, OpenAIError("invalid_request_error", "", "No response found with id '"+id+"'."))
}

// queryValue returns the first value of key in an encoded query, or "".
func queryValue(raw, key string) string {
	for kv := range strings.SplitSeq(raw, "&") {
		k, v, _ := strings.Cut(kv, "=")
		if k == key {
			return v
		}
	}
	return ""
}

// CutEvents returns a copy of s that aborts the connection right after its
// first n events (chunks) were written, so the client has exactly those
// events and reads io.ErrUnexpectedEOF; n <= 0 cuts before the first body
// byte. For a step whose events are chosen when it is played
// (ResponsesResume), the cut counts the events it plays. It replaces any
// byte cut (Step.Cut).
func (s Step) CutEvents(n int) Step {
	s.cutEvents = max(n, 0) + 1 // 0: no event cut
	return s
}

// resolve returns the concrete step to play for request r.
func (s *Server) resolve(st Step, r Request) Step {
	if st.dynamic != nil {
		outer := st
		st = outer.dynamic(s, r)
		st.dynamic = nil
		// The refinements of the scripted step apply to what it plays.
		if outer.cutEvents != 0 {
			st.cutEvents = outer.cutEvents
		}
		if outer.CutAfter > 0 {
			st.CutAfter = outer.CutAfter
		}
		if outer.Gate != nil {
			st.Gate, st.GateAt = outer.Gate, outer.GateAt
		}
		st.Hold = st.Hold || outer.Hold
		st.ResetBeforeHeaders = st.ResetBeforeHeaders || outer.ResetBeforeHeaders
		// Headers the scripted step set (WithHeader) are sent too, over
		// those of what it plays.
		if len(outer.Header) > 0 {
			h := st.Header.Clone()
			if h == nil {
				h = http.Header{}
			}
			for k, v := range outer.Header {
				h[k] = append([]string(nil), v...)
			}
			st.Header = h
		}
	}
	if st.cutEvents != 0 {
		n := st.cutEvents - 1
		total := 0
		for i := 0; i < n && i < len(st.Chunks); i++ {
			total += len(st.Chunks[i])
		}
		if n == 0 || total == 0 {
			// Nothing of the body: abort once the headers are out.
			st.Chunks, st.CutAfter = nil, 0
			st.cutBeforeBody = true
		} else {
			st.CutAfter = total
		}
	}
	return st
}
