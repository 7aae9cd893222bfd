package main

import (
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/recourse-dev/recourse/proxy"
	"github.com/recourse-dev/recourse/recoursetest"
)

// The keys of the routes tests: each held key and the client's proxy key
// must never appear in anything the proxy writes but the upstream request.
const (
	heldOpenAI  = "sk-openai-HELD-CANARY-1"
	heldClaude  = "sk-ant-HELD-CANARY-2"
	heldGemini  = "AIza-HELD-CANARY-3"
	teamKeyText = "rp-team-CANARY-4"
)

// do sends one request to the proxy with headers kv and reads the answer.
func do(t *testing.T, c *http.Client, method, url, body string, kv ...string) (int, http.Header, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(kv); i += 2 {
		req.Header.Set(kv[i], kv[i+1])
	}
	resp, err := c.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err, url)
	return resp.StatusCode, resp.Header, string(b)
}

// clientKeysFile writes a client keys file admitting teamKeyText to every
// route and returns its path.
func clientKeysFile(t *testing.T) string {
	t.Helper()
	sum := proxy.HashKey(teamKeyText)
	p := filepath.Join(t.TempDir(), "client-keys")
	require.NoError(t, os.WriteFile(p, []byte(hex.EncodeToString(sum[:])+" team\n"), 0o600))
	return p
}

