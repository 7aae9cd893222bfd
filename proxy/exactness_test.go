package proxy

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/recourse-dev/recourse/recoursetest"
)

// R21.9: a completion body whose Content-Length is over the limit is
// refused on its header alone: the client that asked for 100 Continue
// gets the 413 instead, and no byte of the body is read — for the chat
// endpoint and for the Responses API alike.
func TestR21_9_OversizedContentLengthIsRefusedBeforeContinue(t *testing.T) {
	for _, path := range []string{"/v1/chat/completions", "/v1/responses"} {
		t.Run(path, func(t *testing.T) {
			r := newRig(t, "openai", func(c *Config) { c.MaxBodyBytes = 1 << 20 })
			conn, err := net.Dial("tcp", strings.TrimPrefix(r.proxy.URL, "http://"))
			require.NoError(t, err)
			defer conn.Close()
			require.NoError(t, conn.SetDeadline(time.Now().Add(10*time.Second)))
			// The header only: a client that waits for 100 Continue sends
			// no body byte until it gets one.
			_, err = fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: proxy\r\nContent-Type: application/json\r\nContent-Length: %d\r\nExpect: 100-continue\r\n\r\n", path, 64<<20)
			require.NoError(t, err)
			resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
			require.NoError(t, err)
			defer resp.Body.Close()
			assert.Equal(t, http.StatusRequestEntityTooLarge, resp.StatusCode, "the answer to the header is the 413, not 100 Continue")
			assert.Equal(t, "false", resp.Header.Get("X-Should-Retry"))
			assert.Zero(t, r.up.Count(), "nothing reached the upstream")
		})
	}
}

// R21.9, with a real client: Go's transport sends the body only after 100
// Continue, so a refusal on the header leaves every body byte unread.
func TestR21_9_ClientWaitingForContinueSendsNoBody(t *testing.T) {
	r := newRig(t, "openai", func(c *Config) { c.MaxBodyBytes = 1 << 20 },
		recoursetest.JSON(200, recoursetest.OpenAIChat("unused")))
	body := &countingReader{n: 64 << 20}
	req, err := http.NewRequest(http.MethodPost, r.proxy.URL+"/v1/chat/completions", body)
	require.NoError(t, err)
	req.ContentLength = body.n
	req.Header.Set("Expect", "100-continue")
	tr := &http.Transport{ExpectContinueTimeout: time.Minute}
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr}).Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	assert.Equal(t, http.StatusRequestEntityTooLarge, resp.StatusCode)
	assert.Zero(t, body.read, "no body byte was read")
	assert.Zero(t, r.up.Count())
}

// countingReader yields n zero bytes and counts what was read.
type countingReader struct {
	n, read int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	if c.read >= c.n {
		return 0, fmt.Errorf("countingReader: read past its end")
	}
	k := min(int64(len(p)), c.n-c.read)
	clear(p[:k])
	c.read += k
	return int(k), nil
}

// endpointCase is a request to a recovered endpoint and the upstream's
// success for it.
type endpointCase struct {
	provider string
	e        Endpoint
	path     string // e.Path with {id} filled in
	body     string // the request body; empty for a GET
	ok       recoursetest.Step
}

// endpointCases returns one case per recovered endpoint of every provider,
// from the proxy's own list (Endpoints).
func endpointCases(t *testing.T) []endpointCase {
	t.Helper()
	var out []endpointCase
	for _, p := range Providers() {
		es, err := Endpoints(p)
		require.NoError(t, err)
		for _, e := range es {
			c := endpointCase{provider: p, e: e, path: strings.ReplaceAll(strings.ReplaceAll(e.Path, "{id}", "resp_1"), "{model}", "gemini-2.5-flash")}
			switch {
			case p == "gemini":
				c.body, c.ok = geminiBody, recoursetest.JSON(200, recoursetest.GeminiChat("hi"))
			case p == "ollama":
				c.body, c.ok = ollamaBody, recoursetest.JSON(200, recoursetest.OllamaChat("hi"))
			case p == "anthropic":
				c.body, c.ok = claudeBody, recoursetest.JSON(200, recoursetest.AnthropicMessage("hi"))
			case strings.HasPrefix(e.Path, responsesPath) && e.Method == http.MethodPost:
				c.body, c.ok = `{"model":"gpt-4o-mini","input":"hello"}`, recoursetest.JSON(200, recoursetest.ResponsesJSON("resp_1", "hi"))
			case strings.HasPrefix(e.Path, responsesPath):
				c.ok = recoursetest.JSON(200, recoursetest.ResponsesJSON("resp_1", "hi"))
			default:
				c.body, c.ok = chatBody, recoursetest.JSON(200, recoursetest.OpenAIChat("hi"))
			}
			out = append(out, c)
		}
	}
	require.NotEmpty(t, out)
	return out
}

