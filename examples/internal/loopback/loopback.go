// Package loopback is a tiny scripted chat provider for the recourse
// examples and their tests.
//
// A Server listens on 127.0.0.1 only, answers the i-th request with the i-th
// Reply of its script and records every request it receives (method, path,
// headers and body), so a test can count the POSTs that reached the wire and
// compare their bodies. Once the script runs out every further request gets
// HTTP 500.
//
// A Reply can also stream: SSE and NDJSON send their chunks one at a time
// (each written and flushed on its own, chunked encoding), and Aborted drops
// the connection after the last chunk instead of ending the body, which is
// what a client sees when a stream is cut. Hangup drops the connection
// before any response byte.
//
// recourse's own scripted provider lives in an internal package of the main
// module, which this module cannot import; this is a deliberately small
// stand-in with just what the examples need.
package loopback

import (
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
)

// Reply is one scripted answer.
type Reply struct {
	// Status is the HTTP status; zero means 200.
	Status int
	// Header holds extra response headers.
	Header http.Header
	// Body is the response body. Without Chunks it is sent with
	// Content-Length.
	Body string
	// Chunks follow Body; each is written and flushed on its own, so the
	// response is chunked and the client sees the chunks arrive one by one.
	Chunks []string
	// Abort drops the connection after the last chunk instead of ending the
	// response: the client's body read fails (unexpected EOF) rather than
	// reaching a clean EOF.
	Abort bool
	// Hangup drops the connection before any response byte: no status line,
	// no headers. The other fields are ignored.
	Hangup bool
}

// Hangup returns a Reply that drops the connection without answering.
func Hangup() Reply { return Reply{Hangup: true} }

// Aborted returns a copy of r that drops the connection after its last
// chunk.
func (r Reply) Aborted() Reply {
	r.Abort = true
	return r
}

// SSE returns a 200 text/event-stream Reply that sends events one at a time.
// Each event is sent exactly as given (see SSEEvent, SSEKeepalive, SSEDone).
func SSE(events ...string) Reply {
	return Reply{Header: http.Header{"Content-Type": {"text/event-stream"}}, Chunks: append([]string(nil), events...)}
}

// NDJSON returns a 200 application/x-ndjson Reply that sends lines one at a
// time. Each line is sent exactly as given, so it needs its own "\n" (the
// Ollama helpers below include it).
func NDJSON(lines ...string) Reply {
	return Reply{Header: http.Header{"Content-Type": {"application/x-ndjson"}}, Chunks: append([]string(nil), lines...)}
}

// JSON returns a Reply with status and an application/json body. kv lists
// extra header name/value pairs, for example JSON(429, body, "Retry-After", "1").
func JSON(status int, body string, kv ...string) Reply {
	if len(kv)%2 != 0 {
		panic("loopback: JSON needs header name/value pairs")
	}
	h := http.Header{"Content-Type": {"application/json"}}
	for i := 0; i < len(kv); i += 2 {
		h.Add(kv[i], kv[i+1])
	}
	return Reply{Status: status, Header: h, Body: body}
}

// Redirect returns a Reply with a redirect status and a Location header.
func Redirect(status int, location string) Reply {
	return Reply{Status: status, Header: http.Header{"Location": {location}}}
}

// Request is a copy of one received request.
type Request struct {
	Method string
	Path   string
	Header http.Header
	Body   []byte
}

// Server is a scripted loopback provider. It is safe for concurrent use.
type Server struct {
	// URL is the server's base URL, "http://127.0.0.1:port", without a
	// trailing slash.
	URL string

	srv *httptest.Server

	mu     sync.Mutex
	script []Reply
	reqs   []Request
}

// New starts a Server on 127.0.0.1 that plays script. It panics if it cannot
// listen on 127.0.0.1.
func New(script ...Reply) *Server {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic("loopback: listen on 127.0.0.1: " + err.Error())
	}
	s := &Server{script: append([]Reply(nil), script...)}
	s.srv = &httptest.Server{Listener: ln, Config: &http.Server{Handler: http.HandlerFunc(s.serve)}}
	s.srv.Start()
	s.URL = s.srv.URL
	return s
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	s.mu.Lock()
	n := len(s.reqs)
	s.reqs = append(s.reqs, Request{Method: r.Method, Path: r.URL.Path, Header: r.Header.Clone(), Body: body})
	reply := JSON(http.StatusInternalServerError, `{"error":{"message":"script exhausted","type":"server_error"}}`)
	if n < len(s.script) {
		reply = s.script[n]
	}
	s.mu.Unlock()
	if reply.Hangup {
		panic(http.ErrAbortHandler)
	}
	for k, v := range reply.Header {
		w.Header()[k] = append([]string(nil), v...)
	}
	status := reply.Status
	if status == 0 {
		status = http.StatusOK
	}
	w.WriteHeader(status)
	_, _ = io.WriteString(w, reply.Body)
	if reply.Chunks == nil && !reply.Abort {
		return
	}
	rc := http.NewResponseController(w)
	_ = rc.Flush()
	for _, c := range reply.Chunks {
		_, _ = io.WriteString(w, c)
		_ = rc.Flush()
	}
	if reply.Abort {
		// net/http closes the connection without ending the chunked body
		// and logs nothing for this sentinel.
		panic(http.ErrAbortHandler)
	}
}

// Requests returns copies of the requests received so far, in order.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Request, len(s.reqs))
	for i, r := range s.reqs {
		r.Header = r.Header.Clone()
		r.Body = append([]byte(nil), r.Body...)
		out[i] = r
	}
	return out
}