// R21.15, R21.16: one proxy process, configured by one file, recovers an
// OpenAI chat and a Responses call, a Claude, a Gemini, an Ollama and an
// oMLX call, each on its own scripted upstream and with its wire's rules —
// a 503 (Claude's 529) then a success is one answer after two attempts —,
// holding each hosted provider's key and admitting only a client with a
// proxy key; no key appears in the log or the metrics, and a client
// without a proxy key reaches no upstream.
func TestR21_16_OneProcessEveryWire(t *testing.T) {
	fail := recoursetest.JSON(503, recoursetest.OpenAIError("server_error", "", "overloaded"))
	ups := map[string]*recoursetest.Server{
		"openai": recoursetest.NewServer(fail, recoursetest.JSON(200, recoursetest.OpenAIChat("chat")),
			fail, recoursetest.SSE(recoursetest.ResponsesEvents("resp_1", "resp")...)),
		"claude": recoursetest.NewServer(recoursetest.AnthropicOverloaded(), recoursetest.AnthropicStream(recoursetest.AnthropicEvents("claude")...)),
		"gemini": recoursetest.NewServer(recoursetest.JSON(503, `{"error":{"code":503,"message":"overloaded","status":"UNAVAILABLE"}}`),
			recoursetest.JSON(200, recoursetest.GeminiChat("gemini"))),
		"local": recoursetest.NewServer(recoursetest.JSON(503, recoursetest.OllamaError("busy")),
			recoursetest.NDJSON(recoursetest.OllamaStream("ollama")...)),
		"mlx": recoursetest.NewServer(fail, recoursetest.JSON(200, recoursetest.OpenAIChat("mlx"))),
	}
	for _, up := range ups {
		defer up.Close()
	}
	file := writeConfig(t, fmt.Sprintf(`listen: 127.0.0.1:0
client-keys: %s
base-delay: 0s
max-attempts: 3
routes:
	- name: openai
		provider: openai
		upstream: %s
		upstream-key-env: OPENAI_KEY
	- name: claude
		provider: anthropic
		upstream: %s
		upstream-key-env: CLAUDE_KEY
		first-output-timeout: 60s
	- name: gemini
		provider: gemini
		upstream: %s
		upstream-key-env: GEMINI_KEY
	- name: local
		provider: ollama
		upstream: %s
		admit: allow
	- name: mlx
		provider: omlx
		prefix: /mlx
		upstream: %s
		admit: allow
`, clientKeysFile(t), ups["openai"].URL, ups["claude"].URL, ups["gemini"].URL, ups["local"].URL, ups["mlx"].URL))
	p := start(t, []string{"-config", file}, "OPENAI_KEY="+heldOpenAI, "CLAUDE_KEY="+heldClaude, "GEMINI_KEY="+heldGemini)
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	c := &http.Client{Transport: tr}

	status, _, _ := do(t, c, http.MethodPost, p.url+"/v1/chat/completions", `{"model":"m","messages":[]}`)
	assert.Equal(t, http.StatusUnauthorized, status, "no proxy key")
	for _, up := range ups {
		assert.Zero(t, up.Count(), "a refused client reaches no upstream")
	}
	for _, call := range []struct {
		route, path, body, want string
		kv                      []string
	}{
		{"openai", "/v1/chat/completions", `{"model":"gpt-4o-mini","messages":[{"role":"user","content":"hi"}]}`, "chat", []string{"Authorization", "Bearer " + teamKeyText}},
		{"openai", "/v1/responses", `{"model":"gpt-4o-mini","input":"hi","stream":true}`, "resp", []string{"Authorization", "Bearer " + teamKeyText}},
		{"claude", "/v1/messages", `{"model":"claude-sonnet-4-5","max_tokens":64,"stream":true,"messages":[{"role":"user","content":"hi"}]}`, "claude", []string{"x-api-key", teamKeyText, "anthropic-version", "2023-06-01"}},
		{"gemini", "/v1beta/models/gemini-2.5-flash:generateContent", `{"contents":[{"role":"user","parts":[{"text":"hi"}]}]}`, "gemini", []string{"x-goog-api-key", teamKeyText}},
		{"local", "/api/chat", `{"model":"llama3.2","messages":[{"role":"user","content":"hi"}]}`, "ollama", []string{"Authorization", "Bearer " + teamKeyText}},
		{"mlx", "/mlx/v1/chat/completions", `{"model":"m","messages":[{"role":"user","content":"hi"}]}`, "mlx", []string{"Authorization", "Bearer " + teamKeyText}},
	} {
		status, hd, body := do(t, c, http.MethodPost, p.url+call.path, call.body, call.kv...)
		assert.Equal(t, http.StatusOK, status, call.path)
		assert.Contains(t, body, call.want, call.path)
		assert.Equal(t, "2", hd.Get("X-Recourse-Attempts"), call.path)
	}
	held := map[string][2]string{"openai": {"Authorization", "Bearer " + heldOpenAI}, "claude": {"X-Api-Key", heldClaude}, "gemini": {"X-Goog-Api-Key", heldGemini}}
	for name, up := range ups {
		reqs := up.Requests()
		want := 2
		if name == "openai" {
			want = 4
		}
		assert.Len(t, reqs, want, name)
		for _, q := range reqs {
			if h, ok := held[name]; ok {
				assert.Equal(t, h[1], q.Header.Get(h[0]), "%s holds its own key", name)
			}
			for hn, vs := range q.Header {
				for _, v := range vs {
					assert.NotContains(t, v, teamKeyText, "%s %s", name, hn)
					for other, h := range held {
						if other != name {
							assert.NotContains(t, v, strings.TrimPrefix(h[1], "Bearer "), "%s got %s's key", name, other)
						}
					}
				}
			}
		}
	}
	_, _, metrics := do(t, c, http.MethodGet, p.url+"/metrics", "")
	for _, name := range []string{"openai", "claude", "gemini", "local", "mlx"} {
		assert.Contains(t, metrics, `recourse_proxy_route="`+name+`"`, "each route's metrics carry its name")
	}
	require.NoError(t, p.cmd.Process.Signal(syscall.SIGTERM))
	assert.Equal(t, 0, p.wait(t))
	logs := p.log()
	for _, secret := range []string{heldOpenAI, heldClaude, heldGemini, teamKeyText, "CANARY"} {
		assert.NotContains(t, logs, secret)
		assert.NotContains(t, metrics, secret)
	}
	for _, name := range []string{"openai", "claude", "gemini", "local", "mlx"} {
		assert.Contains(t, logs, `"route":"`+name+`"`)
	}
}

