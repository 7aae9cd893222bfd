package recoursetest

import (
	"bytes"
	"context"
	"errors"
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
)

func TestJSONStepDeliversExactStatusHeadersAndBody(t *testing.T) {
	body := OpenAIError("rate_limit_exceeded", "rate_limit_exceeded", "Rate limit reached")
	f := start(t, JSON(http.StatusTooManyRequests, body, "Retry-After", "3"))

	resp := f.mustPost(t, "/v1/chat/completions", `{"model":"m"}`)
	got := mustReadAll(t, resp)

	eq(t, resp.StatusCode, http.StatusTooManyRequests, "status")
	eq(t, got, body, "body")
	eq(t, resp.ContentLength, int64(len(body)), "content length")
	eq(t, resp.TransferEncoding, []string(nil), "transfer encoding")
	eq(t, resp.Header.Get("Content-Type"), ContentTypeJSON, "content type")
	eq(t, resp.Header.Get("Retry-After"), "3", "retry-after")
	var keys []string
	for k := range resp.Header {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	eq(t, keys, []string{"Content-Length", "Content-Type", "Date", "Retry-After"}, "header names")
}

func TestJSONStepHeaderPairs(t *testing.T) {
	st := JSON(200, "{}", "Content-Type", "application/json; charset=utf-8", "X-A", "1", "X-A", "2")
	eq(t, st.Header.Values("Content-Type"), []string{"application/json; charset=utf-8"}, "content type override")
	eq(t, st.Header.Values("X-A"), []string{"1", "2"}, "repeated header")
	eq(t, st.Header.Get("Content-Length"), "2", "content length")

	defer func() {
		if recover() == nil {
			t.Fatal("JSON with an odd number of header arguments did not panic")
		}
	}()
	odd := []string{"Retry-After"}
	//lint:ignore SA5012 the odd count is what this test is about
	JSON(200, "{}", odd...)
}

func TestSSEStepStreamsChunked(t *testing.T) {
	events := OpenAIStream("Hel", "lo \"wörld\"\n")
	f := start(t, SSE(events...))

	resp := f.mustPost(t, "/v1/chat/completions", `{"stream":true}`)
	got := mustReadAll(t, resp)

	eq(t, resp.StatusCode, http.StatusOK, "status")
	eq(t, resp.Header.Get("Content-Type"), ContentTypeSSE, "content type")
	eq(t, resp.TransferEncoding, []string{"chunked"}, "transfer encoding")
	eq(t, got, strings.Join(events, ""), "body")
	if !strings.HasSuffix(got, "data: [DONE]\n\n") {
		t.Fatalf("stream does not end with [DONE]: %q", got)
	}
}

func TestNDJSONStepAppendsNewlines(t *testing.T) {
	st := NDJSON(`{"a":1}`, "{\"b\":2}\n")
	eq(t, len(st.Chunks), 2, "chunks")
	f := start(t, st, NDJSON(OllamaStream("Hi", " there")...))

	resp := f.mustPost(t, "/api/chat", `{}`)
	eq(t, mustReadAll(t, resp), "{\"a\":1}\n{\"b\":2}\n", "body")
	eq(t, resp.Header.Get("Content-Type"), ContentTypeNDJSON, "content type")

	resp = f.mustPost(t, "/api/chat", `{}`)
	eq(t, mustReadAll(t, resp), strings.Join(OllamaStream("Hi", " there"), ""), "ollama stream body")
}

func TestRawStepHasNoSniffedContentType(t *testing.T) {
	f := start(t, Step{Status: http.StatusBadGateway, Chunks: [][]byte{[]byte("<html>bad gateway</html>")}})

	resp := f.mustPost(t, "/", "")
	eq(t, mustReadAll(t, resp), "<html>bad gateway</html>", "body")
	eq(t, resp.StatusCode, http.StatusBadGateway, "status")
	if v, ok := resp.Header["Content-Type"]; ok {
		t.Fatalf("unexpected Content-Type %q", v)
	}
}

func TestStepDefaultsToStatusOK(t *testing.T) {
	f := start(t, Step{})
	resp := f.mustPost(t, "/", "")
	eq(t, mustReadAll(t, resp), "", "body")
	eq(t, resp.StatusCode, http.StatusOK, "status")
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
			eq(t, resp.StatusCode, http.StatusOK, "status")
			got, err := readAll(t, resp)
			if !errors.Is(err, io.ErrUnexpectedEOF) {
				t.Fatalf("read error = %v, want io.ErrUnexpectedEOF", err)
			}
			eq(t, len(got), tc.n, "bytes received")
			eq(t, string(got), tc.full[:tc.n], "partial body")

			// The next request gets a fresh connection and the next step.
			resp = f.mustPost(t, "/v1/chat/completions", "{}")
			eq(t, mustReadAll(t, resp), "{}", "next body")
			eq(t, f.srv.Count(), 2, "count")
		})
	}
}

