package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	colmetric "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"go.uber.org/goleak"
	"google.golang.org/protobuf/proto"

	"github.com/recourse-dev/recourse/proxy"
	"github.com/recourse-dev/recourse/recoursetest"
)

// These tests build the real binary and run it as a user would.

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

func binary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "recourse-proxy-bin")
		if err != nil {
			buildErr = err
			return
		}
		binPath = filepath.Join(dir, "recourse-proxy")
		out, err := exec.Command("go", "build", "-o", binPath, ".").CombinedOutput()
		if err != nil {
			buildErr = errors.New(string(out))
		}
	})
	require.NoError(t, buildErr)
	return binPath
}

func TestMain(m *testing.M) {
	code := m.Run()
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	if binPath != "" {
		os.RemoveAll(filepath.Dir(binPath))
	}
	os.Exit(code)
}

// proc is a running recourse-proxy.
type proc struct {
	cmd  *exec.Cmd
	url  string
	addr string
	mu   sync.Mutex
	logs strings.Builder
	done chan struct{}
}

// start runs the binary with args and env (added to a minimal
// environment) and waits for its "listening" line.
func start(t *testing.T, args []string, env ...string) *proc {
	t.Helper()
	p := &proc{cmd: exec.Command(binary(t), args...), done: make(chan struct{})}
	p.cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "RECOURSE_PROXY_LOG_FORMAT=json"}, env...)
	stderr, err := p.cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, p.cmd.Start())
	listening := make(chan string, 1)
	go func() {
		defer close(p.done)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			line := sc.Text()
			p.mu.Lock()
			p.logs.WriteString(line + "\n")
			p.mu.Unlock()
			var rec struct{ Msg, Addr string }
			if json.Unmarshal([]byte(line), &rec) == nil && rec.Msg == "listening" {
				listening <- rec.Addr
			}
		}
	}()
	t.Cleanup(func() {
		if p.cmd.ProcessState == nil {
			p.cmd.Process.Kill()
			p.cmd.Wait()
		}
	})
	select {
	case p.addr = <-listening:
	case <-p.done:
		p.cmd.Wait()
		t.Fatalf("recourse-proxy exited before listening:\n%s", p.log())
	case <-time.After(30 * time.Second):
		t.Fatalf("recourse-proxy did not listen:\n%s", p.log())
	}
	p.url = "http://" + p.addr
	return p
}

func (p *proc) log() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.logs.String()
}

// wait waits for the process to exit and returns its exit code.
func (p *proc) wait(t *testing.T) int {
	t.Helper()
	exited := make(chan error, 1)
	go func() {
		<-p.done
		exited <- p.cmd.Wait()
	}()
	select {
	case err := <-exited:
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return ee.ExitCode()
		}
		require.NoError(t, err)
		return 0
	case <-time.After(30 * time.Second):
		t.Fatalf("recourse-proxy did not exit:\n%s", p.log())
		return -1
	}
}

func TestBinaryHelp(t *testing.T) {
	out, err := exec.Command(binary(t), "-h").CombinedOutput()
	require.NoError(t, err, "-h exits 0")
	for _, want := range []string{"Usage:", "-upstream", "[RECOURSE_PROXY_UPSTREAM]", "-max-attempts", "[RECOURSE_PROXY_MAX_ATTEMPTS]",
		"-admit", "-log-format", "-grace", "-max-body", "-stream-commit-after", "-allow-remote",
		"-header-timeout", "-first-output-timeout", "-idle-timeout", "[RECOURSE_PROXY_IDLE_TIMEOUT]", "-provider-hints",
		"-quota", "[RECOURSE_PROXY_QUOTA]", "-quota-ratio", "-quota-window", "-quota-floor", "-quota-key", "-quota-cooldown", "[RECOURSE_PROXY_QUOTA_COOLDOWN]"} {
		assert.Contains(t, string(out), want)
	}
}

func TestBinaryRefusesBadSettings(t *testing.T) {
	for _, args := range [][]string{
		{"-upstream", "http://127.0.0.1:1", "-listen", "0.0.0.0:0"},
		{},
		{"-upstream", "https://api.openai.com/v1"},
	} {
		cmd := exec.Command(binary(t), args...)
		cmd.Env = []string{}
		out, err := cmd.CombinedOutput()
		var ee *exec.ExitError
		require.ErrorAs(t, err, &ee, "%v: %s", args, out)
		assert.Equal(t, 2, ee.ExitCode())
		assert.True(t, strings.HasPrefix(string(out), "recourse-proxy: "), string(out))
	}
}

