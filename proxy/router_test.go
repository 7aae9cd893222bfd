package proxy

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/recourse-dev/recourse/recoursetest"
)

// fiveWires is a Router of five routes, each in front of a scripted
// upstream of its own: openai (chat and the Responses API), claude,
// gemini, ollama, and omlx under /mlx (its endpoint is openai's too).
type fiveWires struct {
	ups    map[string]*recoursetest.Server
	proxy  *httptest.Server
	logs   *syncBuffer
	sleeps *sleeps
}

func newFiveWires(t *testing.T, rc RouterConfig, steps map[string][]recoursetest.Step) *fiveWires {
	t.Helper()
	f := &fiveWires{ups: map[string]*recoursetest.Server{}, logs: &syncBuffer{}, sleeps: &sleeps{}}
	log := slog.New(slog.NewJSONHandler(f.logs, nil))
	for _, r := range []struct{ name, provider, prefix string }{
		{"openai", "openai", ""}, {"claude", "anthropic", ""}, {"gemini", "gemini", ""},
		{"local", "ollama", ""}, {"mlx", "omlx", "/mlx"},
	} {
		up := recoursetest.NewServer(steps[r.name]...)
		t.Cleanup(up.Close)
		f.ups[r.name] = up
		p := testPolicy(f.sleeps)
		p.Admit = allowAll
		rc.Routes = append(rc.Routes, Route{Name: r.name, Prefix: r.prefix, Config: Config{
			Provider: r.provider, Upstream: up.URL, Policy: p, Logger: log}})
	}
	rt, err := NewRouter(rc)
	require.NoError(t, err)
	f.proxy = httptest.NewServer(rt)
	t.Cleanup(f.proxy.Close)
	return f
}

func (f *fiveWires) do(t *testing.T, method, path, body string, kv ...string) result {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, f.proxy.URL+path, rd)
	require.NoError(t, err)
	for i := 0; i+1 < len(kv); i += 2 {
		req.Header.Add(kv[i], kv[i+1])
	}
	resp, err := f.proxy.Client().Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return result{status: resp.StatusCode, header: resp.Header, body: string(b), err: err}
}

// paths returns the paths each upstream was sent, by route.
func (f *fiveWires) paths() map[string][]string {
	out := map[string][]string{}
	for name, up := range f.ups {
		for _, q := range up.Requests() {
			out[name] = append(out[name], q.Method+" "+q.Path)
		}
	}
	return out
}

// R21.15: one Router recovers a call of every wire, each on its own
// upstream with its own wire's rules: a 503 (or Claude's 529) then a
// success is one answer after two attempts, and each upstream sees only
// its own route's requests.
func TestR21_15_OneRouterRecoversEveryWire(t *testing.T) {
	fail := recoursetest.JSON(503, recoursetest.OpenAIError("server_error", "", "overloaded"))
	f := newFiveWires(t, RouterConfig{}, map[string][]recoursetest.Step{
		"openai": {fail, recoursetest.JSON(200, recoursetest.OpenAIChat("chat")),
			fail, recoursetest.SSE(recoursetest.ResponsesEvents("resp_1", "resp")...)},
		"claude": {recoursetest.AnthropicOverloaded(), recoursetest.JSON(200, recoursetest.AnthropicMessage("claude"))},
		"gemini": {recoursetest.JSON(503, `{"error":{"code":503,"message":"overloaded","status":"UNAVAILABLE"}}`), recoursetest.JSON(200, recoursetest.GeminiChat("gemini"))},
		"local":  {recoursetest.JSON(503, recoursetest.OllamaError("busy")), recoursetest.JSON(200, recoursetest.OllamaChat("ollama"))},
		"mlx":    {fail, recoursetest.JSON(200, recoursetest.OpenAIChat("mlx"))},
	})
	for _, c := range []struct {
		route, path, body, want string
		kv                      []string
	}{
		{"openai", "/v1/chat/completions", chatBody, "chat", nil},
		{"openai", "/v1/responses", `{"model":"gpt-4o-mini","input":"hello","stream":true}`, "resp", nil},
		{"claude", "/v1/messages", claudeBody, "claude", []string{"anthropic-version", "2023-06-01"}},
		{"gemini", "/v1beta/models/gemini-2.5-flash:generateContent", geminiBody, "gemini", nil},
		{"local", "/api/chat", ollamaBody, "ollama", nil},
		{"mlx", "/mlx/v1/chat/completions", chatBody, "mlx", nil},
	} {
		got := f.do(t, http.MethodPost, c.path, c.body, append([]string{"Content-Type", "application/json"}, c.kv...)...)
		assert.Equal(t, http.StatusOK, got.status, c.path)
		assert.Contains(t, got.body, c.want, c.path)
		assert.Equal(t, "2", got.header.Get("X-Recourse-Attempts"), c.path)
	}
	assert.Equal(t, map[string][]string{
		"openai": {"POST /v1/chat/completions", "POST /v1/chat/completions", "POST /v1/responses", "POST /v1/responses"},
		"claude": {"POST /v1/messages", "POST /v1/messages"},
		"gemini": {"POST /v1beta/models/gemini-2.5-flash:generateContent", "POST /v1beta/models/gemini-2.5-flash:generateContent"},
		"local":  {"POST /api/chat", "POST /api/chat"},
		"mlx":    {"POST /v1/chat/completions", "POST /v1/chat/completions"},
	}, f.paths())
	// A request's line is written after its client read the last byte.
	for _, name := range []string{"openai", "claude", "gemini", "local", "mlx"} {
		assert.Eventually(t, func() bool { return strings.Contains(f.logs.String(), `"route":"`+name+`"`) }, 10*time.Second, time.Millisecond, name)
	}
	assert.Regexp(t, `"path":"/v1/responses","status":200,[^\n]*"route":"openai"`, f.logs.String())
	assert.Equal(t, 6, strings.Count(f.logs.String(), `"msg":"request"`))
	assert.Equal(t, 6, strings.Count(f.logs.String(), `"route":"`))
}