func TestResetFailsBeforeHeadersAndRecordsRequest(t *testing.T) {
	f := start(t, Reset(), JSON(200, `{"ok":true}`))

	resp, err := f.post(t, context.Background(), "/v1/chat/completions", `{"attempt":1}`)
	if err == nil {
		resp.Body.Close()
		t.Fatalf("Do succeeded with status %d, want a transport error", resp.StatusCode)
	}
	if resp != nil {
		t.Fatalf("got a response with the error: %v", resp.Status)
	}
	reqs := f.srv.Requests()
	eq(t, len(reqs), 1, "requests")
	eq(t, string(reqs[0].Body), `{"attempt":1}`, "recorded body")

	resp = f.mustPost(t, "/v1/chat/completions", `{"attempt":2}`)
	eq(t, mustReadAll(t, resp), `{"ok":true}`, "next body")
	eq(t, f.srv.Count(), 2, "count")
}

func TestHoldReportsLeftWhenClientCancels(t *testing.T) {
	first := "data: {\"x\":1}\n\n"
	f := start(t, JSON(200, "{}"), SSE(first).Held())

	resp := f.mustPost(t, "/", "")
	mustReadAll(t, resp)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	resp, err := f.post(t, ctx, "/", "")
	if err != nil {
		t.Fatalf("Do: %v", err)
	}
	defer resp.Body.Close()
	buf := make([]byte, len(first))
	if _, err := io.ReadFull(resp.Body, buf); err != nil {
		t.Fatalf("read first event: %v", err)
	}
	eq(t, string(buf), first, "first event")

	// The response stays open: nothing more arrives until the client leaves.
	more := make(chan error, 1)
	go func() {
		_, err := resp.Body.Read(make([]byte, 1))
		more <- err
	}()
	stillPending(t, more, "end of held response")

	cancel()
	eq(t, within(t, f.srv.Left(), "Left report"), 1, "left index")
	if err := within(t, more, "read after cancel"); err == nil {
		t.Fatal("read after cancel succeeded")
	}
}

func TestHoldWithoutChunksFlushesHeaders(t *testing.T) {
	f := start(t, SSE().Held())
	ctx, cancel := context.WithCancel(context.Background())
	resp, err := f.post(t, ctx, "/", "")
	if err != nil {
		t.Fatalf("Do: %v", err)
	}
	eq(t, resp.StatusCode, http.StatusOK, "status")
	eq(t, resp.Header.Get("Content-Type"), ContentTypeSSE, "content type")
	cancel()
	resp.Body.Close()
	eq(t, within(t, f.srv.Left(), "Left report"), 0, "left index")
}

func TestCloseUnblocksHeldAndGatedHandlers(t *testing.T) {
	gate := make(chan struct{}) // never closed
	f := start(t, SSE("data: 1\n\n").Held(), SSE("data: 1\n\n", "data: 2\n\n").Gated(1, gate), JSON(200, "{}").Gated(-1, gate))

	var bodies []io.ReadCloser
	for i := 0; i < 2; i++ {
		resp := f.mustPost(t, "/", "")
		if _, err := io.ReadFull(resp.Body, make([]byte, len("data: 1\n\n"))); err != nil {
			t.Fatalf("read first event: %v", err)
		}
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
	eventually(t, func() bool { return f.srv.Count() == 3 }, "third request")

	closed := make(chan struct{})
	go func() {
		f.srv.Close()
		close(closed)
	}()
	within(t, closed, "Close")
	f.srv.Close() // idempotent

	for i, b := range bodies {
		_, err := io.ReadAll(b)
		if !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Fatalf("body %d: read error = %v, want io.ErrUnexpectedEOF", i, err)
		}
		b.Close()
	}
	if err := within(t, headerless, "gated-before-headers request"); err == nil {
		t.Fatal("request gated before headers got a response after Close")
	}
	select {
	case i := <-f.srv.Left():
		t.Fatalf("Close reported request %d on Left", i)
	default:
	}
}