// R21.11: every endpoint the proxy lists as recovered is recovered: a 503
// then a 200 reaches the client as the 200, after two wire attempts.
func TestR21_11_ListedEndpointsAreRecovered(t *testing.T) {
	for _, c := range endpointCases(t) {
		t.Run(c.provider+" "+c.e.String(), func(t *testing.T) {
			r := newRig(t, c.provider, func(cfg *Config) { cfg.Policy.Admit = allowAll },
				recoursetest.JSON(503, `{"error":{"message":"busy"}}`), c.ok)
			got := r.do(t, c.e.Method, c.path, c.body)
			require.NoError(t, got.err)
			assert.Equal(t, http.StatusOK, got.status, got.body)
			assert.Equal(t, 2, r.up.Count(), "recovered: two wire attempts")
		})
	}
}

// R21.8: a request that is a recovered endpoint in all but spelling is
// refused with a clear error in the wire's shape, never forwarded once
// without recovery; nothing reaches the upstream.
func TestR21_8_MisspelledEndpointIsRefusedNotForwarded(t *testing.T) {
	for _, c := range endpointCases(t) {
		spellings := []string{"/" + c.path, c.path + "/", strings.Replace(c.path, "/", "/./", 2), strings.ToUpper(c.path[:3]) + c.path[3:],
			strings.Replace(c.path, "/", "//", 2)}
		for _, sp := range spellings {
			t.Run(c.provider+" "+c.e.Method+" "+sp, func(t *testing.T) {
				r := newRig(t, c.provider, func(cfg *Config) { cfg.Policy.Admit = allowAll },
					recoursetest.JSON(503, `{"error":{"message":"busy"}}`), c.ok)
				req, err := http.NewRequest(c.e.Method, r.proxy.URL, strings.NewReader(c.body))
				require.NoError(t, err)
				req.URL.Path, req.URL.RawPath = sp, ""
				if c.body == "" {
					req.Body, req.ContentLength = nil, 0
				}
				resp, err := r.client.Do(req)
				require.NoError(t, err)
				defer resp.Body.Close()
				var b strings.Builder
				_, _ = bufio.NewReader(resp.Body).WriteTo(&b)
				assert.Equal(t, http.StatusBadRequest, resp.StatusCode, b.String())
				assert.Contains(t, b.String(), c.e.String(), "the error names the endpoint")
				assert.Contains(t, b.String(), "spelled otherwise")
				assert.Equal(t, "false", resp.Header.Get("X-Should-Retry"))
				assert.Zero(t, r.up.Count(), "nothing was forwarded")
				r.logged(t, `"kind":"refused"`)
			})
		}
	}
}

// R21.8: a path that is no recovered endpoint however it is spelled, or a
// method the endpoint does not recover, is still forwarded as it is.
func TestR21_8_OtherPathsAreStillForwarded(t *testing.T) {
	for _, c := range []struct{ method, path string }{
		{http.MethodGet, "/v1/models/"},
		{http.MethodGet, "/v1/chat/completions/"},
		{http.MethodPost, "/v1/responses/resp_1/cancel/"},
		{http.MethodGet, "//v1/files"},
	} {
		r := newRig(t, "openai", nil, recoursetest.JSON(200, `{}`))
		got := r.do(t, c.method, c.path, "")
		assert.Equal(t, http.StatusOK, got.status, c.path)
		assert.Equal(t, 1, r.up.Count(), c.path)
	}
}

// R21.11: the package documentation and the CONTRACT name every endpoint
// the proxy recovers (Endpoints), as the command's -h does.
func TestR21_11_DocAndContractNameTheRecoveredEndpoints(t *testing.T) {
	doc, err := os.ReadFile("doc.go")
	require.NoError(t, err)
	contract, err := os.ReadFile("../CONTRACT.md")
	require.NoError(t, err)
	section := string(contract)
	if i := strings.Index(section, "## R21."); i >= 0 {
		section = section[i:]
	}
	flat := func(s string) string {
		var b strings.Builder
		for _, line := range strings.Split(s, "\n") {
			b.WriteString(strings.TrimPrefix(strings.TrimSpace(line), "//"))
			b.WriteByte(' ')
		}
		return strings.Join(strings.Fields(strings.ReplaceAll(b.String(), "`", "")), " ")
	}
	docText, contractText := flat(string(doc)), flat(section)
	for _, c := range endpointCases(t) {
		want := c.e.String()
		assert.True(t, strings.Contains(docText, want), "doc.go names %s", want)
		assert.True(t, strings.Contains(contractText, want), "CONTRACT R21 names %s", want)
	}
}

