package main

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"io"
	"log"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"
)

// The wire dialects the scripted provider speaks.
const (
	// dialectOpenAI is OpenAI's POST /v1/chat/completions with SSE streams.
	dialectOpenAI = "openai"
	// dialectOllama is Ollama's POST /api/chat with NDJSON streams.
	dialectOllama = "ollama"
)

// The fault scenarios of -faults, played in this order, one per turn, and
// then again from the start.
const (
	// scenario504: two HTTP 504s, then the answer (two retry notices).
	scenario504 = iota
	// scenarioKeepaliveCut: a stream that sends only a keep-alive and is
	// cut; nothing semantic arrived, so the chain resends it (one retry
	// notice after a transport error).
	scenarioKeepaliveCut
	// scenarioContentCut: reasoning, then half a sentence, then the stream
	// is cut. Only the reasoning block had closed: the broker keeps it in
	// the history (R17.3) and asks again in the same turn, and the
	// continuation notice names the failure ("transport error").
	scenarioContentCut
	// scenarioToolThen503: a dice tool call; the completion after the tool
	// result gets two HTTP 503s before the answer.
	scenarioToolThen503
	// scenarioStall: a stream that sends a keep-alive and then goes
	// silent with the connection held open. Only the chain's idle limit
	// ends it; nothing semantic arrived, so the chain resends it (one
	// retry notice that names the idle timeout).
	scenarioStall
	scenarioCount
)

// scriptedModel is the model name the scripted provider reports.
const scriptedModel = "scripted"

// The scripted answers of the fault scenarios.
const (
	answer504 = "Hello! I am the scripted model. Before this answer the provider " +
		"returned HTTP 504 twice; recourse retried both times and the status line " +
		"counted each wait down. None of that is part of our conversation."
	answerKeepaliveCut = "This answer came on the second try. The first stream sent " +
		"only a keep-alive and was then cut, so nothing had arrived and recourse " +
		"simply sent the same request again."
	partialContentCut = "I was halfway through a long sentence when the connecti"
	answerContentCut  = "This is the continuation. The first stream broke in the middle " +
		"of a sentence: the broker took the unfinished text back and, as only the " +
		"reasoning had closed, asked again in the same turn."
	reasoningContentCut = "The user wants an answer. I will write a long sentence."
	answerStall         = "This answer came on the second try. The first stream sent a " +
		"keep-alive and then went silent; the chain's idle limit ended that attempt, and " +
		"as nothing had arrived recourse sent the same request again."
)

// answerDice is the scripted answer after the dice tool returned result.
func answerDice(result string) string { return "The die shows " + result + "." }

// answerPlain is the scripted answer to text when no fault is injected.
func answerPlain(text string) string {
	return "You said: \u201c" + text + "\u201d. I am a scripted model; start the chat " +
		"with -faults to watch recourse retry and continue, or ask me to roll a die."
}

// scripted is the chat's in-process scripted chat provider: an HTTP server
// on 127.0.0.1 that answers like OpenAI or Ollama and, with faults on,
// injects one fault scenario per turn. It decides from the request alone:
// the turn is the number of user messages, and it counts how often it saw
// each exact body, so the byte-identical resends of one completion see the
// failures first and then the answer.
type scripted struct {
	// URL is the base URL, "http://127.0.0.1:port".
	URL string

	dialect string
	faults  bool
	gap     time.Duration // pause between streamed chunks

	srv  *http.Server
	done chan struct{} // closed when Serve returned

	mu   sync.Mutex
	seen map[[sha256.Size]byte]int
	hits int
}

// startScripted starts a scripted provider of dialect on 127.0.0.1. gap is
// the pause between two streamed chunks.
func startScripted(dialect string, faults bool, gap time.Duration) (*scripted, error) {
	if dialect != dialectOpenAI && dialect != dialectOllama {
		return nil, errors.New("unknown scripted dialect " + dialect + " (want openai or ollama)")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	s := &scripted{
		URL: "http://" + ln.Addr().String(), dialect: dialect, faults: faults, gap: gap,
		done: make(chan struct{}), seen: map[[sha256.Size]byte]int{},
	}
	// ErrorLog is discarded: the terminal belongs to the chat UI.
	s.srv = &http.Server{Handler: http.HandlerFunc(s.serve), ErrorLog: log.New(io.Discard, "", 0)}
	go func() {
		defer close(s.done)
		_ = s.srv.Serve(ln)
	}()
	return s, nil
}

// Close stops the server and drops its connections; a handler still
// streaming notices it at its next write and ends.
func (s *scripted) Close() {
	_ = s.srv.Close()
	<-s.done
}

// Hits returns the number of requests received.
func (s *scripted) Hits() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.hits
}

// path is the endpoint of the dialect.
func (s *scripted) path() string {
	if s.dialect == dialectOllama {
		return "/api/chat"
	}
	return "/v1/chat/completions"
}

