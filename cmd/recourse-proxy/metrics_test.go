package main

import (
	"io"
	"net/http"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/recourse-dev/recourse/recoursetest"
)

// scrape reads the proxy's /metrics.
func scrape(t *testing.T, p *proc) string {
	t.Helper()
	resp, err := http.Get(p.url + "/metrics")
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, 200, resp.StatusCode)
	assert.Contains(t, resp.Header.Get("Content-Type"), "text/plain")
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return string(b)
}

// sum adds the values of the samples of metric name (its full Prometheus
// name) that carry every label of want (k="v" strings).
func sum(text, name string, want ...string) float64 {
	total := 0.0
	for _, line := range strings.Split(text, "\n") {
		if line == "" || line[0] == '#' {
			continue
		}
		i := strings.IndexAny(line, "{ ")
		if i < 0 || line[:i] != name {
			continue
		}
		labels, value := "", line[i:]
		if line[i] == '{' {
			j := strings.LastIndex(line, "}")
			labels, value = line[i:j+1], line[j+1:]
		}
		ok := true
		for _, w := range want {
			ok = ok && strings.Contains(labels, w)
		}
		if v, err := strconv.ParseFloat(strings.TrimSpace(value), 64); ok && err == nil {
			total += v
		}
	}
	return total
}

// TestR21_5_MetricsAreScrapedAfterScriptedFailures drives the binary
// through an exhausted call and its client repeat, a provider hint, a
// stall and a quota refusal, then scrapes GET /metrics (the OpenTelemetry
// Prometheus exporter) and checks every count, and that no label holds an
// identifier of a call or a credential. The header limit is real time
// (300 ms), far above a loopback answer.
func TestR21_5_MetricsAreScrapedAfterScriptedFailures(t *testing.T) {
	const canary = "sk-metrics-canary-41d2"
	fail := recoursetest.JSON(503, recoursetest.OpenAIError("server_error", "", "overloaded"))
	gate := make(chan struct{}) // never opened: the answer's headers never come
	defer close(gate)
	up := recoursetest.NewServer(
		recoursetest.JSON(200, recoursetest.OpenAIChat("late")).Gated(-1, gate), recoursetest.JSON(200, recoursetest.OpenAIChat("ok")), // call 1: a stall, resumed (its resend refunded)
		fail, fail, fail, // call 2: exhausted after 3 attempts, 2 resends
		recoursetest.JSON(503, recoursetest.OpenAIError("server_error", "", "overloaded"), "x-should-retry", "false"), // call 3: the hint, not resent
		fail, // call 4: its resend refused by the quota (floor 2, both spent)
	)
	defer up.Close()
	p := start(t, []string{"-upstream", up.URL, "-listen", "127.0.0.1:0", "-base-delay", "0s", "-max-attempts", "3",
		"-provider-hints", "-header-timeout", "300ms", "-quota-ratio", "0", "-quota-floor", "2", "-quota-window", "10m"})
	post := func(content string) int {
		t.Helper()
		req, err := http.NewRequest(http.MethodPost, p.url+"/v1/chat/completions",
			strings.NewReader(`{"model":"gpt-4o-mini","messages":[{"role":"user","content":"`+content+`"}]}`))
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+canary)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	defer http.DefaultClient.CloseIdleConnections()
	assert.Equal(t, 200, post("one"))
	assert.Equal(t, 503, post("two"))
	assert.Equal(t, 503, post("two"), "the repeat, answered from memory")
	assert.Equal(t, 503, post("three"))
	assert.Equal(t, 503, post("four"))
	assert.Equal(t, 7, up.Count())

	m := scrape(t, p)
	assert.Equal(t, 6.0, sum(m, "recourse_client_attempts_total", `recourse_attempt_outcome="failed"`))
	assert.Equal(t, 1.0, sum(m, "recourse_client_attempts_total", `recourse_attempt_outcome="succeeded"`))
	assert.Equal(t, 1.0, sum(m, "recourse_client_attempts_total", `recourse_failure_stall="header_timeout"`), "the stall")
	assert.Equal(t, 1.0, sum(m, "recourse_client_attempts_total", `recourse_failure_hint="x_should_retry_false"`), "the hint")
	assert.Equal(t, 3.0, sum(m, "recourse_client_resends_total"), "1 for call 1, 2 for call 2")
	assert.Equal(t, 1.0, sum(m, "recourse_client_outcomes_total", `recourse_outcome="exhausted"`))
	assert.Equal(t, 1.0, sum(m, "recourse_client_outcomes_total", `recourse_outcome="interrupted"`))
	assert.Equal(t, 1.0, sum(m, "recourse_client_outcomes_total", `recourse_outcome="quota_exhausted"`), "the quota")
	assert.Equal(t, 1.0, sum(m, "recourse_proxy_client_retries_total", `recourse_client_retry_answer="replayed"`))
	assert.Equal(t, 4.0, sum(m, "gen_ai_client_operation_duration_seconds_count"), "four calls reached the chain")
	// The breaker in view (R20.13): call 4's resend was refused, so the
	// upstream's resends are refused now; calls 2, 3 and 4 failed.
	host := strings.TrimPrefix(up.URL, "http://")
	assert.Equal(t, 1.0, sum(m, "recourse_breaker_refusing", `recourse_breaker_upstream="`+host+`"`), m)
	assert.Equal(t, 3.0, sum(m, "recourse_breaker_failures_total", `recourse_breaker_upstream="`+host+`"`))
	assert.Equal(t, 0.0, sum(m, "recourse_breaker_skipped_total", `recourse_breaker_upstream="`+host+`"`))
	assert.Contains(t, m, "recourse_breaker_cooldown_until_seconds{")
	for _, never := range []string{canary, "call_id", "attempt_id", "logical_request_id", "Bearer"} {
		assert.NotContains(t, m, never)
	}

	resp, err := http.Get(p.url + "/healthz")
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, 200, resp.StatusCode, "/healthz stays the proxy's own")
	require.NoError(t, p.cmd.Process.Signal(syscall.SIGTERM))
	assert.Equal(t, 0, p.wait(t))
}

// TestR21_5_MetricsCanBeTurnedOff: with -metrics=false, /metrics is
// forwarded upstream like every other path.
func TestR21_5_MetricsCanBeTurnedOff(t *testing.T) {
	up := recoursetest.NewServer(recoursetest.JSON(404, `{"error":"not here"}`))
	defer up.Close()
	p := start(t, []string{"-upstream", up.URL, "-listen", "127.0.0.1:0", "-metrics=false"})
	resp, err := http.Get(p.url + "/metrics")
	require.NoError(t, err)
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	http.DefaultClient.CloseIdleConnections()
	assert.Equal(t, 404, resp.StatusCode)
	assert.Equal(t, `{"error":"not here"}`, string(b))
	assert.Equal(t, 1, up.Count())
}