// R21.10: a stream that delivered its finish but ended before its end
// marker (data: [DONE], R13.3) ends with an in-band error that says the end
// marker was missing, on the chat wire of openai and omlx alike.
func TestR21_10_FinishWithoutEndMarkerSaysSo(t *testing.T) {
	for _, p := range []string{"openai", "omlx"} {
		t.Run(p, func(t *testing.T) {
			events := recoursetest.OpenAIStream("Hel", "lo")
			r := newRig(t, p, nil, recoursetest.SSE(events[:len(events)-1]...))
			got := r.post(t, "/v1/chat/completions", streamBody)
			require.Error(t, got.err, "the stream does not end cleanly")
			tail := got.body[strings.LastIndex(got.body, "data: "):]
			assert.Contains(t, tail, `"error"`)
			assert.Contains(t, tail, "without its end marker", tail)
		})
	}
}

// lockedWriter is a ResponseWriter a test may read while a handler writes.
type lockedWriter struct {
	mu     sync.Mutex
	header http.Header
	body   strings.Builder
}

func (w *lockedWriter) Header() http.Header { return w.header }
func (w *lockedWriter) WriteHeader(int)     {}
func (w *lockedWriter) Flush()              {}
func (w *lockedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.body.Write(p)
}
func (w *lockedWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.body.String()
}

// cutStream runs a streaming completion of provider whose upstream holds
// after its first output frame, cancels the request's context with cause
// once that frame reached the client, and returns what the client got
// after it.
func cutStream(t *testing.T, provider, path, body string, frames []string, cause error) string {
	t.Helper()
	// Gated after the first output: the frames before it are held for it
	// (R13.9).
	at := 2
	if strings.Contains(frames[0], "response.created") {
		at = 5
	}
	gate := make(chan struct{})
	defer close(gate)
	up := recoursetest.NewServer(recoursetest.SSE(frames...).Gated(at, gate))
	defer up.Close()
	h, err := New(Config{Provider: provider, Upstream: up.URL, Policy: testPolicy(&sleeps{})})
	require.NoError(t, err)
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	req := httptest.NewRequestWithContext(ctx, http.MethodPost, path, strings.NewReader(body))
	w := &lockedWriter{header: http.Header{}}
	done := make(chan any, 1)
	go func() {
		defer func() { done <- recover() }()
		h.ServeHTTP(w, req)
	}()
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(w.String(), frames[at-1]) {
		require.True(t, time.Now().Before(deadline), "the first frames never arrived")
		time.Sleep(time.Millisecond)
	}
	cancel(cause)
	select {
	case p := <-done:
		assert.Equal(t, http.ErrAbortHandler, p, "the stream is cut, not ended")
	case <-time.After(10 * time.Second):
		t.Fatal("the handler did not return")
	}
	return w.String()[len(strings.Join(frames[:at], "")):]
}

// R21.10: a stream cut by the proxy's shutdown ends with an in-band error
// whose code is shutdown and whose text says so; a stream its client
// cancelled does not carry that code.
func TestR21_10_ShutdownCutIsToldFromAClientCancel(t *testing.T) {
	chat := recoursetest.OpenAIStream("Hel", "lo")
	for _, c := range []struct{ provider, path, body string }{
		{"openai", "/v1/chat/completions", streamBody},
		{"omlx", "/v1/chat/completions", streamBody},
	} {
		t.Run(c.provider, func(t *testing.T) {
			tail := cutStream(t, c.provider, c.path, c.body, chat, ErrShutdown)
			assert.Contains(t, tail, `"code":"shutdown"`, tail)
			assert.Contains(t, tail, ErrShutdown.Error())
			tail = cutStream(t, c.provider, c.path, c.body, chat, context.Canceled)
			assert.NotContains(t, tail, "shutdown", tail)
		})
	}
	t.Run("responses", func(t *testing.T) {
		evs := recoursetest.ResponsesEvents("resp_1", "Hel", "lo")
		body := `{"model":"gpt-4o-mini","input":"hello","stream":true}`
		tail := cutStream(t, "openai", "/v1/responses", body, evs, ErrShutdown)
		assert.Contains(t, tail, `"code":"shutdown"`, tail)
		tail = cutStream(t, "openai", "/v1/responses", body, evs, context.Canceled)
		assert.NotContains(t, tail, "shutdown", tail)
	})
	t.Run("ollama", func(t *testing.T) {
		lines := recoursetest.OllamaStream("Hel", "lo")
		tail := cutStream(t, "ollama", "/api/chat", `{"model":"llama3.2","messages":[{"role":"user","content":"hello"}]}`, lines, ErrShutdown)
		assert.Contains(t, tail, ErrShutdown.Error(), "the dialect has no code: the text says it")
	})
}
