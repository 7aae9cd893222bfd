package recoursetest

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestJSONStepDeliversExactStatusHeadersAndBody(t *testing.T) {
	body := OpenAIError("rate_limit_exceeded", "rate_limit_exceeded", "Rate limit reached")
	f := start(t, JSON(http.StatusTooManyRequests, body, "Retry-After", "3"))

	resp := f.mustPost(t, "/v1/chat/completions", `{"model":"m"}`)
	got := mustReadAll(t, resp)

	require.Equal(t, http.StatusTooManyRequests, resp.StatusCode, "status")
	require.Equal(t, body, got, "body")
	require.Equal(t, int64(len(body)), resp.ContentLength, "content length")
	require.Equal(t, []string(nil), resp.TransferEncoding, "transfer encoding")
	require.Equal(t, ContentTypeJSON, resp.Header.Get("Content-Type"), "content type")
	require.Equal(t, "3", resp.Header.Get("Retry-After"), "retry-after")
	var keys []string
	for k := range resp.Header {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	require.Equal(t, []string{"Content-Length", "Content-Type", "Date", "Retry-After"}, keys, "header names")
}

func TestJSONStepHeaderPairs(t *testing.T) {
	st := JSON(200, "{}", "Content-Type", "application/json; charset=utf-8", "X-A", "1", "X-A", "2")
	require.Equal(t, []string{"application/json; charset=utf-8"}, st.Header.Values("Content-Type"), "content type override")
	require.Equal(t, []string{"1", "2"}, st.Header.Values("X-A"), "repeated header")
	require.Equal(t, "2", st.Header.Get("Content-Length"), "content length")

	odd := []string{"Retry-After"}
	require.PanicsWithValue(t, "recoursetest: odd number of header arguments (1)", func() {
		//lint:ignore SA5012 the odd count is what this test is about
		JSON(200, "{}", odd...)
	}, "JSON with an odd number of header arguments")
}

func TestSSEStepStreamsChunked(t *testing.T) {
	events := OpenAIStream("Hel", "lo \"wörld\"\n")
	f := start(t, SSE(events...))

	resp := f.mustPost(t, "/v1/chat/completions", `{"stream":true}`)
	got := mustReadAll(t, resp)

	require.Equal(t, http.StatusOK, resp.StatusCode, "status")
	require.Equal(t, ContentTypeSSE, resp.Header.Get("Content-Type"), "content type")
	require.Equal(t, []string{"chunked"}, resp.TransferEncoding, "transfer encoding")
	require.Equal(t, strings.Join(events, ""), got, "body")
	require.True(t, strings.HasSuffix(got, "data: [DONE]\n\n"), "stream does not end with [DONE]: %q", got)
}

func TestNDJSONStepAppendsNewlines(t *testing.T) {
	st := NDJSON(`{"a":1}`, "{\"b\":2}\n")
	require.Equal(t, 2, len(st.Chunks), "chunks")
	f := start(t, st, NDJSON(OllamaStream("Hi", " there")...))

	resp := f.mustPost(t, "/api/chat", `{}`)
	require.Equal(t, "{\"a\":1}\n{\"b\":2}\n", mustReadAll(t, resp), "body")
	require.Equal(t, ContentTypeNDJSON, resp.Header.Get("Content-Type"), "content type")

	resp = f.mustPost(t, "/api/chat", `{}`)
	require.Equal(t, strings.Join(OllamaStream("Hi", " there"), ""), mustReadAll(t, resp), "ollama stream body")
}

func TestRawStepHasNoSniffedContentType(t *testing.T) {
	f := start(t, Step{Status: http.StatusBadGateway, Chunks: [][]byte{[]byte("<html>bad gateway</html>")}})

	resp := f.mustPost(t, "/", "")
	require.Equal(t, "<html>bad gateway</html>", mustReadAll(t, resp), "body")
	require.Equal(t, http.StatusBadGateway, resp.StatusCode, "status")
	require.NotContains(t, resp.Header, "Content-Type", "no sniffed Content-Type")
}

func TestStepDefaultsToStatusOK(t *testing.T) {
	f := start(t, Step{})
	resp := f.mustPost(t, "/", "")
	require.Equal(t, "", mustReadAll(t, resp), "body")
	require.Equal(t, http.StatusOK, resp.StatusCode, "status")
}

func TestCutTruncatesBodyAfterExactlyNBytes(t *testing.T) {
	events := []string{"data: {\"a\":1}\n\n", "data: {\"b\":2}\n\n", "data: [DONE]\n\n"}
	all := strings.Join(events, "")
	body := OpenAIChat("hello")
	cases := []struct {
		name string
		step Step
		full string
		n    int
	}{
		{"sse inside first chunk", SSE(events...).Cut(5), all, 5},
		{"sse inside later chunk", SSE(events...).Cut(len(events[0]) + 3), all, len(events[0]) + 3},
		{"sse at chunk boundary", SSE(events...).Cut(len(events[0])), all, len(events[0])},
		{"sse one byte short", SSE(events...).Cut(len(all) - 1), all, len(all) - 1},
		{"sse cut beyond body", SSE(events...).Cut(len(all) + 100), all, len(all)},
		{"json with content length", JSON(200, body).Cut(10), body, 10},
		{"ndjson", NDJSON(OllamaStream("x", "y")...).Cut(30), strings.Join(OllamaStream("x", "y"), ""), 30},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := start(t, tc.step, JSON(200, "{}"))

			resp := f.mustPost(t, "/v1/chat/completions", "{}")
			require.Equal(t, http.StatusOK, resp.StatusCode, "status")
			got, err := readAll(t, resp)
			require.ErrorIs(t, err, io.ErrUnexpectedEOF, "read error = %v, want io.ErrUnexpectedEOF", err)
			require.Equal(t, tc.n, len(got), "bytes received")
			require.Equal(t, tc.full[:tc.n], string(got), "partial body")

			// The next request gets a fresh connection and the next step.
			resp = f.mustPost(t, "/v1/chat/completions", "{}")
			require.Equal(t, "{}", mustReadAll(t, resp), "next body")
			require.Equal(t, 2, f.srv.Count(), "count")
		})
	}
}