// TestBinaryFromEnvironment configures the proxy through its environment
// variables only: two attempts, no delay (so nothing sleeps), and checks
// the outcome a client sees and the log lines on stderr.
func TestBinaryFromEnvironment(t *testing.T) {
	fail := recoursetest.JSON(503, recoursetest.OpenAIError("server_error", "", "overloaded"))
	up := recoursetest.NewServer(fail, fail)
	defer up.Close()
	p := start(t, nil, "RECOURSE_PROXY_UPSTREAM="+up.URL, "RECOURSE_PROXY_LISTEN=127.0.0.1:0",
		"RECOURSE_PROXY_MAX_ATTEMPTS=2", "RECOURSE_PROXY_BASE_DELAY=0s")
	resp, err := http.Post(p.url+"/v1/chat/completions", "application/json",
		strings.NewReader(`{"model":"m","messages":[{"role":"user","content":"hi"}]}`))
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	http.DefaultClient.CloseIdleConnections()
	assert.Equal(t, 503, resp.StatusCode)
	assert.Equal(t, "exhausted", resp.Header.Get("X-Recourse-Outcome"))
	assert.Equal(t, recoursetest.OpenAIError("server_error", "", "overloaded"), string(body))
	assert.Equal(t, 2, up.Count())

	require.NoError(t, p.cmd.Process.Signal(syscall.SIGTERM))
	assert.Equal(t, 0, p.wait(t))
	logs := p.log()
	assert.Contains(t, logs, `"type":"delay_scheduled"`)
	assert.Contains(t, logs, `"msg":"request","kind":"completion","method":"POST","path":"/v1/chat/completions","status":503,"outcome":"exhausted"`)
	assert.Contains(t, logs, `"msg":"stopped"`)
}

// TestBinarySIGTERM: an in-flight stream finishes within the grace period
// while new connections are refused, and the process exits 0; with a short
// grace period, a stream that does not finish is cut with the in-band
// error, and the process still exits 0.
func TestBinarySIGTERM(t *testing.T) {
	for _, tc := range []struct {
		name  string
		grace string
		cut   bool
	}{{"finishes", "1m", false}, {"cut", "100ms", true}} {
		t.Run(tc.name, func(t *testing.T) {
			gate := make(chan struct{})
			events := recoursetest.OpenAIStream("Hel", "lo")
			// Gated after the first output: the role chunk is held for it (R13.9).
			up := recoursetest.NewServer(recoursetest.SSE(events...).Gated(2, gate))
			defer up.Close()
			p := start(t, []string{"-upstream", up.URL, "-listen", "127.0.0.1:0", "-grace", tc.grace})
			tr := &http.Transport{}
			defer tr.CloseIdleConnections()
			resp, err := (&http.Client{Transport: tr}).Post(p.url+"/v1/chat/completions", "application/json",
				strings.NewReader(`{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}`))
			require.NoError(t, err)
			defer resp.Body.Close()
			first := make([]byte, len(events[0])+len(events[1]))
			_, err = io.ReadFull(resp.Body, first)
			require.NoError(t, err)

			require.NoError(t, p.cmd.Process.Signal(syscall.SIGTERM))
			deadline := time.Now().Add(20 * time.Second)
			for {
				c, err := net.Dial("tcp", p.addr)
				if err != nil {
					break
				}
				c.Close()
				require.True(t, time.Now().Before(deadline), "still accepting after SIGTERM")
				time.Sleep(time.Millisecond)
			}
			if !tc.cut {
				close(gate)
			} else {
				defer close(gate)
			}
			rest, err := io.ReadAll(resp.Body)
			if tc.cut {
				require.Error(t, err)
				assert.Contains(t, string(rest), `data: {"error":{"message":"`+proxy.ErrShutdown.Error()+`","type":"recourse_error","code":"shutdown"}}`, "R21.10")
				assert.NotContains(t, string(rest), "[DONE]")
			} else {
				require.NoError(t, err)
				assert.Equal(t, strings.Join(events[2:], ""), string(rest))
			}
			assert.Equal(t, 0, p.wait(t), p.log())
		})
	}
}

// otlpReceiver is a loopback OTLP/HTTP receiver keeping the trace and
// metric export requests it got, decoded from protobuf.
type otlpReceiver struct {
	srv     *httptest.Server
	mu      sync.Mutex
	traces  []*coltrace.ExportTraceServiceRequest
	metrics []*colmetric.ExportMetricsServiceRequest
	raw     []string // path, content type and body of every request
}