// Hits returns the number of requests received so far.
func (s *Server) Hits() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.reqs)
}

// Close shuts the server down and closes its connections, so that the
// client side's keep-alive goroutines end too.
func (s *Server) Close() {
	s.srv.CloseClientConnections()
	s.srv.Close()
}

// OpenAIChat returns a non-streaming OpenAI chat.completion body whose only
// choice holds content with finish_reason "stop".
func OpenAIChat(content string) string {
	return marshal(map[string]any{
		"id":      "chatcmpl-loopback-1",
		"object":  "chat.completion",
		"created": 1700000000,
		"model":   "gpt-4o-mini-2024-07-18",
		"choices": []any{map[string]any{
			"index":         0,
			"message":       map[string]any{"role": "assistant", "content": content, "refusal": nil},
			"logprobs":      nil,
			"finish_reason": "stop",
		}},
		"usage": map[string]any{"prompt_tokens": 12, "completion_tokens": 7, "total_tokens": 19},
	})
}

// OpenAIError returns an OpenAI error body; an empty code is sent as null.
func OpenAIError(typ, code, message string) string {
	var c any
	if code != "" {
		c = code
	}
	return marshal(map[string]any{"error": map[string]any{"message": message, "type": typ, "param": nil, "code": c}})
}

// OllamaChat returns the body of a non-streaming Ollama /api/chat answer
// ("stream":false) holding content, done true, done_reason "stop".
func OllamaChat(content string) string {
	return marshal(map[string]any{
		"model":                "llama3.2",
		"created_at":           "2024-01-01T00:00:00.000000Z",
		"message":              map[string]any{"role": "assistant", "content": content},
		"done_reason":          "stop",
		"done":                 true,
		"total_duration":       512345678,
		"load_duration":        12345678,
		"prompt_eval_count":    12,
		"prompt_eval_duration": 98765432,
		"eval_count":           7,
		"eval_duration":        345678901,
	})
}

// SSEKeepalive is an SSE comment event, the keep-alive some servers send
// before the first chunk. It carries no meaning.
const SSEKeepalive = ": keep-alive\n\n"

// SSEDone is the event that ends an OpenAI stream.
const SSEDone = "data: [DONE]\n\n"

// SSEEvent returns one SSE event carrying data ("data: <data>\n\n").
func SSEEvent(data string) string { return "data: " + data + "\n\n" }

// OpenAIChunk returns one chat.completion.chunk event (SSEEvent applied)
// whose delta holds content (none when empty) and whose finish_reason is
// finish (null when empty).
func OpenAIChunk(content, finish string) string {
	delta := map[string]any{}
	if content != "" {
		delta["content"] = content
	}
	var fr any
	if finish != "" {
		fr = finish
	}
	return openAIChunk(delta, fr)
}

func openAIChunk(delta map[string]any, finish any) string {
	return SSEEvent(marshal(map[string]any{
		"id":      "chatcmpl-loopback-1",
		"object":  "chat.completion.chunk",
		"created": 1700000000,
		"model":   "gpt-4o-mini-2024-07-18",
		"choices": []any{map[string]any{"index": 0, "delta": delta, "logprobs": nil, "finish_reason": finish}},
	}))
}

// OpenAIStream returns the events of a complete streamed completion: a role
// chunk (no content), one chunk per content piece, a finish_reason "stop"
// chunk and SSEDone.
func OpenAIStream(content ...string) []string {
	out := []string{openAIChunk(map[string]any{"role": "assistant", "content": ""}, nil)}
	for _, c := range content {
		out = append(out, OpenAIChunk(c, ""))
	}
	return append(out, OpenAIChunk("", "stop"), SSEDone)
}

// OllamaKeepalive is a blank NDJSON line, the keepalive recourse's Ollama
// codec recognizes (SPEC R14.2).
const OllamaKeepalive = "\n"

// OllamaChunk returns one streamed /api/chat line ("\n" included) holding
// content, done false.
func OllamaChunk(content string) string {
	return marshal(map[string]any{
		"model":      "llama3.2",
		"created_at": "2024-01-01T00:00:00.000000Z",
		"message":    map[string]any{"role": "assistant", "content": content},
		"done":       false,
	}) + "\n"
}

// OllamaDone returns the final streamed /api/chat line ("\n" included):
// empty content, done true, done_reason "stop", the metrics.
func OllamaDone() string {
	return marshal(map[string]any{
		"model":                "llama3.2",
		"created_at":           "2024-01-01T00:00:00.000000Z",
		"message":              map[string]any{"role": "assistant", "content": ""},
		"done_reason":          "stop",
		"done":                 true,
		"total_duration":       512345678,
		"load_duration":        12345678,
		"prompt_eval_count":    12,
		"prompt_eval_duration": 98765432,
		"eval_count":           7,
		"eval_duration":        345678901,
	}) + "\n"
}

// OllamaStream returns the lines of a complete streamed chat: one chunk per
// content piece, then OllamaDone.
func OllamaStream(content ...string) []string {
	var out []string
	for _, c := range content {
		out = append(out, OllamaChunk(c))
	}
	return append(out, OllamaDone())
}

// OllamaError returns an Ollama error body {"error":message}.
func OllamaError(message string) string {
	return marshal(map[string]any{"error": message})
}

// OllamaBusy is the message of Ollama's 503 when its queue is full.
const OllamaBusy = "server busy, please try again.  maximum pending requests exceeded"

func marshal(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}