// wireMessage is the part of a request message the script reads; content
// is a plain string for every message the chat sends.
type wireMessage struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

// text returns the message's content when it is a JSON string.
func (m wireMessage) text() string {
	var s string
	_ = json.Unmarshal(m.Content, &s)
	return s
}

func (s *scripted) serve(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return
	}
	sum := sha256.Sum256(body)
	s.mu.Lock()
	s.hits++
	s.seen[sum]++
	n := s.seen[sum] // 1 for the first time this exact body arrives
	s.mu.Unlock()

	if r.Method != http.MethodPost || r.URL.Path != s.path() {
		s.fail(w, http.StatusNotFound, "no such endpoint")
		return
	}
	var req struct {
		Stream   *bool         `json:"stream"`
		Messages []wireMessage `json:"messages"`
	}
	if err := json.Unmarshal(body, &req); err != nil || len(req.Messages) == 0 {
		s.fail(w, http.StatusBadRequest, "the request has no messages")
		return
	}
	if req.Stream == nil || !*req.Stream {
		s.fail(w, http.StatusBadRequest, "the scripted provider only streams")
		return
	}
	turn, lastUser := 0, ""
	for _, m := range req.Messages {
		if m.Role == "user" {
			turn++
			lastUser = m.text()
		}
	}
	last := req.Messages[len(req.Messages)-1]
	scenario := -1
	if s.faults && turn > 0 {
		scenario = (turn - 1) % scenarioCount
	}
	wantsDice := scenario == scenarioToolThen503 || (scenario < 0 && asksForDice(lastUser))

	switch {
	case last.Role == "tool":
		// The completion after the tool result.
		if scenario == scenarioToolThen503 && n <= 2 {
			s.busy(w)
			return
		}
		s.stream(r.Context(), w, "", answerDice(last.text()), false)
	case wantsDice:
		s.toolCall(r.Context(), w)
	case scenario == scenario504 && n <= 2:
		s.fail(w, http.StatusGatewayTimeout, "upstream request timeout")
	case scenario == scenarioKeepaliveCut && n == 1:
		s.keepaliveCut(r.Context(), w)
	case scenario == scenarioContentCut && last.Role == "user" && n == 1:
		s.stream(r.Context(), w, reasoningContentCut, partialContentCut, true)
	case scenario == scenarioStall && n == 1:
		s.stall(r.Context(), w)
	case scenario == scenario504:
		s.stream(r.Context(), w, "", answer504, false)
	case scenario == scenarioKeepaliveCut:
		s.stream(r.Context(), w, "", answerKeepaliveCut, false)
	case scenario == scenarioContentCut:
		s.stream(r.Context(), w, "", answerContentCut, false)
	case scenario == scenarioStall:
		s.stream(r.Context(), w, "", answerStall, false)
	default:
		s.stream(r.Context(), w, "", answerPlain(lastUser), false)
	}
}

// asksForDice reports whether text asks for a die roll.
func asksForDice(text string) bool {
	t := strings.ToLower(text)
	return strings.Contains(t, "dice") || strings.Contains(t, "die") || strings.Contains(t, "roll")
}