func TestResetFailsBeforeHeadersAndRecordsRequest(t *testing.T) {
	f := start(t, Reset(), JSON(200, `{"ok":true}`))

	resp, err := f.post(t, context.Background(), "/v1/chat/completions", `{"attempt":1}`)
	if err == nil {
		resp.Body.Close()
	}
	require.Error(t, err, "a Reset step is a transport error")
	require.Nil(t, resp, "no response comes with the error")
	reqs := f.srv.Requests()
	require.Equal(t, 1, len(reqs), "requests")
	require.Equal(t, `{"attempt":1}`, string(reqs[0].Body), "recorded body")

	resp = f.mustPost(t, "/v1/chat/completions", `{"attempt":2}`)
	require.Equal(t, `{"ok":true}`, mustReadAll(t, resp), "next body")
	require.Equal(t, 2, f.srv.Count(), "count")
}

func TestHoldReportsLeftWhenClientCancels(t *testing.T) {
	first := "data: {\"x\":1}\n\n"
	f := start(t, JSON(200, "{}"), SSE(first).Held())

	resp := f.mustPost(t, "/", "")
	mustReadAll(t, resp)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	resp, err := f.post(t, ctx, "/", "")
	require.NoError(t, err, "Do")
	defer resp.Body.Close()
	buf := make([]byte, len(first))
	_, err = io.ReadFull(resp.Body, buf)
	require.NoError(t, err, "read first event")
	require.Equal(t, first, string(buf), "first event")

	// The response stays open: nothing more arrives until the client leaves.
	more := make(chan error, 1)
	go func() {
		_, err := resp.Body.Read(make([]byte, 1))
		more <- err
	}()
	stillPending(t, more, "end of held response")

	cancel()
	require.Equal(t, 1, within(t, f.srv.Left(), "Left report"), "left index")
	require.Error(t, within(t, more, "read after cancel"), "a read after the cancel fails")
}

func TestHoldWithoutChunksFlushesHeaders(t *testing.T) {
	f := start(t, SSE().Held())
	ctx, cancel := context.WithCancel(context.Background())
	resp, err := f.post(t, ctx, "/", "")
	require.NoError(t, err, "Do")
	require.Equal(t, http.StatusOK, resp.StatusCode, "status")
	require.Equal(t, ContentTypeSSE, resp.Header.Get("Content-Type"), "content type")
	cancel()
	resp.Body.Close()
	require.Equal(t, 0, within(t, f.srv.Left(), "Left report"), "left index")
}