func newOTLPReceiver(t *testing.T) *otlpReceiver {
	o := &otlpReceiver{}
	o.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		o.mu.Lock()
		defer o.mu.Unlock()
		o.raw = append(o.raw, r.URL.Path+" "+r.Header.Get("Content-Type")+" "+string(b))
		switch r.URL.Path {
		case "/v1/traces":
			m := &coltrace.ExportTraceServiceRequest{}
			if proto.Unmarshal(b, m) == nil {
				o.traces = append(o.traces, m)
			}
		case "/v1/metrics":
			m := &colmetric.ExportMetricsServiceRequest{}
			if proto.Unmarshal(b, m) == nil {
				o.metrics = append(o.metrics, m)
			}
		}
		w.Header().Set("Content-Type", "application/x-protobuf")
	}))
	t.Cleanup(o.srv.Close)
	return o
}

// spans returns the names and attributes (key=value) of every span
// received, and the service names of their resources.
func (o *otlpReceiver) spans() (names []string, attrs []string, services []string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, req := range o.traces {
		for _, rs := range req.ResourceSpans {
			for _, a := range rs.Resource.Attributes {
				if a.Key == "service.name" {
					services = append(services, a.Value.GetStringValue())
				}
			}
			for _, ss := range rs.ScopeSpans {
				for _, sp := range ss.Spans {
					names = append(names, sp.Name)
					for _, a := range sp.Attributes {
						attrs = append(attrs, a.Key+"="+fmt.Sprint(a.Value.GetIntValue())+a.Value.GetStringValue())
					}
				}
			}
		}
	}
	return names, attrs, services
}

// metricNames returns the names of every metric received.
func (o *otlpReceiver) metricNames() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	var names []string
	for _, req := range o.metrics {
		for _, rm := range req.ResourceMetrics {
			for _, sm := range rm.ScopeMetrics {
				for _, m := range sm.Metrics {
					names = append(names, m.Name)
				}
			}
		}
	}
	return names
}

// TestR21_5_BinaryExportsTracesAndMetricsOverOTLP runs the binary with
// -otlp-endpoint, and then with the standard OTEL_EXPORTER_OTLP_ENDPOINT
// alone: after a recovered call and SIGTERM, the loopback receiver holds
// the call's spans and the metrics, sent by the OpenTelemetry OTLP/HTTP
// exporters as protobuf, with no credential in them.
func TestR21_5_BinaryExportsTracesAndMetricsOverOTLP(t *testing.T) {
	const canary = "sk-otlp-canary-9b1e"
	for _, how := range []string{"flag", "environment"} {
		t.Run(how, func(t *testing.T) {
			rcv := newOTLPReceiver(t)
			up := recoursetest.NewServer(recoursetest.JSON(503, recoursetest.OpenAIError("server_error", "", "overloaded")), recoursetest.JSON(200, recoursetest.OpenAIChat("ok")))
			defer up.Close()
			args := []string{"-upstream", up.URL, "-listen", "127.0.0.1:0", "-base-delay", "0s"}
			var env []string
			if how == "flag" {
				args = append(args, "-otlp-endpoint", rcv.srv.URL)
			} else {
				env = append(env, "OTEL_EXPORTER_OTLP_ENDPOINT="+rcv.srv.URL, "OTEL_SERVICE_NAME=proxy-from-env")
			}
			p := start(t, args, env...)
			req, err := http.NewRequest(http.MethodPost, p.url+"/v1/chat/completions",
				strings.NewReader(`{"model":"gpt-4o-mini","messages":[{"role":"user","content":"hi"}]}`))
			require.NoError(t, err)
			req.Header.Set("Authorization", "Bearer "+canary)
			resp, err := http.DefaultClient.Do(req)
			require.NoError(t, err)
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			http.DefaultClient.CloseIdleConnections()
			require.Equal(t, 200, resp.StatusCode)
			require.NoError(t, p.cmd.Process.Signal(syscall.SIGTERM))
			require.Equal(t, 0, p.wait(t), p.log())

			names, attrs, services := rcv.spans()
			assert.Contains(t, names, "chat gpt-4o-mini")
			assert.Contains(t, attrs, "http.request.resend_count=1")
			want := "recourse-proxy"
			if how == "environment" {
				want = "proxy-from-env"
			}
			require.NotEmpty(t, services)
			assert.Equal(t, want, services[0], "service.name, OTEL_SERVICE_NAME winning")
			assert.Contains(t, rcv.metricNames(), "recourse.client.attempts")
			assert.Contains(t, rcv.metricNames(), "recourse.client.resends")
			rcv.mu.Lock()
			defer rcv.mu.Unlock()
			for _, r := range rcv.raw {
				assert.True(t, strings.HasPrefix(r, "/v1/traces application/x-protobuf ") || strings.HasPrefix(r, "/v1/metrics application/x-protobuf "), r[:min(len(r), 60)])
				assert.NotContains(t, r, canary)
			}
		})
	}
}

