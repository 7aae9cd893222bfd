package proxy_test

import (
	"context"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"time"

	"github.com/recourse-dev/recourse/layers/retry"
	"github.com/recourse-dev/recourse/proxy"
	"github.com/recourse-dev/recourse/recoursetest"
)

// A proxy in front of a provider that is overloaded once: the client sees
// only the recovered answer.
func ExampleNew() {
	upstream := recoursetest.NewServer(
		recoursetest.JSON(503, recoursetest.OpenAIError("server_error", "", "overloaded")),
		recoursetest.JSON(200, recoursetest.OpenAIChat("Hello!")),
	)
	defer upstream.Close()

	policy := retry.Recommended() // four attempts
	policy.BaseDelay = new(0 * time.Millisecond)
	h, err := proxy.New(proxy.Config{Provider: "openai", Upstream: upstream.URL, Policy: policy})
	if err != nil {
		fmt.Println(err)
		return
	}
	srv := httptest.NewServer(h)
	defer srv.Close()

	// A client changes only its base URL: http://127.0.0.1:port/v1.
	resp, err := http.Post(srv.URL+"/v1/chat/completions", "application/json",
		strings.NewReader(`{"model":"gpt-4o-mini","messages":[{"role":"user","content":"hi"}]}`))
	if err != nil {
		fmt.Println(err)
		return
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	fmt.Println(resp.StatusCode, strings.Contains(string(body), "Hello!"))
	fmt.Println("upstream POSTs:", upstream.Count())
	// Output:
	// 200 true
	// upstream POSTs: 2
}

// Serve runs a Handler until its context is done, then shuts down
// gracefully; the command cancels the context on SIGTERM.
func ExampleServe() {
	h, err := proxy.New(proxy.Config{Provider: "ollama", Upstream: "http://127.0.0.1:11434"})
	if err != nil {
		fmt.Println(err)
		return
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	done := make(chan error, 1)
	go func() { done <- proxy.Serve(ctx, ln, h, proxy.DefaultGrace, nil) }()

	resp, err := http.Get("http://" + ln.Addr().String() + "/healthz")
	if err != nil {
		fmt.Println(err)
		return
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	http.DefaultClient.CloseIdleConnections()
	fmt.Print(resp.StatusCode, " ", string(body))

	stop() // as SIGTERM does
	fmt.Println("Serve returned:", <-done)
	// Output:
	// 200 ok
	// Serve returned: <nil>
}

// The endpoints an openai proxy recovers; every other request is
// forwarded once.
func ExampleEndpoints() {
	es, err := proxy.Endpoints("openai")
	if err != nil {
		panic(err)
	}
	for _, e := range es {
		fmt.Println(e)
	}
	// Output:
	// POST /v1/chat/completions
	// POST /v1/responses
	// GET /v1/responses/{id}
}

// A file of client keys holds each key's SHA-256, a name and, optionally,
// the routes it may use; the keys themselves stay with the clients.
func ExampleParseClientKeys() {
	sum := proxy.HashKey("rp-team-a-key")
	file := "# sha256 name routes\n" + hex.EncodeToString(sum[:]) + " team-a completions,/v1/models\n"
	keys, err := proxy.ParseClientKeys(strings.NewReader(file))
	if err != nil {
		panic(err)
	}
	fmt.Println(keys[0].Name, keys[0].Routes, keys[0].Hash == sum)
	// Output:
	// team-a [completions /v1/models] true
}

// KeyHeader names the header in which each wire's upstream takes its key.
func ExampleKeyHeader() {
	for _, p := range []string{"openai", "anthropic", "gemini"} {
		name, prefix, err := proxy.KeyHeader(p)
		if err != nil {
			panic(err)
		}
		fmt.Printf("%s: %s: %q\n", p, name, prefix)
	}
	// Output:
	// openai: Authorization: "Bearer "
	// anthropic: X-Api-Key: ""
	// gemini: X-Goog-Api-Key: ""
}

// One proxy for two wires: OpenAI's chat completions and Claude's Messages
// API, each recovered in front of its own upstream.
func ExampleNewRouter() {
	openaiUp := recoursetest.NewServer(
		recoursetest.JSON(503, recoursetest.OpenAIError("server_error", "", "overloaded")),
		recoursetest.JSON(200, recoursetest.OpenAIChat("Hello from chat!")))
	defer openaiUp.Close()
	claudeUp := recoursetest.NewServer(
		recoursetest.AnthropicOverloaded(),
		recoursetest.JSON(200, recoursetest.AnthropicMessage("Hello from Claude!")))
	defer claudeUp.Close()

	policy := retry.Recommended()
	policy.BaseDelay = new(0 * time.Millisecond)
	rt, err := proxy.NewRouter(proxy.RouterConfig{Routes: []proxy.Route{
		{Name: "openai", Config: proxy.Config{Provider: "openai", Upstream: openaiUp.URL, Policy: policy}},
		{Name: "claude", Config: proxy.Config{Provider: "anthropic", Upstream: claudeUp.URL, Policy: policy}},
	}})
	if err != nil {
		fmt.Println(err)
		return
	}
	srv := httptest.NewServer(rt)
	defer srv.Close()

	for _, c := range []struct{ path, body string }{
		{"/v1/chat/completions", `{"model":"gpt-4o-mini","messages":[{"role":"user","content":"hi"}]}`},
		{"/v1/messages", `{"model":"claude-sonnet-4-5","max_tokens":64,"messages":[{"role":"user","content":"hi"}]}`},
	} {
		resp, err := http.Post(srv.URL+c.path, "application/json", strings.NewReader(c.body))
		if err != nil {
			fmt.Println(err)
			return
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		fmt.Println(c.path, resp.StatusCode, "attempts:", resp.Header.Get("X-Recourse-Attempts"), strings.Contains(string(b), "Hello from"))
	}
	// Output:
	// /v1/chat/completions 200 attempts: 2 true
	// /v1/messages 200 attempts: 2 true
}
