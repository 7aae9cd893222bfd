package proxy

import (
	"bufio"
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/recourse-dev/recourse/recoursetest"
)

func TestUnarySuccessIsByteForByte(t *testing.T) {
	body := recoursetest.OpenAIChat("hi there")
	r := newRig(t, "openai", nil, recoursetest.JSON(200, body, "X-Request-Id", "req-1"))
	got := r.post(t, "/v1/chat/completions?api-version=1", chatBody,
		"Authorization", "Bearer sk-test", "Connection", "X-Drop-Me", "X-Drop-Me", "1", "OpenAI-Organization", "org-1")
	require.NoError(t, got.err)
	assert.Equal(t, 200, got.status)
	assert.Equal(t, body, got.body)
	assert.Equal(t, "req-1", got.header.Get("X-Request-Id"))
	assert.Len(t, got.header.Get(HeaderCallID), 36)
	assert.Empty(t, got.header.Get("X-Should-Retry"))

	reqs := r.up.Requests()
	require.Len(t, reqs, 1)
	assert.Equal(t, "/v1/chat/completions", reqs[0].Path, "the client's path, never /v1/v1")
	assert.Equal(t, "api-version=1", reqs[0].RawQuery)
	assert.Equal(t, chatBody, string(reqs[0].Body))
	assert.Equal(t, "Bearer sk-test", reqs[0].Header.Get("Authorization"))
	assert.Equal(t, "org-1", reqs[0].Header.Get("OpenAI-Organization"))
	assert.Empty(t, reqs[0].Header.Get("X-Drop-Me"), "a header the Connection header names is hop-by-hop")
}

func TestUnaryRecoversFrom503(t *testing.T) {
	r := newRig(t, "openai", nil,
		recoursetest.JSON(503, recoursetest.OpenAIError("server_error", "", "overloaded")),
		recoursetest.JSON(200, recoursetest.OpenAIChat("ok")))
	got := r.post(t, "/v1/chat/completions", chatBody)
	assert.Equal(t, 200, got.status)
	assert.Equal(t, recoursetest.OpenAIChat("ok"), got.body)
	assert.Equal(t, 2, r.up.Count())
	assert.Equal(t, []time.Duration{100 * time.Millisecond}, r.sleeps.all())
	logs := r.logs.String()
	for _, ev := range []string{"attempt_started", "attempt_failed", "delay_scheduled", "retry_started", "attempt_succeeded"} {
		assert.Contains(t, logs, `"type":"`+ev+`"`)
	}
	r.logged(t, `"msg":"request","kind":"completion"`)
}

func TestExhaustedPassesTheFinalFailureThrough(t *testing.T) {
	fail := recoursetest.JSON(503, recoursetest.OpenAIError("server_error", "", "overloaded"))
	r := newRig(t, "openai", nil, fail, fail, fail, fail)
	got := r.post(t, "/v1/chat/completions", chatBody)
	assert.Equal(t, 503, got.status)
	assert.Equal(t, recoursetest.OpenAIError("server_error", "", "overloaded"), got.body)
	assert.Equal(t, "false", got.header.Get("X-Should-Retry"))
	assert.Equal(t, "exhausted", got.header.Get("X-Recourse-Outcome"))
	assert.Equal(t, 4, r.up.Count(), "exactly MaxAttempts POSTs")
	r.logged(t, `"msg":"request","kind":"completion","method":"POST","path":"/v1/chat/completions","status":503,"outcome":"exhausted"`)
}

func TestRetryAfterIsHonoured(t *testing.T) {
	r := newRig(t, "openai", nil,
		recoursetest.JSON(429, recoursetest.OpenAIError("rate_limit_error", "rate_limit_exceeded", "slow down"), "Retry-After", "2"),
		recoursetest.JSON(200, recoursetest.OpenAIChat("ok")))
	got := r.post(t, "/v1/chat/completions", chatBody)
	assert.Equal(t, 200, got.status)
	assert.Equal(t, []time.Duration{2 * time.Second}, r.sleeps.all())
}

func TestBadRequestPassesThroughUnretried(t *testing.T) {
	body := recoursetest.OpenAIError("invalid_request_error", "invalid_value", "bad model")
	r := newRig(t, "openai", nil, recoursetest.JSON(400, body))
	got := r.post(t, "/v1/chat/completions", chatBody)
	assert.Equal(t, 400, got.status)
	assert.Equal(t, body, got.body)
	assert.Equal(t, "interrupted", got.header.Get("X-Recourse-Outcome"))
	assert.Equal(t, 1, r.up.Count())
}