// R21.15: a request no recovered endpoint claims goes to the route whose
// wire it belongs to — Claude's by its anthropic-version header, the
// others by their namespace, a prefixed route with its prefix removed —
// and one no route claims is answered 404 no_route, or 400
// path_not_canonical when it is a recovered endpoint spelled otherwise;
// neither reaches an upstream.
func TestR21_15_RouterSendsEveryOtherRequestToItsWire(t *testing.T) {
	ok := recoursetest.JSON(200, `{}`)
	f := newFiveWires(t, RouterConfig{}, map[string][]recoursetest.Step{
		"openai": {ok}, "claude": {ok, ok}, "gemini": {ok}, "local": {ok}, "mlx": {ok, ok},
	})
	for _, c := range []struct {
		method, path string
		kv           []string
		status       int
	}{
		{http.MethodGet, "/v1/models", nil, 200},
		{http.MethodGet, "/v1/models", []string{"anthropic-version", "2023-06-01"}, 200},
		{http.MethodPost, "/v1/messages/count_tokens", nil, 200},
		{http.MethodGet, "/v1beta/models", nil, 200},
		{http.MethodGet, "/api/tags", nil, 200},
		{http.MethodGet, "/mlx/v1/models", nil, 200},
		{http.MethodGet, "/mlx", nil, 200},
		{http.MethodGet, "/mlxx/v1/models", nil, 404},
		{http.MethodGet, "/other", nil, 404},
		{http.MethodPost, "/v1/messages/", nil, 400},
		{http.MethodPost, "/API/chat", nil, 400},
	} {
		got := f.do(t, c.method, c.path, "", c.kv...)
		assert.Equal(t, c.status, got.status, c.path)
		switch c.status {
		case 404:
			assert.Contains(t, got.body, `"code":"no_route"`, c.path)
			assert.Equal(t, "false", got.header.Get("X-Should-Retry"), c.path)
		case 400:
			assert.Contains(t, got.body, "spelled otherwise", c.path)
		}
	}
	assert.Contains(t, f.do(t, http.MethodPost, "/v1/messages/", "").body, `"type":"error"`, "Claude's error shape")
	assert.Equal(t, map[string][]string{
		"openai": {"GET /v1/models"},
		"claude": {"GET /v1/models", "POST /v1/messages/count_tokens"},
		"gemini": {"GET /v1beta/models"},
		"local":  {"GET /api/tags"},
		"mlx":    {"GET /v1/models", "GET /"},
	}, f.paths())
	assert.Equal(t, "ok\n", f.do(t, http.MethodGet, "/healthz", "").body)
}

// R21.15: with RouterConfig.Default, a request no route claims goes to
// that route.
func TestR21_15_RouterDefaultRoute(t *testing.T) {
	f := newFiveWires(t, RouterConfig{Default: "local"}, map[string][]recoursetest.Step{"local": {recoursetest.JSON(200, `{}`)}})
	assert.Equal(t, 200, f.do(t, http.MethodGet, "/version", "").status)
	assert.Equal(t, map[string][]string{"local": {"GET /version"}}, f.paths())
}