func TestCloseUnblocksHeldAndGatedHandlers(t *testing.T) {
	gate := make(chan struct{}) // never closed
	f := start(t, SSE("data: 1\n\n").Held(), SSE("data: 1\n\n", "data: 2\n\n").Gated(1, gate), JSON(200, "{}").Gated(-1, gate))

	var bodies []io.ReadCloser
	for i := 0; i < 2; i++ {
		resp := f.mustPost(t, "/", "")
		_, err := io.ReadFull(resp.Body, make([]byte, len("data: 1\n\n")))
		require.NoError(t, err, "read first event")
		bodies = append(bodies, resp.Body)
	}
	headerless := make(chan error, 1)
	go func() {
		resp, err := f.post(t, context.Background(), "/", "")
		if err == nil {
			resp.Body.Close()
		}
		headerless <- err
	}()
	require.Eventually(t, func() bool { return f.srv.Count() == 3 }, deadline, time.Millisecond, "third request")

	closed := make(chan struct{})
	go func() {
		f.srv.Close()
		close(closed)
	}()
	within(t, closed, "Close")
	f.srv.Close() // idempotent

	for i, b := range bodies {
		_, err := io.ReadAll(b)
		require.ErrorIs(t, err, io.ErrUnexpectedEOF, "body %d: read error = %v, want io.ErrUnexpectedEOF", i, err)
		b.Close()
	}
	require.Error(t, within(t, headerless, "gated-before-headers request"), "a request gated before headers gets no response after Close")
	assert.Empty(t, f.srv.Left(), "Close reports no request on Left")
}

func TestGateDelaysChunkUntilReleased(t *testing.T) {
	gate := make(chan struct{})
	f := start(t, SSE("data: a\n\n", "data: b\n\n").Gated(1, gate))

	resp := f.mustPost(t, "/", "")
	defer resp.Body.Close()
	buf := make([]byte, len("data: a\n\n"))
	_, err := io.ReadFull(resp.Body, buf)
	require.NoError(t, err, "read first chunk")
	require.Equal(t, "data: a\n\n", string(buf), "first chunk")

	rest := make(chan string, 1)
	go func() {
		b, _ := io.ReadAll(resp.Body)
		rest <- string(b)
	}()
	stillPending(t, rest, "gated chunk")
	close(gate)
	require.Equal(t, "data: b\n\n", within(t, rest, "gated chunk"), "rest")
}

func TestGateAtZeroFlushesHeadersFirst(t *testing.T) {
	gate := make(chan struct{})
	f := start(t, SSE("data: a\n\n").Gated(0, gate))

	resp := f.mustPost(t, "/", "") // headers arrive although the gate is shut
	require.Equal(t, http.StatusOK, resp.StatusCode, "status")
	close(gate)
	require.Equal(t, "data: a\n\n", mustReadAll(t, resp), "body")
}

func TestGateAfterLastChunkDelaysEnd(t *testing.T) {
	gate := make(chan struct{})
	f := start(t, SSE("data: a\n\n").Gated(1, gate))

	resp := f.mustPost(t, "/", "")
	body := make(chan string, 1)
	go func() {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		body <- string(b)
	}()
	stillPending(t, body, "end of response")
	close(gate)
	require.Equal(t, "data: a\n\n", within(t, body, "end of response"), "body")
}

func TestNegativeGateDelaysHeaders(t *testing.T) {
	gate := make(chan struct{})
	f := start(t, JSON(200, `{"late":true}`).Gated(-1, gate))

	type result struct {
		status int
		body   string
		err    error
	}
	done := make(chan result, 1)
	go func() {
		resp, err := f.post(t, context.Background(), "/", "")
		if err != nil {
			done <- result{err: err}
			return
		}
		b, err := readAll(t, resp)
		done <- result{resp.StatusCode, string(b), err}
	}()
	require.Eventually(t, func() bool { return f.srv.Count() == 1 }, deadline, time.Millisecond, "request recorded")
	stillPending(t, done, "response headers")
	close(gate)
	require.Equal(t, result{200, `{"late":true}`, nil}, within(t, done, "response"), "result")
}

func TestGatedClientLeavingEndsHandler(t *testing.T) {
	gate := make(chan struct{}) // never closed
	f := start(t, SSE("data: a\n\n").Gated(0, gate), SSE("data: a\n\n").Gated(0, gate).Held())

	for i := 0; i < 2; i++ {
		ctx, cancel := context.WithCancel(context.Background())
		resp, err := f.post(t, ctx, "/", "")
		require.NoError(t, err, "Do")
		cancel()
		resp.Body.Close()
	}
	// Only the Hold step reports on Left.
	require.Equal(t, 1, within(t, f.srv.Left(), "Left report"), "left index")
}