func TestRedirectIsRefusedOnEveryPath(t *testing.T) {
	target := recoursetest.NewTarget()
	defer target.Close()
	r := newRig(t, "openai", nil,
		recoursetest.Redirect(307, target.URL+"/v1/chat/completions"),
		recoursetest.Redirect(302, target.URL+"/v1/models"))
	got := r.post(t, "/v1/chat/completions", chatBody)
	assert.Equal(t, http.StatusBadGateway, got.status)
	assert.Empty(t, got.header.Get("Location"))
	assert.Contains(t, got.body, `"code":"redirect_refused"`)
	assert.Contains(t, got.body, "HTTP 307, a redirect: refused")
	assert.Equal(t, "interrupted", got.header.Get("X-Recourse-Outcome"))

	got = r.do(t, http.MethodGet, "/v1/models", "")
	assert.Equal(t, http.StatusBadGateway, got.status)
	assert.Empty(t, got.header.Get("Location"))
	assert.Contains(t, got.body, "HTTP 302, a redirect: refused")
	assert.Equal(t, 2, r.up.Count())
	assert.Zero(t, target.Hits(), "the redirect target is never contacted")
}

func TestForwardedRequestsGoOnceUntouched(t *testing.T) {
	models := `{"object":"list","data":[]}`
	r := newRig(t, "openai", nil,
		recoursetest.JSON(200, models, "Content-Encoding", "identity"),
		recoursetest.JSON(503, `{"error":"busy"}`))
	got := r.do(t, http.MethodGet, "/v1/models?limit=2", "", "Authorization", "Bearer sk-x", "Accept-Encoding", "gzip")
	assert.Equal(t, 200, got.status)
	assert.Equal(t, models, got.body)
	got = r.do(t, http.MethodGet, "/v1/chat/completions", "")
	assert.Equal(t, 503, got.status, "a GET on the completion path is forwarded, not recovered")
	assert.Equal(t, `{"error":"busy"}`, got.body)
	reqs := r.up.Requests()
	require.Len(t, reqs, 2)
	assert.Equal(t, "/v1/models", reqs[0].Path)
	assert.Equal(t, "limit=2", reqs[0].RawQuery)
	assert.Equal(t, "Bearer sk-x", reqs[0].Header.Get("Authorization"))
	assert.Equal(t, "gzip", reqs[0].Header.Get("Accept-Encoding"), "a forwarded request keeps its headers")
	assert.Empty(t, reqs[0].Header.Get("X-Forwarded-For"))
	r.logged(t, `"kind":"forward","method":"GET","path":"/v1/models","status":200`)
	assert.NotContains(t, r.logs.String(), "limit=2", "no query string in the log")
}

func TestBodyLimit(t *testing.T) {
	r := newRig(t, "openai", func(c *Config) { c.MaxBodyBytes = 64 }, recoursetest.JSON(200, recoursetest.OpenAIChat("ok")))
	got := r.post(t, "/v1/chat/completions", chatBody+strings.Repeat(" ", 64))
	assert.Equal(t, http.StatusRequestEntityTooLarge, got.status)
	assert.Contains(t, got.body, `"code":"request_too_large"`)
	assert.Contains(t, got.body, "limit of 64 bytes")
	assert.Zero(t, r.up.Count(), "nothing is sent upstream")
	got = r.post(t, "/v1/chat/completions", `{"model":"m","messages":[]}`)
	assert.Equal(t, 200, got.status, "a body within the limit goes through")
}

func TestHealthz(t *testing.T) {
	r := newRig(t, "openai", nil)
	got := r.do(t, http.MethodGet, "/healthz", "")
	assert.Equal(t, 200, got.status)
	assert.Equal(t, "ok\n", got.body)
	assert.Zero(t, r.up.Count())
}

func TestOllamaAdmissionDefaultIsRequired(t *testing.T) {
	fail := recoursetest.JSON(503, recoursetest.OllamaError("server busy"))
	r := newRig(t, "ollama", nil, fail)
	got := r.post(t, "/api/chat", ollamaBody)
	assert.Equal(t, 503, got.status)
	assert.Equal(t, recoursetest.OllamaError("server busy"), got.body)
	assert.Equal(t, "admission_required", got.header.Get("X-Recourse-Outcome"))
	assert.Equal(t, 1, r.up.Count())
}

func TestTransportFailureWithoutAnAnswer(t *testing.T) {
	r := newRig(t, "openai", nil, recoursetest.Reset(), recoursetest.Reset(), recoursetest.Reset(), recoursetest.Reset())
	got := r.post(t, "/v1/chat/completions", chatBody)
	assert.Equal(t, http.StatusBadGateway, got.status)
	assert.Equal(t, "false", got.header.Get("X-Should-Retry"))
	assert.Equal(t, "exhausted", got.header.Get("X-Recourse-Outcome"))
	assert.Contains(t, got.body, `"type":"recourse_error","param":null,"code":"exhausted"`)
	assert.Equal(t, 4, r.up.Count())

	o := newRig(t, "ollama", nil, recoursetest.Reset())
	got = o.post(t, "/api/chat", ollamaBody)
	assert.Equal(t, http.StatusServiceUnavailable, got.status)
	assert.Equal(t, "admission_required", got.header.Get("X-Recourse-Outcome"))
	assert.True(t, strings.HasPrefix(got.body, `{"error":"recourse: `), got.body)
	assert.Equal(t, 1, o.up.Count())
}