func TestGateDelaysChunkUntilReleased(t *testing.T) {
	gate := make(chan struct{})
	f := start(t, SSE("data: a\n\n", "data: b\n\n").Gated(1, gate))

	resp := f.mustPost(t, "/", "")
	defer resp.Body.Close()
	buf := make([]byte, len("data: a\n\n"))
	if _, err := io.ReadFull(resp.Body, buf); err != nil {
		t.Fatalf("read first chunk: %v", err)
	}
	eq(t, string(buf), "data: a\n\n", "first chunk")

	rest := make(chan string, 1)
	go func() {
		b, _ := io.ReadAll(resp.Body)
		rest <- string(b)
	}()
	stillPending(t, rest, "gated chunk")
	close(gate)
	eq(t, within(t, rest, "gated chunk"), "data: b\n\n", "rest")
}

func TestGateAtZeroFlushesHeadersFirst(t *testing.T) {
	gate := make(chan struct{})
	f := start(t, SSE("data: a\n\n").Gated(0, gate))

	resp := f.mustPost(t, "/", "") // headers arrive although the gate is shut
	eq(t, resp.StatusCode, http.StatusOK, "status")
	close(gate)
	eq(t, mustReadAll(t, resp), "data: a\n\n", "body")
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
	eq(t, within(t, body, "end of response"), "data: a\n\n", "body")
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
	eventually(t, func() bool { return f.srv.Count() == 1 }, "request recorded")
	stillPending(t, done, "response headers")
	close(gate)
	eq(t, within(t, done, "response"), result{200, `{"late":true}`, nil}, "result")
}

func TestGatedClientLeavingEndsHandler(t *testing.T) {
	gate := make(chan struct{}) // never closed
	f := start(t, SSE("data: a\n\n").Gated(0, gate), SSE("data: a\n\n").Gated(0, gate).Held())

	for i := 0; i < 2; i++ {
		ctx, cancel := context.WithCancel(context.Background())
		resp, err := f.post(t, ctx, "/", "")
		if err != nil {
			t.Fatalf("Do: %v", err)
		}
		cancel()
		resp.Body.Close()
	}
	// Only the Hold step reports on Left.
	eq(t, within(t, f.srv.Left(), "Left report"), 1, "left index")
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
		eq(t, resp.StatusCode, c, "status")
		eq(t, resp.Header.Get("Location"), tgt.URL+"/v1/chat/completions", "location")
	}
	eq(t, tgt.Hits(), 0, "target hits")

	resp, err := f.client.Get(tgt.URL + "/anything")
	if err != nil {
		t.Fatalf("GET target: %v", err)
	}
	mustReadAll(t, resp)
	eq(t, tgt.Hits(), 1, "target hits after direct GET")
	tgt.Close()
	tgt.Close() // idempotent

	defer func() {
		if recover() == nil {
			t.Fatal("Redirect(200) did not panic")
		}
	}()
	Redirect(200, "/")
}

func TestExhaustedScriptAnswers500AndCounts(t *testing.T) {
	f := start(t, JSON(200, "{}"))

	resp := f.mustPost(t, "/", "")
	eq(t, mustReadAll(t, resp), "{}", "first body")
	for i := 0; i < 2; i++ {
		resp = f.mustPost(t, "/", "")
		eq(t, resp.StatusCode, http.StatusInternalServerError, "status")
		eq(t, resp.Header.Get("Content-Type"), ContentTypeJSON, "content type")
		eq(t, mustReadAll(t, resp), `{"error":{"message":"script exhausted","type":"server_error"}}`, "body")
	}
	eq(t, f.srv.Count(), 3, "count")

	f.srv.Push(JSON(201, `{"pushed":true}`))
	resp = f.mustPost(t, "/", "")
	eq(t, resp.StatusCode, 201, "pushed status")
	eq(t, mustReadAll(t, resp), `{"pushed":true}`, "pushed body")
	eq(t, f.srv.Count(), 4, "count after push")
}

func TestPushOnEmptyScript(t *testing.T) {
	f := start(t)
	f.srv.Push(JSON(200, "1"), JSON(200, "2"))
	for _, want := range []string{"1", "2"} {
		eq(t, mustReadAll(t, f.mustPost(t, "/", "")), want, "body")
	}
}