// TestBinaryStallHintsAndQuota runs the binary with the stall, hint and
// quota flags: a stream that goes silent after a keepalive is resumed
// after the idle limit, with a notice naming it; x-should-retry: false is
// honoured; a quota of one resend a window refuses the second, and a
// client's own retry is refused without reaching the upstream. The idle
// limit is real time (1 s), far above any gap of the scripted stream.
func TestBinaryStallHintsAndQuota(t *testing.T) {
	events := recoursetest.OpenAIStream("Hel", "lo")
	overloaded := recoursetest.OpenAIError("server_error", "server_error", "overloaded")
	up := recoursetest.NewServer(
		recoursetest.SSE(": keepalive\n\n").Held(), recoursetest.SSE(events...), // the idle limit, then a resumed stream
		recoursetest.JSON(503, overloaded, "x-should-retry", "false"),          // the hint: not resent
		recoursetest.JSON(503, overloaded), recoursetest.JSON(503, overloaded), // one resend, then the quota refuses
	)
	defer up.Close()
	p := start(t, []string{"-upstream", up.URL, "-listen", "127.0.0.1:0", "-base-delay", "0s", "-max-attempts", "3",
		"-header-timeout", "1m", "-first-output-timeout", "10m", "-idle-timeout", "1s", "-provider-hints",
		"-quota-ratio", "0", "-quota-floor", "1", "-quota-window", "10m",
		"-repeat-window", "0"}) // the same body is sent again on purpose: without the memory of final answers (R21.3)
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}
	post := func(body string, kv ...string) (*http.Response, string) {
		t.Helper()
		req, err := http.NewRequest(http.MethodPost, p.url+"/v1/chat/completions", strings.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/json")
		for i := 0; i+1 < len(kv); i += 2 {
			req.Header.Set(kv[i], kv[i+1])
		}
		resp, err := client.Do(req)
		require.NoError(t, err)
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		resp.Body.Close()
		return resp, string(b)
	}

	resp, body := post(`{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}`)
	assert.Equal(t, 200, resp.StatusCode)
	assert.Contains(t, body, ": retrying after idle timeout (attempt 2/3 in 0ms)\n")
	assert.Equal(t, 1, strings.Count(body, `"content":"Hel"`))
	assert.True(t, strings.HasSuffix(body, "data: [DONE]\n\n"), body)
	assert.Equal(t, 2, up.Count())

	chat := `{"model":"m","messages":[{"role":"user","content":"hi"}]}`
	resp, body = post(chat)
	assert.Equal(t, 503, resp.StatusCode)
	assert.Equal(t, overloaded, body)
	assert.Equal(t, "interrupted", resp.Header.Get("X-Recourse-Outcome"))
	assert.Equal(t, 3, up.Count(), "x-should-retry: false honoured")

	resp, body = post(chat)
	assert.Equal(t, 503, resp.StatusCode)
	assert.Equal(t, overloaded, body)
	assert.Equal(t, "quota_exhausted", resp.Header.Get("X-Recourse-Outcome"))
	assert.Equal(t, "false", resp.Header.Get("X-Should-Retry"))
	assert.Equal(t, 5, up.Count(), "one resend, then the quota refused")
	assert.Equal(t, "0", resp.Header.Get("X-Recourse-Quota-Remaining"))

	resp, body = post(chat, "X-Stainless-Retry-Count", "1")
	assert.Equal(t, 503, resp.StatusCode)
	assert.Equal(t, "quota_exhausted", resp.Header.Get("X-Recourse-Outcome"))
	assert.Contains(t, body, `"code":"quota_exhausted"`)
	assert.Equal(t, 5, up.Count(), "the client's retry never reached the upstream")

	require.NoError(t, p.cmd.Process.Signal(syscall.SIGTERM))
	assert.Equal(t, 0, p.wait(t))
	logs := p.log()
	assert.Contains(t, logs, `"quota":true,"provider_hints":true,"header_timeout":"1m0s","first_output_timeout":"10m0s","idle_timeout":"1s"`)
	assert.Contains(t, logs, `"stall":"idle_timeout"`)
	assert.Contains(t, logs, `"hint":"x_should_retry_false"`)
	assert.Contains(t, logs, `"type":"quota_refused"`)
	assert.Contains(t, logs, `"status":503,"outcome":"quota_exhausted","client_retry":true`)
}