// fail answers status with the dialect's error body.
func (s *scripted) fail(w http.ResponseWriter, status int, msg string) {
	var body any = map[string]any{"error": map[string]any{"message": msg, "type": "server_error", "param": nil, "code": nil}}
	if s.dialect == dialectOllama {
		body = map[string]any{"error": msg}
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(body)
}

// busy answers 503, as an overloaded provider (Ollama: its queue is full).
func (s *scripted) busy(w http.ResponseWriter) {
	msg := "the server is overloaded, please retry"
	if s.dialect == dialectOllama {
		msg = "server busy, please try again.  maximum pending requests exceeded"
	}
	s.fail(w, http.StatusServiceUnavailable, msg)
}

// streamer writes one streamed answer: events are written and flushed one
// by one with the configured gap between them.
type streamer struct {
	s   *scripted
	ctx context.Context
	w   http.ResponseWriter
	rc  *http.ResponseController
}

// begin writes the 200 header of a stream of the dialect.
func (s *scripted) begin(ctx context.Context, w http.ResponseWriter) *streamer {
	ct := "text/event-stream"
	if s.dialect == dialectOllama {
		ct = "application/x-ndjson"
	}
	w.Header().Set("Content-Type", ct)
	w.WriteHeader(http.StatusOK)
	st := &streamer{s: s, ctx: ctx, w: w, rc: http.NewResponseController(w)}
	_ = st.rc.Flush()
	return st
}

// write sends one event after the gap; it aborts the response when the
// client went away.
func (st *streamer) write(event string) {
	if st.s.gap > 0 {
		t := time.NewTimer(st.s.gap)
		select {
		case <-st.ctx.Done():
			t.Stop()
			panic(http.ErrAbortHandler)
		case <-t.C:
		}
	}
	_, _ = io.WriteString(st.w, event)
	_ = st.rc.Flush()
}

// cut drops the connection without ending the body: the client reads an
// unexpected EOF. net/http logs nothing for this sentinel.
func (st *streamer) cut() {
	_ = st.rc.Flush()
	panic(http.ErrAbortHandler)
}

// delta is one streamed piece of an answer.
type delta struct {
	reasoning, content string
	tool               bool // the dice call {"sides":6}
}

// event encodes d in the dialect.
func (s *scripted) event(d delta) string {
	if s.dialect == dialectOllama {
		msg := map[string]any{"role": "assistant", "content": d.content}
		if d.reasoning != "" {
			msg["thinking"] = d.reasoning
		}
		if d.tool {
			msg["tool_calls"] = []any{map[string]any{"function": map[string]any{"name": "dice", "arguments": map[string]any{"sides": 6}}}}
		}
		return ndjsonLine(map[string]any{"model": scriptedModel, "created_at": "2026-10-17T00:00:00Z", "message": msg, "done": false})
	}
	dl := map[string]any{}
	switch {
	case d.reasoning != "":
		dl["reasoning_content"] = d.reasoning
	case d.tool:
		dl["tool_calls"] = []any{map[string]any{"index": 0, "id": "call_dice_1", "type": "function",
			"function": map[string]any{"name": "dice", "arguments": `{"sides":6}`}}}
	default:
		dl["content"] = d.content
	}
	return openAIChunk(dl, nil)
}

// end encodes the accepted end of a stream in the dialect.
func (s *scripted) end(finish string) []string {
	if s.dialect == dialectOllama {
		return []string{ndjsonLine(map[string]any{
			"model": scriptedModel, "created_at": "2026-10-17T00:00:00Z",
			"message": map[string]any{"role": "assistant", "content": ""},
			"done":    true, "done_reason": "stop", "prompt_eval_count": 12, "eval_count": 7,
		})}
	}
	return []string{openAIChunk(map[string]any{}, &finish), "data: [DONE]\n\n"}
}

// stream streams reasoning (when not empty) and then content word by word;
// with cut it drops the connection after the content instead of ending the
// stream.
func (s *scripted) stream(ctx context.Context, w http.ResponseWriter, reasoning, content string, cut bool) {
	st := s.begin(ctx, w)
	if s.dialect == dialectOpenAI {
		st.write(openAIChunk(map[string]any{"role": "assistant", "content": ""}, nil))
	}
	for _, p := range words(reasoning) {
		st.write(s.event(delta{reasoning: p}))
	}
	for _, p := range words(content) {
		st.write(s.event(delta{content: p}))
	}
	if cut {
		st.cut()
	}
	for _, e := range s.end("stop") {
		st.write(e)
	}
}

// toolCall streams one dice call and ends the stream with finish reason
// tool_calls.
func (s *scripted) toolCall(ctx context.Context, w http.ResponseWriter) {
	st := s.begin(ctx, w)
	if s.dialect == dialectOpenAI {
		st.write(openAIChunk(map[string]any{"role": "assistant", "content": nil}, nil))
	}
	st.write(s.event(delta{tool: true}))
	for _, e := range s.end("tool_calls") {
		st.write(e)
	}
}

// keepaliveCut sends a keep-alive and drops the connection.
func (s *scripted) keepaliveCut(ctx context.Context, w http.ResponseWriter) {
	st := s.begin(ctx, w)
	if s.dialect == dialectOllama {
		st.write("\n") // a blank line is Ollama's keep-alive
	} else {
		st.write(": keep-alive\n\n")
	}
	st.cut()
}

// stall sends a keep-alive and then nothing, holding the connection open
// until the client goes away.
func (s *scripted) stall(ctx context.Context, w http.ResponseWriter) {
	st := s.begin(ctx, w)
	if s.dialect == dialectOllama {
		st.write("\n")
	} else {
		st.write(": keep-alive\n\n")
	}
	<-ctx.Done()
}

// words splits s into pieces that each end after a space, the way a model
// streams tokens.
func words(s string) []string {
	var out []string
	for s != "" {
		i := strings.IndexByte(s, ' ')
		if i < 0 {
			out = append(out, s)
			break
		}
		out = append(out, s[:i+1])
		s = s[i+1:]
	}
	return out
}

// openAIChunk returns one SSE event holding a chat.completion.chunk.
func openAIChunk(delta map[string]any, finish *string) string {
	b, _ := json.Marshal(map[string]any{
		"id": "chatcmpl-scripted", "object": "chat.completion.chunk", "created": 1700000000, "model": scriptedModel,
		"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}},
	})
	return "data: " + string(b) + "\n\n"
}

// ndjsonLine returns v as one NDJSON line.
func ndjsonLine(v any) string {
	b, _ := json.Marshal(v)
	return string(b) + "\n"
}