func TestRedirectIsNotFollowedAndTargetCounts(t *testing.T) {
	tgt := NewTarget()
	defer tgt.Close()
	codes := []int{301, 302, 303, 307, 308}
	var steps []Step
	for _, c := range codes {
		steps = append(steps, Redirect(c, tgt.URL+"/v1/chat/completions"))
	}
	f := start(t, steps...)

	for _, c := range codes {
		resp := f.mustPost(t, "/v1/chat/completions", "{}")
		mustReadAll(t, resp)
		require.Equal(t, c, resp.StatusCode, "status")
		require.Equal(t, tgt.URL+"/v1/chat/completions", resp.Header.Get("Location"), "location")
	}
	require.Equal(t, 0, tgt.Hits(), "target hits")

	resp, err := f.client.Get(tgt.URL + "/anything")
	require.NoError(t, err, "GET target")
	mustReadAll(t, resp)
	require.Equal(t, 1, tgt.Hits(), "target hits after direct GET")
	tgt.Close()
	tgt.Close() // idempotent

	require.PanicsWithValue(t, "recoursetest: Redirect status 200 is not 3xx", func() { Redirect(200, "/") })
}

func TestExhaustedScriptAnswers500AndCounts(t *testing.T) {
	f := start(t, JSON(200, "{}"))

	resp := f.mustPost(t, "/", "")
	require.Equal(t, "{}", mustReadAll(t, resp), "first body")
	for i := 0; i < 2; i++ {
		resp = f.mustPost(t, "/", "")
		require.Equal(t, http.StatusInternalServerError, resp.StatusCode, "status")
		require.Equal(t, ContentTypeJSON, resp.Header.Get("Content-Type"), "content type")
		require.Equal(t, `{"error":{"message":"script exhausted","type":"server_error"}}`, mustReadAll(t, resp), "body")
	}
	require.Equal(t, 3, f.srv.Count(), "count")

	f.srv.Push(JSON(201, `{"pushed":true}`))
	resp = f.mustPost(t, "/", "")
	require.Equal(t, 201, resp.StatusCode, "pushed status")
	require.Equal(t, `{"pushed":true}`, mustReadAll(t, resp), "pushed body")
	require.Equal(t, 4, f.srv.Count(), "count after push")
}

func TestPushOnEmptyScript(t *testing.T) {
	f := start(t)
	f.srv.Push(JSON(200, "1"), JSON(200, "2"))
	for _, want := range []string{"1", "2"} {
		require.Equal(t, want, mustReadAll(t, f.mustPost(t, "/", "")), "body")
	}
}

func TestRequestsRecordsEverythingExactly(t *testing.T) {
	f := start(t, JSON(200, "{}"), Reset(), JSON(200, "{}"))

	body := make([]byte, 300_000)
	for i := range body {
		body[i] = byte(i * 7)
	}
	req, err := http.NewRequest(http.MethodPost, f.srv.URL+"/v1/chat/completions?api-version=2024-02-01&x=%20y", bytes.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer sk-test")
	req.Header.Set("Idempotency-Key", "key-1")
	req.Header.Add("X-Multi", "a")
	req.Header.Add("X-Multi", "b")
	resp, err := f.client.Do(req)
	require.NoError(t, err)
	mustReadAll(t, resp)

	_, err = f.post(t, context.Background(), "/api/chat", "reset body")
	require.Error(t, err, "a Reset step fails the request")
	resp, err = f.client.Get(f.srv.URL + "/api/tags")
	require.NoError(t, err)
	mustReadAll(t, resp)

	reqs := f.srv.Requests()
	require.Equal(t, 3, len(reqs), "requests")
	r := reqs[0]
	require.Equal(t, http.MethodPost, r.Method, "method")
	require.Equal(t, "/v1/chat/completions", r.Path, "path")
	require.Equal(t, "api-version=2024-02-01&x=%20y", r.RawQuery, "raw query")
	require.Equal(t, "HTTP/1.1", r.Proto, "proto")
	require.Equal(t, body, r.Body, "body")
	require.Equal(t, "Bearer sk-test", r.Header.Get("Authorization"), "authorization")
	require.Equal(t, "key-1", r.Header.Get("Idempotency-Key"), "idempotency key")
	require.Equal(t, []string{"a", "b"}, r.Header.Values("X-Multi"), "multi header")
	require.Equal(t, "300000", r.Header.Get("Content-Length"), "content length")
	require.Equal(t, "reset body", string(reqs[1].Body), "reset body")
	require.Equal(t, "/api/chat", reqs[1].Path, "reset path")
	require.Equal(t, http.MethodGet, reqs[2].Method, "get method")
	require.Equal(t, 0, len(reqs[2].Body), "get body")

	// Requests returns copies.
	reqs[0].Body[0]++
	reqs[0].Header.Set("Authorization", "changed")
	again := f.srv.Requests()
	require.Equal(t, body, again[0].Body, "body after mutation")
	require.Equal(t, "Bearer sk-test", again[0].Header.Get("Authorization"), "header after mutation")
}

func TestConcurrentRequestsConsumeStepsInOrder(t *testing.T) {
	const n = 32
	var steps []Step
	for i := 0; i < n; i++ {
		steps = append(steps, JSON(200, fmt.Sprint(i)))
	}
	f := start(t, steps...)

	var mu sync.Mutex
	answers := map[string]string{} // request body -> response body
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, err := f.post(t, context.Background(), "/", fmt.Sprintf("req-%d", i))
			if !assert.NoError(t, err, "Do") {
				return
			}
			b, err := readAll(t, resp)
			if !assert.NoError(t, err, "read") {
				return
			}
			mu.Lock()
			answers[fmt.Sprintf("req-%d", i)] = string(b)
			mu.Unlock()
		}()
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	require.Equal(t, n, f.srv.Count(), "count")
	for i, r := range f.srv.Requests() {
		require.Equal(t, fmt.Sprint(i), answers[string(r.Body)], "answer for "+string(r.Body))
	}
}

