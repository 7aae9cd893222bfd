package recoursetest_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/recourse-dev/recourse/chain"
	"github.com/recourse-dev/recourse/chat"
	"github.com/recourse-dev/recourse/client"
	"github.com/recourse-dev/recourse/codecs/ollama"
	"github.com/recourse-dev/recourse/codecs/openai"
	"github.com/recourse-dev/recourse/codecs/openai/responses"
	"github.com/recourse-dev/recourse/layers/retry"
	"github.com/recourse-dev/recourse/recoursetest"
)

// A test of code that uses recourse scripts a transient 503 and then a
// success, and checks that the chain recovered with exactly two POSTs.
func Example() {
	srv := recoursetest.NewServer(
		recoursetest.JSON(503, recoursetest.OpenAIError("server_error", "", "overloaded")),
		recoursetest.JSON(200, recoursetest.OpenAIChat("Hello!")),
	)
	defer srv.Close()

	ch, err := chain.Default(openai.New(), chain.WithPolicy(retry.Policy{
		MaxAttempts: 3,
		BaseDelay:   new(time.Duration(0)), // no backoff wait in a test
	}))
	if err != nil {
		panic(err)
	}
	cl, err := client.New(srv.URL, ch, client.WithAPIKey("sk-test"))
	if err != nil {
		panic(err)
	}
	comp, err := cl.Complete(context.Background(), &chat.Request{
		Model:    "gpt-4o-mini",
		Messages: []chat.Message{{Role: chat.User, Content: "Say hello."}},
	})
	if err != nil {
		panic(err)
	}
	fmt.Println(comp.Message.Content)
	fmt.Println(srv.Count(), "POSTs to", srv.Requests()[1].Path)
	// Output:
	// Hello!
	// 2 POSTs to /v1/chat/completions
}