// R21.16: SIGHUP reloads the file under load and loses no call. Twenty
// streams are in flight, held open by their upstream, and clients keep
// sending calls while the proxy reloads twice: a good file that adds a
// route (served at once) and a bad one (refused, the running
// configuration kept, the log saying why). Every stream then finishes
// whole and every call was answered 200.
func TestR21_16_ReloadUnderLoadLosesNoCall(t *testing.T) {
	const streams = 20
	gate := make(chan struct{})
	events := recoursetest.OpenAIStream("Hel", "lo", " there")
	var steps []recoursetest.Step
	for range streams {
		steps = append(steps, recoursetest.SSE(events...).Gated(2, gate))
	}
	slow := recoursetest.NewServer(steps...)
	defer slow.Close()
	fast := recoursetest.NewServer()
	defer fast.Close()
	for range 2000 {
		fast.Push(recoursetest.JSON(200, recoursetest.OllamaChat("ok")))
	}
	mlx := recoursetest.NewServer(recoursetest.JSON(200, recoursetest.OpenAIChat("new route")), recoursetest.JSON(200, recoursetest.OpenAIChat("new route")))
	defer mlx.Close()
	v1 := fmt.Sprintf("listen: 127.0.0.1:0\nbase-delay: 0s\nroutes:\n\t- name: openai\n\t\tprovider: openai\n\t\tupstream: %s\n\t- name: local\n\t\tprovider: ollama\n\t\tupstream: %s\n", slow.URL, fast.URL)
	file := writeConfig(t, v1)
	p := start(t, []string{"-config", file})
	tr := &http.Transport{MaxIdleConnsPerHost: 64}
	defer tr.CloseIdleConnections()
	c := &http.Client{Transport: tr}

	// The streams: each reads its first output, then waits on the gate.
	var wg sync.WaitGroup
	whole := make(chan string, streams)
	for range streams {
		wg.Go(func() {
			resp, err := c.Post(p.url+"/v1/chat/completions", "application/json",
				strings.NewReader(`{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}`))
			if !assert.NoError(t, err) {
				return
			}
			defer resp.Body.Close()
			b, err := io.ReadAll(resp.Body)
			assert.NoError(t, err)
			assert.Equal(t, http.StatusOK, resp.StatusCode)
			whole <- string(b)
		})
	}
	deadline := time.Now().Add(20 * time.Second)
	for slow.Count() < streams {
		require.True(t, time.Now().Before(deadline), "the streams never all reached the upstream")
		time.Sleep(time.Millisecond)
	}
	// The load: calls on the other route for as long as the reloads last.
	stop := make(chan struct{})
	var calls, failed atomic.Int64
	var load sync.WaitGroup
	for range 4 {
		load.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				resp, err := c.Post(p.url+"/api/chat", "application/json", strings.NewReader(`{"model":"llama3.2","stream":false,"messages":[]}`))
				if err != nil {
					failed.Add(1)
					continue
				}
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				calls.Add(1)
				if resp.StatusCode != http.StatusOK || !strings.Contains(string(b), "ok") {
					failed.Add(1)
				}
			}
		})
	}
	waitLog := func(want string, n int) {
		t.Helper()
		deadline := time.Now().Add(20 * time.Second)
		for strings.Count(p.log(), want) < n {
			require.True(t, time.Now().Before(deadline), "the log never held %s %d times:\n%s", want, n, p.log())
			time.Sleep(time.Millisecond)
		}
	}
	// A good file: a route more.
	v2 := v1 + fmt.Sprintf("\t- name: mlx\n\t\tprovider: omlx\n\t\tprefix: /mlx\n\t\tupstream: %s\n", mlx.URL)
	require.NoError(t, os.WriteFile(file, []byte(strings.ReplaceAll(v2, "\t", "  ")), 0o600))
	require.NoError(t, p.cmd.Process.Signal(syscall.SIGHUP))
	waitLog(`"msg":"reloaded"`, 1)
	status, _, body := do(t, c, http.MethodPost, p.url+"/mlx/v1/chat/completions", `{"model":"m","messages":[]}`)
	assert.Equal(t, http.StatusOK, status)
	assert.Contains(t, body, "new route")
	// A bad file: refused, the running configuration kept.
	require.NoError(t, os.WriteFile(file, []byte("routes:\n  - name: mlx\n    provider: omlx\n    max-attempts: many\n"), 0o600))
	require.NoError(t, p.cmd.Process.Signal(syscall.SIGHUP))
	waitLog(`"msg":"reload refused: the running configuration stays"`, 1)
	assert.Contains(t, p.log(), `max-attempts: is \"many\"; want an integer`)
	status, _, _ = do(t, c, http.MethodPost, p.url+"/mlx/v1/chat/completions", `{"model":"m","messages":[]}`)
	assert.Equal(t, http.StatusOK, status, "the good configuration still serves")

	close(stop)
	load.Wait()
	close(gate)
	wg.Wait()
	close(whole)
	n := 0
	for b := range whole {
		n++
		assert.Equal(t, strings.Join(events, ""), b, "a stream in flight across the reloads finished whole")
	}
	assert.Equal(t, streams, n)
	assert.Positive(t, calls.Load())
	assert.Zero(t, failed.Load(), "every call during the reloads was answered 200")
	assert.Equal(t, streams, slow.Count(), "no stream was sent twice")
	t.Logf("%d streams across two reloads, %d calls during them", n, calls.Load())
	require.NoError(t, p.cmd.Process.Signal(syscall.SIGTERM))
	assert.Equal(t, 0, p.wait(t))
}
