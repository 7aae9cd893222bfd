package main

import (
	"crypto/hmac"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"

	"github.com/recourse-dev/recourse/recoursetest"
)

// gateway is a scripted stand-in for the gateway on 127.0.0.1. Before it
// answers a request with the next reply of its script it checks what the
// real gateway would: the path, the method, the request's signature under
// the shared key and that the signed attempt ID was never seen before (a
// replayed request). A request that fails a check gets 401 and does not use
// up a reply. It is safe for concurrent use.
type gateway struct {
	// URL is the base URL, "http://127.0.0.1:port".
	URL string

	srv *httptest.Server
	key []byte

	mu       sync.Mutex
	script   []recoursetest.Step
	received []received
	attempts map[string]bool
}

// received is what the gateway saw of one request.
type received struct {
	// AttemptID is the X-Signature-Attempt value.
	AttemptID string
	// Signature is the X-Signature value.
	Signature string
	// Body is the request body (sensitive: tests compare it).
	Body []byte
	// Problem is why the request was refused, "" when it was accepted.
	Problem string
	// Status is the status the gateway answered.
	Status int
}

// newGateway starts a gateway that verifies signatures under key and
// answers accepted requests with script, then 500.
func newGateway(key []byte, script ...recoursetest.Step) *gateway {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic("custom-chain: listen on 127.0.0.1: " + err.Error())
	}
	g := &gateway{key: key, script: script, attempts: map[string]bool{}}
	g.srv = &httptest.Server{Listener: ln, Config: &http.Server{Handler: http.HandlerFunc(g.serve)}}
	g.srv.Start()
	g.URL = g.srv.URL
	return g
}

func (g *gateway) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	rec := received{AttemptID: r.Header.Get(SignatureAttemptHeader), Signature: r.Header.Get(SignatureHeader), Body: body}
	g.mu.Lock()
	switch {
	case r.URL.Path != gatewayPath:
		rec.Problem = "unknown path"
	case r.Method != http.MethodPost:
		rec.Problem = "not a POST"
	case rec.AttemptID == "":
		rec.Problem = "no signed attempt"
	case !hmac.Equal([]byte(rec.Signature), []byte(signature(g.key, r.Method, r.URL.Path, rec.AttemptID, body))):
		rec.Problem = "bad signature"
	case g.attempts[rec.AttemptID]:
		rec.Problem = "replayed attempt"
	}
	reply := recoursetest.JSON(http.StatusUnauthorized, recoursetest.OpenAIError("invalid_request_error", "", "request refused: "+rec.Problem))
	if rec.Problem == "" {
		g.attempts[rec.AttemptID] = true
		reply = recoursetest.JSON(http.StatusInternalServerError, recoursetest.OpenAIError("server_error", "", "script exhausted"))
		if len(g.script) > 0 {
			reply, g.script = g.script[0], g.script[1:]
		}
	}
	rec.Status = reply.Status
	if rec.Status == 0 {
		rec.Status = http.StatusOK
	}
	g.received = append(g.received, rec)
	g.mu.Unlock()
	for k, v := range reply.Header {
		w.Header()[k] = append([]string(nil), v...)
	}
	w.WriteHeader(rec.Status)
	// The script's steps are played simply: every chunk written and
	// flushed (a JSON step is one chunk with its Content-Length).
	rc := http.NewResponseController(w)
	for _, c := range reply.Chunks {
		_, _ = w.Write(c)
		_ = rc.Flush()
	}
}

// Received returns what the gateway saw, in order.
func (g *gateway) Received() []received {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]received(nil), g.received...)
}

// Close shuts the gateway down and closes its connections.
func (g *gateway) Close() {
	g.srv.CloseClientConnections()
	g.srv.Close()
}