// A Server answers requests with its steps in order; once they run out it
// answers HTTP 500.
func ExampleNewServer() {
	srv := recoursetest.NewServer(
		recoursetest.JSON(429, recoursetest.OpenAIError("rate_limit_exceeded", "rate_limit_exceeded", "slow down"), "Retry-After", "2"),
		recoursetest.JSON(200, `{"ok":true}`),
	)
	defer srv.Close()
	for range 3 {
		resp, err := http.Post(srv.URL+"/v1/chat/completions", "application/json", strings.NewReader(`{}`))
		if err != nil {
			panic(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		fmt.Println(resp.StatusCode, string(body))
	}
	fmt.Println(srv.Count(), "requests")
	// Output:
	// 429 {"error":{"message":"slow down","type":"rate_limit_exceeded","param":null,"code":"rate_limit_exceeded"}}
	// 200 {"ok":true}
	// 500 {"error":{"message":"script exhausted","type":"server_error"}}
	// 3 requests
}

// Requests returns what the server received, for example to check the
// bodies a client sent.
func ExampleServer_Requests() {
	srv := recoursetest.NewServer(recoursetest.JSON(200, recoursetest.OllamaChat("hi")))
	defer srv.Close()
	resp, err := http.Post(srv.URL+"/api/chat?x=1", "application/json", strings.NewReader(`{"model":"llama3.2"}`))
	if err != nil {
		panic(err)
	}
	resp.Body.Close()
	for _, r := range srv.Requests() {
		fmt.Println(r.Method, r.Path, r.RawQuery, r.Header.Get("Content-Type"), string(r.Body))
	}
	// Output:
	// POST /api/chat x=1 application/json {"model":"llama3.2"}
}

// JSON sets the status, Content-Type, Content-Length and any extra header.
func ExampleJSON() {
	srv := recoursetest.NewServer(recoursetest.JSON(429, `{"error":"slow down"}`, "Retry-After", "3"))
	defer srv.Close()
	resp, err := http.Post(srv.URL, "application/json", nil)
	if err != nil {
		panic(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	fmt.Println(resp.StatusCode, resp.Header.Get("Content-Type"), resp.ContentLength, resp.Header.Get("Retry-After"))
	fmt.Println(string(body))
	// Output:
	// 429 application/json 21 3
	// {"error":"slow down"}
}

// SSE streams the events one by one.
func ExampleSSE() {
	srv := recoursetest.NewServer(recoursetest.SSE("data: {\"n\":1}\n\n", "data: {\"n\":2}\n\n"))
	defer srv.Close()
	resp, err := http.Post(srv.URL, "application/json", nil)
	if err != nil {
		panic(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	fmt.Println(resp.StatusCode, resp.Header.Get("Content-Type"), resp.TransferEncoding)
	fmt.Print(string(body))
	// Output:
	// 200 text/event-stream [chunked]
	// data: {"n":1}
	//
	// data: {"n":2}
}

// NDJSON streams the lines one by one and ends each with a newline.
func ExampleNDJSON() {
	srv := recoursetest.NewServer(recoursetest.NDJSON(`{"n":1}`, `{"n":2}`))
	defer srv.Close()
	resp, err := http.Post(srv.URL, "application/json", nil)
	if err != nil {
		panic(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	fmt.Println(resp.StatusCode, resp.Header.Get("Content-Type"))
	fmt.Printf("%q\n", body)
	// Output:
	// 200 application/x-ndjson
	// "{\"n\":1}\n{\"n\":2}\n"
}

// A cut body ends with io.ErrUnexpectedEOF after exactly n bytes.
func ExampleStep_Cut() {
	srv := recoursetest.NewServer(recoursetest.JSON(200, recoursetest.OpenAIChat("hello")).Cut(10))
	defer srv.Close()
	resp, err := http.Post(srv.URL, "application/json", nil)
	if err != nil {
		panic(err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	fmt.Printf("%d %q %v\n", resp.StatusCode, body, errors.Is(err, io.ErrUnexpectedEOF))
	// Output:
	// 200 "{\"id\":\"cha" true
}

// WithHeader adds a response header to any step.
func ExampleStep_WithHeader() {
	srv := recoursetest.NewServer(recoursetest.SSE(recoursetest.OpenAIStream("hi")...).WithHeader("X-Request-Id", "req-1"))
	defer srv.Close()
	resp, err := http.Post(srv.URL, "application/json", nil)
	if err != nil {
		panic(err)
	}
	resp.Body.Close()
	fmt.Println(resp.Header.Get("Content-Type"), resp.Header.Get("X-Request-Id"))
	// Output:
	// text/event-stream req-1
}

// A redirect answer keeps its status and Location; a client that does not
// follow it never reaches the Target.
func ExampleRedirect() {
	target := recoursetest.NewTarget()
	defer target.Close()
	srv := recoursetest.NewServer(recoursetest.Redirect(307, target.URL+"/elsewhere"))
	defer srv.Close()
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error {
		return http.ErrUseLastResponse
	}}
	resp, err := client.Post(srv.URL, "application/json", nil)
	if err != nil {
		panic(err)
	}
	resp.Body.Close()
	fmt.Println(resp.StatusCode, resp.Header.Get("Location") == target.URL+"/elsewhere", target.Hits())
	// Output:
	// 307 true 0
}

// A Target counts the requests that reach it: a plain http.Client follows
// the redirect, a recourse chain refuses it.
func ExampleNewTarget() {
	target := recoursetest.NewTarget()
	defer target.Close()
	srv := recoursetest.NewServer(
		recoursetest.Redirect(307, target.URL),
		recoursetest.Redirect(307, target.URL),
	)
	defer srv.Close()

	resp, err := http.Post(srv.URL, "application/json", strings.NewReader(`{}`))
	if err != nil {
		panic(err)
	}
	resp.Body.Close()
	fmt.Println("net/http:", resp.StatusCode, "target hits", target.Hits())

	ch, err := chain.Default(openai.New())
	if err != nil {
		panic(err)
	}
	_, err = (&http.Client{Transport: ch}).Post(srv.URL, "application/json", strings.NewReader(`{}`))
	fmt.Println("recourse refused:", err != nil, "target hits", target.Hits())
	// Output:
	// net/http: 200 target hits 1
	// recourse refused: true target hits 1
}

// A reset fails the round trip before any response byte; the request is
// still counted.
func ExampleReset() {
	srv := recoursetest.NewServer(recoursetest.Reset())
	defer srv.Close()
	_, err := http.Post(srv.URL, "application/json", strings.NewReader(`{}`))
	fmt.Println(err != nil, srv.Count())
	// Output:
	// true 1
}

func ExampleOpenAIChat() {
	fmt.Println(recoursetest.OpenAIChat("Hello!"))
	// Output:
	// {"id":"chatcmpl-1","object":"chat.completion","created":1700000000,"model":"gpt-4o-mini-2024-07-18","choices":[{"index":0,"message":{"role":"assistant","content":"Hello!","refusal":null},"logprobs":null,"finish_reason":"stop"}],"usage":{"prompt_tokens":12,"completion_tokens":7,"total_tokens":19},"system_fingerprint":"fp_44709d6fcb"}
}

func ExampleOpenAIError() {
	fmt.Println(recoursetest.OpenAIError("server_error", "", "overloaded"))
	fmt.Println(recoursetest.OpenAIError("rate_limit_exceeded", "rate_limit_exceeded", "slow down"))
	// Output:
	// {"error":{"message":"overloaded","type":"server_error","param":null,"code":null}}
	// {"error":{"message":"slow down","type":"rate_limit_exceeded","param":null,"code":"rate_limit_exceeded"}}
}

func ExampleOpenAIStream() {
	for _, ev := range recoursetest.OpenAIStream("Hel", "lo") {
		fmt.Println(strings.TrimSpace(ev))
	}
	// Output:
	// data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1700000000,"model":"gpt-4o-mini-2024-07-18","system_fingerprint":"fp_44709d6fcb","choices":[{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}],"usage":null}
	// data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1700000000,"model":"gpt-4o-mini-2024-07-18","system_fingerprint":"fp_44709d6fcb","choices":[{"index":0,"delta":{"content":"Hel"},"logprobs":null,"finish_reason":null}],"usage":null}
	// data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1700000000,"model":"gpt-4o-mini-2024-07-18","system_fingerprint":"fp_44709d6fcb","choices":[{"index":0,"delta":{"content":"lo"},"logprobs":null,"finish_reason":null}],"usage":null}
	// data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1700000000,"model":"gpt-4o-mini-2024-07-18","system_fingerprint":"fp_44709d6fcb","choices":[{"index":0,"delta":{},"logprobs":null,"finish_reason":"stop"}],"usage":null}
	// data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1700000000,"model":"gpt-4o-mini-2024-07-18","system_fingerprint":"fp_44709d6fcb","choices":[],"usage":{"prompt_tokens":12,"completion_tokens":7,"total_tokens":19}}
	// data: [DONE]
}

func ExampleOllamaChat() {
	fmt.Println(recoursetest.OllamaChat("Hello!"))
	// Output:
	// {"model":"llama3.2","created_at":"2024-01-01T00:00:00.000000Z","message":{"role":"assistant","content":"Hello!"},"done_reason":"stop","done":true,"total_duration":512345678,"load_duration":12345678,"prompt_eval_count":12,"prompt_eval_duration":98765432,"eval_count":7,"eval_duration":345678901}
}

func ExampleOllamaError() {
	fmt.Println(recoursetest.OllamaError("server busy"))
	// Output:
	// {"error":"server busy"}
}

func ExampleOllamaStream() {
	for _, line := range recoursetest.OllamaStream("Hel", "lo") {
		fmt.Print(line)
	}
	// Output:
	// {"model":"llama3.2","created_at":"2024-01-01T00:00:00.000000Z","message":{"role":"assistant","content":"Hel"},"done":false}
	// {"model":"llama3.2","created_at":"2024-01-01T00:00:00.000000Z","message":{"role":"assistant","content":"lo"},"done":false}
	// {"model":"llama3.2","created_at":"2024-01-01T00:00:00.000000Z","message":{"role":"assistant","content":""},"done_reason":"stop","done":true,"total_duration":512345678,"load_duration":12345678,"prompt_eval_count":12,"prompt_eval_duration":98765432,"eval_count":7,"eval_duration":345678901}
}

// An Ollama chain reads a streamed NDJSON answer from the server.
func ExampleNDJSON_ollama() {
	srv := recoursetest.NewServer(recoursetest.NDJSON(recoursetest.OllamaStream("Hel", "lo")...))
	defer srv.Close()
	ch, err := chain.Default(ollama.New())
	if err != nil {
		panic(err)
	}
	cl, err := client.New(srv.URL, ch)
	if err != nil {
		panic(err)
	}
	for ev := range cl.StreamEvents(context.Background(), &chat.Request{
		Model:    recoursetest.OllamaModel,
		Messages: []chat.Message{{Role: chat.User, Content: "Say hello."}},
	}) {
		switch ev.Type {
		case client.EventContent:
			fmt.Printf("content %q\n", ev.Text)
		case client.EventDone:
			fmt.Println("done", ev.Completion.FinishReason, ev.Completion.Model)
		case client.EventError:
			fmt.Println("error", ev.Err)
		}
	}
	// Output:
	// content "Hel"
	// content "lo"
	// done stop llama3.2
}

// A background Responses stream cut after two deltas is read again from the
// last event the client had, and the client sees the whole answer once.
func ExampleResponsesBackground() {
	const id = "resp_1"
	srv := recoursetest.NewServer(
		recoursetest.ResponsesBackground(id, recoursetest.ResponsesEvents(id, "Hel", "lo", "!")...).CutEvents(6),
		recoursetest.ResponsesResume(id),
	)
	defer srv.Close()

	ch, err := chain.Default(responses.New(responses.Background()), chain.WithPolicy(retry.Policy{
		MaxAttempts: 3,
		BaseDelay:   new(time.Duration(0)), // no backoff wait in a test
	}))
	if err != nil {
		panic(err)
	}
	cl, err := client.New(srv.URL, ch, client.WithAPIKey("sk-test"))
	if err != nil {
		panic(err)
	}
	var text strings.Builder
	for chunk, err := range cl.Stream(context.Background(), &chat.Request{
		Model: "gpt-4.1-mini", Messages: []chat.Message{{Role: chat.User, Content: "Say hello."}}, Stream: true,
	}) {
		if err != nil {
			panic(err)
		}
		text.WriteString(chunk.Content)
	}
	fmt.Println(text.String())
	for _, r := range srv.Requests() {
		if r.RawQuery != "" {
			r.Path += "?" + r.RawQuery
		}
		fmt.Println(r.Method, r.Path)
	}
	// Output:
	// Hello!
	// POST /v1/responses
	// GET /v1/responses/resp_1?starting_after=5&stream=true
}

// ResponsesEvents numbers its events from 0; the deltas start at 4.
func ExampleResponsesEvents() {
	evs := recoursetest.ResponsesEvents("resp_1", "Hi")
	fmt.Println(len(evs))
	fmt.Print(evs[4])
	// Output:
	// 9
	// event: response.output_text.delta
	// data: {"content_index":0,"delta":"Hi","item_id":"msg_1","output_index":0,"sequence_number":4,"type":"response.output_text.delta"}
}

// ResponsesJSON is a completed response object.
func ExampleResponsesJSON() {
	srv := recoursetest.NewServer(recoursetest.JSON(200, recoursetest.ResponsesJSON("resp_1", "Hello.")))
	defer srv.Close()
	ch, _ := chain.Default(responses.New())
	cl, _ := client.New(srv.URL, ch)
	comp, err := cl.Complete(context.Background(), &chat.Request{
		Model: "gpt-4.1-mini", Messages: []chat.Message{{Role: chat.User, Content: "Say hello."}},
	})
	if err != nil {
		panic(err)
	}
	fmt.Println(comp.ID, comp.Message.Content)
	// Output:
	// resp_1 Hello.
}

// Polling and cancelling a background response, with a plain http.Client.
func ExampleResponsesRetrieve() {
	const id = "resp_1"
	srv := recoursetest.NewServer(
		recoursetest.ResponsesBackground(id, recoursetest.ResponsesEvents(id, "Hi")[:5]...),
		recoursetest.ResponsesRetrieve(id),
		recoursetest.ResponsesCancel(id),
		recoursetest.ResponsesResume(id),
	)
	defer srv.Close()
	send := func(method, path string) string {
		req, _ := http.NewRequest(method, srv.URL+path, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			panic(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	send(http.MethodPost, recoursetest.ResponsesPath)
	fmt.Println(strings.Contains(send(http.MethodGet, recoursetest.ResponsesPath+"/"+id), `"status":"in_progress"`))
	send(http.MethodPost, recoursetest.ResponsesPath+"/"+id+"/cancel")
	fmt.Println(srv.Cancelled(id))
	fmt.Println(strings.Count(send(http.MethodGet, recoursetest.ResponsesPath+"/"+id+"?stream=true&starting_after=3"), "event: "))
	http.DefaultClient.CloseIdleConnections()
	// Output:
	// true
	// true
	// 1
}

// ResponsesCancel marks the response cancelled.
func ExampleResponsesCancel() {
	const id = "resp_1"
	srv := recoursetest.NewServer(recoursetest.ResponsesBackground(id, recoursetest.ResponsesEvents(id, "Hi")...), recoursetest.ResponsesCancel(id))
	defer srv.Close()
	for _, path := range []string{recoursetest.ResponsesPath, recoursetest.ResponsesPath + "/" + id + "/cancel"} {
		resp, err := http.Post(srv.URL+path, "application/json", strings.NewReader(`{}`))
		if err != nil {
			panic(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	http.DefaultClient.CloseIdleConnections()
	fmt.Println(srv.Cancelled(id))
	// Output:
	// true
}

// ResponsesResume plays the logged events after the cursor of the read.
func ExampleResponsesResume() {
	const id = "resp_1"
	srv := recoursetest.NewServer(recoursetest.ResponsesBackground(id, recoursetest.ResponsesEvents(id, "Hi")...), recoursetest.ResponsesResume(id))
	defer srv.Close()
	for _, path := range []string{recoursetest.ResponsesPath, recoursetest.ResponsesPath + "/" + id + "?stream=true&starting_after=6"} {
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			panic(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if strings.Contains(path, "starting_after") {
			fmt.Println(strings.Count(string(b), "event: "))
		}
	}
	http.DefaultClient.CloseIdleConnections()
	// Output:
	// 2
}

// CutEvents breaks a stream after a number of events.
func ExampleStep_CutEvents() {
	srv := recoursetest.NewServer(recoursetest.SSE(recoursetest.ResponsesEvents("resp_1", "Hi")...).CutEvents(2))
	defer srv.Close()
	resp, err := http.Get(srv.URL + recoursetest.ResponsesPath)
	if err != nil {
		panic(err)
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	http.DefaultClient.CloseIdleConnections()
	fmt.Println(strings.Count(string(b), "event: "), errors.Is(err, io.ErrUnexpectedEOF))
	// Output:
	// 2 true
}

// A memory server is reached through its Transport. Inside a
// testing/synctest bubble (synctest.Test(t, func(t *testing.T) { ... }))
// the same code waits out backoffs and stall limits on the bubble's clock,
// so a test of a 30 s Retry-After takes no real time; outside one, as here,
// it behaves like NewServer without a TCP port.
func ExampleNewMemoryServer() {
	srv := recoursetest.NewMemoryServer(
		recoursetest.JSON(503, recoursetest.OpenAIError("server_error", "", "overloaded")),
		recoursetest.JSON(200, recoursetest.OpenAIChat("Hello!")),
	)
	defer srv.Close()

	ch, err := chain.Default(openai.New(), chain.WithTransport(srv.Transport()),
		chain.WithPolicy(retry.Policy{MaxAttempts: 2, BaseDelay: new(time.Duration(0))}))
	if err != nil {
		panic(err)
	}
	cl, err := client.New(srv.URL, ch)
	if err != nil {
		panic(err)
	}
	comp, err := cl.Complete(context.Background(), &chat.Request{
		Model:    "gpt-4o-mini",
		Messages: []chat.Message{{Role: chat.User, Content: "Say hello."}},
	})
	if err != nil {
		panic(err)
	}
	fmt.Println(comp.Message.Content, srv.Count(), strings.HasSuffix(srv.URL, ".recoursetest.invalid"))
	// Output:
	// Hello! 2 true
}

// ServeMemory puts a handler of the test's own (here a stand-in for a
// gateway) on the memory network: inside a testing/synctest bubble its
// waits, and a recourse chain's behind it, run on the bubble's clock.
func ExampleServeMemory() {
	srv, tr := recoursetest.ServeMemory(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "%s %s", r.Method, r.URL.Path)
	}))
	defer srv.Close()
	defer tr.CloseIdleConnections()

	resp, err := (&http.Client{Transport: tr}).Get(srv.URL + "/v1/models")
	if err != nil {
		panic(err)
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		panic(err)
	}
	fmt.Println(string(b), strings.HasPrefix(srv.URL, "http://s"))
	// Output:
	// GET /v1/models true
}