func TestDeadlineEndsRecovery(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	fail := recoursetest.JSON(503, recoursetest.OpenAIError("server_error", "", "overloaded"), "Retry-After", "5")
	r := newRig(t, "openai", func(c *Config) {
		c.Deadline = 3 * time.Second
		c.Policy.WallClock = func() time.Time { return now }
	}, fail, fail)
	got := r.post(t, "/v1/chat/completions", chatBody)
	assert.Equal(t, 503, got.status)
	assert.Equal(t, "deadline", got.header.Get("X-Recourse-Outcome"))
	assert.Equal(t, 1, r.up.Count())
	assert.Empty(t, r.sleeps.all())
}

func TestConfigErrors(t *testing.T) {
	for _, tc := range []struct {
		cfg  Config
		want string
	}{
		{Config{Provider: "no-such-provider", Upstream: "http://127.0.0.1:1"}, `proxy: Provider is "no-such-provider"`},
		{Config{Provider: "openai"}, "proxy: Upstream is empty"},
		{Config{Provider: "openai", Upstream: "127.0.0.1:8080"}, "not an http or https URL"},
		{Config{Provider: "openai", Upstream: "https://api.openai.com/v1"}, "ends in /v1"},
		{Config{Provider: "ollama", Upstream: "http://127.0.0.1:11434/api/"}, "ends in /api"},
		{Config{Provider: "openai", Upstream: "https://u:p@api.openai.com"}, "must not carry credentials"},
		{Config{Provider: "openai", Upstream: "https://api.openai.com", MaxBodyBytes: -1}, "MaxBodyBytes is negative"},
		{Config{Provider: "openai", Upstream: "https://api.openai.com", Policy: retryPolicyAttempts(-1)}, "MaxAttempts"},
	} {
		_, err := New(tc.cfg)
		require.Error(t, err, tc.want)
		assert.Contains(t, err.Error(), tc.want)
	}
}

func TestUpstreamPrefixIsKept(t *testing.T) {
	up := recoursetest.NewServer(recoursetest.JSON(200, recoursetest.OpenAIChat("ok")))
	defer up.Close()
	h, err := New(Config{Provider: "omlx", Upstream: up.URL + "/gateway/"})
	require.NoError(t, err)
	srv := newServer(t, h)
	resp, err := http.Post(srv+"/v1/chat/completions", "application/json", strings.NewReader(chatBody))
	require.NoError(t, err)
	resp.Body.Close()
	http.DefaultClient.CloseIdleConnections()
	assert.Equal(t, 200, resp.StatusCode)
	assert.Equal(t, "/gateway/v1/chat/completions", up.Requests()[0].Path)
}

// TestForwardedStreamsKeepTheirUpstream forwards POSTs (to the legacy
// /v1/completions, which the proxy does not recover) with streamed
// answers, frame by frame, over reused connections. net/http's Transport
// reads a request body once more after closing it; without forwardBody
// that read failed and tore the upstream connection down mid-stream (in
// about one request in a hundred here).
func TestForwardedStreamsKeepTheirUpstream(t *testing.T) {
	u := newPacedUpstream(t)
	h, err := New(Config{Provider: "openai", Upstream: u.srv.URL})
	require.NoError(t, err)
	px := httptest.NewServer(h)
	defer px.Close()
	defer h.chain.CloseIdleConnections()
	defer h.forward.Transport.(*http.Transport).CloseIdleConnections()
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	c := &http.Client{Transport: tr}
	for i := range 300 {
		id := "forward-" + strconv.Itoa(i)
		ack := u.ack(id)
		req, err := http.NewRequest(http.MethodPost, px.URL+"/v1/completions", strings.NewReader(streamBody))
		require.NoError(t, err)
		req.Header.Set("X-Bench-Stream", id)
		resp, err := c.Do(req)
		require.NoError(t, err)
		br := bufio.NewReader(resp.Body)
		frames := 0
		for {
			line, err := br.ReadSlice('\n')
			if err == io.EOF && frames == len(u.events) {
				break
			}
			require.NoError(t, err, "request %d, after %d frames", i, frames)
			if len(bytes.TrimSpace(line)) != 0 {
				continue
			}
			if frames < len(u.events)-1 {
				ack <- struct{}{}
			}
			frames++
		}
		resp.Body.Close()
	}
}