func TestRequestsRecordsEverythingExactly(t *testing.T) {
	f := start(t, JSON(200, "{}"), Reset(), JSON(200, "{}"))

	body := make([]byte, 300_000)
	for i := range body {
		body[i] = byte(i * 7)
	}
	req, err := http.NewRequest(http.MethodPost, f.srv.URL+"/v1/chat/completions?api-version=2024-02-01&x=%20y", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer sk-test")
	req.Header.Set("Idempotency-Key", "key-1")
	req.Header.Add("X-Multi", "a")
	req.Header.Add("X-Multi", "b")
	resp, err := f.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	mustReadAll(t, resp)

	if _, err := f.post(t, context.Background(), "/api/chat", "reset body"); err == nil {
		t.Fatal("Reset step did not fail the request")
	}
	resp, err = f.client.Get(f.srv.URL + "/api/tags")
	if err != nil {
		t.Fatal(err)
	}
	mustReadAll(t, resp)

	reqs := f.srv.Requests()
	eq(t, len(reqs), 3, "requests")
	r := reqs[0]
	eq(t, r.Method, http.MethodPost, "method")
	eq(t, r.Path, "/v1/chat/completions", "path")
	eq(t, r.RawQuery, "api-version=2024-02-01&x=%20y", "raw query")
	eq(t, r.Proto, "HTTP/1.1", "proto")
	eq(t, r.Body, body, "body")
	eq(t, r.Header.Get("Authorization"), "Bearer sk-test", "authorization")
	eq(t, r.Header.Get("Idempotency-Key"), "key-1", "idempotency key")
	eq(t, r.Header.Values("X-Multi"), []string{"a", "b"}, "multi header")
	eq(t, r.Header.Get("Content-Length"), "300000", "content length")
	eq(t, string(reqs[1].Body), "reset body", "reset body")
	eq(t, reqs[1].Path, "/api/chat", "reset path")
	eq(t, reqs[2].Method, http.MethodGet, "get method")
	eq(t, len(reqs[2].Body), 0, "get body")

	// Requests returns copies.
	reqs[0].Body[0]++
	reqs[0].Header.Set("Authorization", "changed")
	again := f.srv.Requests()
	eq(t, again[0].Body, body, "body after mutation")
	eq(t, again[0].Header.Get("Authorization"), "Bearer sk-test", "header after mutation")
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
			if err != nil {
				t.Errorf("Do: %v", err)
				return
			}
			b, err := readAll(t, resp)
			if err != nil {
				t.Errorf("read: %v", err)
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
	eq(t, f.srv.Count(), n, "count")
	for i, r := range f.srv.Requests() {
		eq(t, answers[string(r.Body)], fmt.Sprint(i), "answer for "+string(r.Body))
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
		if err != nil {
			t.Fatal(err)
		}
		mustReadAll(t, resp)
		eq(t, resp.Close, false, "resp.Close")
		eq(t, reused, want, fmt.Sprintf("keep-alive request %d reused", i))
	}

	f.srv.CloseIdleAfterEach(true)
	for i := 0; i < 2; i++ {
		resp, err := f.post(t, connTrace(&reused), "/", "")
		if err != nil {
			t.Fatal(err)
		}
		mustReadAll(t, resp)
		eq(t, resp.Close, true, "resp.Close (net/http consumes Connection: close)")
		// The first of these rides the kept-alive connection; the second
		// must not, because the server closed it.
		eq(t, reused, i == 0, fmt.Sprintf("close-idle request %d reused", i))
	}
}

func TestServersListenOnLoopbackOnly(t *testing.T) {
	f := start(t)
	tgt := NewTarget()
	defer tgt.Close()
	for _, raw := range []string{f.srv.URL, tgt.URL} {
		u, err := url.Parse(raw)
		if err != nil {
			t.Fatal(err)
		}
		host, _, err := net.SplitHostPort(u.Host)
		if err != nil {
			t.Fatal(err)
		}
		eq(t, host, "127.0.0.1", "host of "+raw)
	}
}

func TestStepHelpersCopy(t *testing.T) {
	gate := make(chan struct{})
	base := JSON(200, "{}")
	d := base.WithHeader("X-A", "1").Cut(3).Held().Gated(2, gate)
	eq(t, base.Header.Get("X-A"), "", "base header untouched")
	eq(t, base.CutAfter, 0, "base cut")
	eq(t, base.Hold, false, "base hold")
	eq(t, base.Gate == nil, true, "base gate")
	eq(t, d.Header.Get("X-A"), "1", "derived header")
	eq(t, d.CutAfter, 3, "derived cut")
	eq(t, d.Hold, true, "derived hold")
	eq(t, d.GateAt, 2, "derived gate at")
	eq(t, d.Gate == (<-chan struct{})(gate), true, "derived gate")
	eq(t, Step{}.WithHeader("X-B", "2").Header.Get("X-B"), "2", "nil header")
	eq(t, Reset().ResetBeforeHeaders, true, "reset")
	r := Redirect(308, "http://127.0.0.1:1/x")
	eq(t, r.Status, 308, "redirect status")
	eq(t, r.Header.Get("Location"), "http://127.0.0.1:1/x", "redirect location")
}