// connTrace returns a context that records whether the connection was reused.
func connTrace(reused *bool) context.Context {
	return httptrace.WithClientTrace(context.Background(), &httptrace.ClientTrace{
		GotConn: func(info httptrace.GotConnInfo) { *reused = info.Reused },
	})
}

func TestKeepAliveAndCloseIdleAfterEach(t *testing.T) {
	f := start(t, JSON(200, "1"), JSON(200, "2"), JSON(200, "3"), JSON(200, "4"))

	var reused bool
	for i, want := range []bool{false, true} {
		resp, err := f.post(t, connTrace(&reused), "/", "")
		require.NoError(t, err)
		mustReadAll(t, resp)
		require.Equal(t, false, resp.Close, "resp.Close")
		require.Equal(t, want, reused, fmt.Sprintf("keep-alive request %d reused", i))
	}

	f.srv.CloseIdleAfterEach(true)
	for i := 0; i < 2; i++ {
		resp, err := f.post(t, connTrace(&reused), "/", "")
		require.NoError(t, err)
		mustReadAll(t, resp)
		require.Equal(t, true, resp.Close, "resp.Close (net/http consumes Connection: close)")
		// The first of these rides the kept-alive connection; the second
		// must not, because the server closed it.
		require.Equal(t, i == 0, reused, fmt.Sprintf("close-idle request %d reused", i))
	}
}

func TestServersListenOnLoopbackOnly(t *testing.T) {
	f := start(t)
	tgt := NewTarget()
	defer tgt.Close()
	for _, raw := range []string{f.srv.URL, tgt.URL} {
		u, err := url.Parse(raw)
		require.NoError(t, err)
		host, _, err := net.SplitHostPort(u.Host)
		require.NoError(t, err)
		require.Equal(t, "127.0.0.1", host, "host of "+raw)
	}
}

func TestStepHelpersCopy(t *testing.T) {
	gate := make(chan struct{})
	base := JSON(200, "{}")
	d := base.WithHeader("X-A", "1").Cut(3).Held().Gated(2, gate)
	require.Equal(t, "", base.Header.Get("X-A"), "base header untouched")
	require.Equal(t, 0, base.CutAfter, "base cut")
	require.Equal(t, false, base.Hold, "base hold")
	require.Equal(t, true, base.Gate == nil, "base gate")
	require.Equal(t, "1", d.Header.Get("X-A"), "derived header")
	require.Equal(t, 3, d.CutAfter, "derived cut")
	require.Equal(t, true, d.Hold, "derived hold")
	require.Equal(t, 2, d.GateAt, "derived gate at")
	require.Equal(t, true, d.Gate == (<-chan struct{})(gate), "derived gate")
	require.Equal(t, "2", Step{}.WithHeader("X-B", "2").Header.Get("X-B"), "nil header")
	require.Equal(t, true, Reset().ResetBeforeHeaders, "reset")
	r := Redirect(308, "http://127.0.0.1:1/x")
	require.Equal(t, 308, r.Status, "redirect status")
	require.Equal(t, "http://127.0.0.1:1/x", r.Header.Get("Location"), "redirect location")
}