// R21.15: client keys are the Router's, for every route; a key's routes
// may name routes, and a Claude or Gemini client may present its proxy
// key in its wire's own API key header, as it sends its API key at its
// defaults. The key never reaches the upstream.
func TestR21_15_RouterAdmitsClientsPerRoute(t *testing.T) {
	ok := recoursetest.JSON(200, recoursetest.AnthropicMessage("hi"))
	h, n := HashKey(teamKey), HashKey(narrowKey)
	f := newFiveWires(t, RouterConfig{ClientKeys: []ClientKey{{Hash: h, Name: "team"}, {Hash: n, Name: "narrow", Routes: []string{"claude"}}}},
		map[string][]recoursetest.Step{"claude": {ok, ok}, "openai": {recoursetest.JSON(200, recoursetest.OpenAIChat("hi"))}})
	claude := func(kv ...string) result {
		return f.do(t, http.MethodPost, "/v1/messages", claudeBody, append([]string{"anthropic-version", "2023-06-01"}, kv...)...)
	}
	assert.Equal(t, 401, claude().status)
	assert.Equal(t, 401, claude("x-api-key", "sk-not-a-proxy-key").status)
	assert.Equal(t, 200, claude("x-api-key", narrowKey).status)
	assert.Equal(t, 200, claude("Authorization", "Bearer "+teamKey).status)
	denied := f.do(t, http.MethodPost, "/v1/chat/completions", chatBody, "Authorization", "Bearer "+narrowKey)
	assert.Equal(t, 403, denied.status)
	assert.Equal(t, "false", denied.header.Get("X-Should-Retry"))
	assert.Equal(t, 200, f.do(t, http.MethodPost, "/v1/chat/completions", chatBody, "Authorization", "Bearer "+teamKey).status)
	for _, up := range f.ups {
		for _, q := range up.Requests() {
			for name, vs := range q.Header {
				for _, v := range vs {
					assert.NotContains(t, v, teamKey, name)
					assert.NotContains(t, v, narrowKey, name)
				}
			}
		}
	}
	assert.Len(t, f.ups["claude"].Requests(), 2)
	assert.Len(t, f.ups["openai"].Requests(), 1)
	assert.Contains(t, f.logs.String(), `"client":"narrow"`)
}

// R21.15: NewRouter refuses a configuration it cannot serve with a
// *ConfigError that names the route's field.
func TestR21_15_RouterConfigErrors(t *testing.T) {
	route := func(name, provider, prefix string) Route {
		return Route{Name: name, Prefix: prefix, Config: Config{Provider: provider, Upstream: "http://127.0.0.1:1"}}
	}
	k := HashKey(teamKey)
	for _, c := range []struct {
		rc          RouterConfig
		field, says string
	}{
		{RouterConfig{}, "Routes", "is empty"},
		{RouterConfig{Routes: []Route{route("OpenAI", "openai", "")}}, "Routes[0].Name", "lower-case"},
		{RouterConfig{Routes: []Route{route("forward", "openai", "")}}, "Routes[0].Name", "endpoint name"},
		{RouterConfig{Routes: []Route{route("a", "openai", ""), route("a", "ollama", "")}}, "Routes[1].Name", "earlier route"},
		{RouterConfig{Routes: []Route{route("a", "openai", "mlx")}}, "Routes[0].Prefix", "starting with /"},
		{RouterConfig{Routes: []Route{route("a", "openai", "/mlx/")}}, "Routes[0].Prefix", "trailing slash"},
		{RouterConfig{Routes: []Route{route("a", "openai", "/a//b")}}, "Routes[0].Prefix", "dot segment"},
		{RouterConfig{Routes: []Route{route("a", "openai", "/metrics")}}, "Routes[0].Prefix", "answers itself"},
		{RouterConfig{Routes: []Route{route("a", "openai", "/x"), route("b", "omlx", "/x")}}, "Routes[1].Prefix", `route "a"'s prefix`},
		{RouterConfig{Routes: []Route{route("a", "openai", ""), route("b", "omlx", "")}}, "Routes[1].Prefix", "POST /v1/chat/completions too"},
		{RouterConfig{Routes: []Route{route("a", "claude", "")}}, "Routes[0].Config.Provider", "want one of"},
		{RouterConfig{Routes: []Route{{Name: "a", Config: Config{Provider: "openai"}}}}, "Routes[0].Config.Upstream", "is empty"},
		{RouterConfig{Routes: []Route{{Name: "a", Config: Config{Provider: "openai", Upstream: "http://x", ClientKeys: []ClientKey{{Hash: k}}}}}}, "Routes[0].Config.ClientKeys", "RouterConfig.ClientKeys"},
		{RouterConfig{Routes: []Route{route("a", "openai", "")}, Default: "b"}, "Default", "names no route"},
		{RouterConfig{Routes: []Route{route("a", "openai", "")}, ClientKeys: []ClientKey{}}, "ClientKeys", "is empty"},
		{RouterConfig{Routes: []Route{route("a", "openai", "")}, ClientKeys: []ClientKey{{Hash: k, Routes: []string{"b"}}}}, "ClientKeys", `"b" that is no route`},
	} {
		_, err := NewRouter(c.rc)
		var ce *ConfigError
		if assert.ErrorAs(t, err, &ce, c.field) {
			assert.Equal(t, c.field, ce.Field)
			assert.Contains(t, ce.Problem, c.says, c.field)
		}
	}
	rt, err := NewRouter(RouterConfig{Routes: []Route{route("b", "openai", ""), route("a", "omlx", "/mlx"), route("c", "anthropic", "")}})
	require.NoError(t, err)
	assert.Equal(t, []string{"a", "b", "c"}, rt.Routes())
}
