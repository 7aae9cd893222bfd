package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

// TestMain fails the package if a test leaves a goroutine behind.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// canaries must not appear in anything exported.
var canaries = []string{apiKey, prompt, "Bearer"}

// TestRunExportsOTLP runs the program against a stub OTLP/HTTP receiver:
// no Jaeger needed. Protobuf keeps strings as raw bytes, so the canaries
// would show in the export body if a span carried them.
func TestRunExportsOTLP(t *testing.T) {
	var mu sync.Mutex
	var bodies [][]byte
	stub := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		if r.URL.Path == "/v1/traces" {
			bodies = append(bodies, b)
		}
		mu.Unlock()
		w.Header().Set("Content-Type", "application/x-protobuf")
		w.WriteHeader(http.StatusOK)
	}))
	defer stub.Close()
	var out bytes.Buffer
	ids, err := run(context.Background(), &out, config{otlp: strings.TrimPrefix(stub.URL, "http://"), service: "stub", query: "http://jaeger"})
	require.NoError(t, err)
	assert.Len(t, ids.Completion, 32)
	assert.Len(t, ids.Stream, 32)
	assert.NotEqual(t, ids.Completion, ids.Stream)
	assert.Contains(t, out.String(), "http://jaeger/api/traces/"+ids.Completion)
	mu.Lock()
	all := bytes.Join(bodies, nil)
	mu.Unlock()
	require.NotEmpty(t, all)
	for _, name := range []string{"chat gpt-4o-mini", "POST", "http.request.resend_count", "recourse.delay.scheduled"} {
		assert.Contains(t, string(all), name)
	}
	for _, c := range canaries {
		assert.NotContains(t, string(all), c)
	}
}

// TestJaegerE2E starts the Jaeger binary named by JAEGER_BIN (make e2e
// builds it from tools/jaeger) on free loopback ports, runs the program
// against it and reads the traces back through Jaeger's query API.
func TestJaegerE2E(t *testing.T) {
	bin := os.Getenv("JAEGER_BIN")
	if bin == "" {
		t.Skip("JAEGER_BIN is not set; run `make e2e`")
	}
	started := time.Now()
	ports := freePorts(t, 5)
	names := []string{"JAEGER_OTLP_HTTP_PORT", "JAEGER_OTLP_GRPC_PORT", "JAEGER_QUERY_PORT", "JAEGER_QUERY_GRPC_PORT", "JAEGER_HEALTH_PORT"}
	env := os.Environ()
	for i, n := range names {
		env = append(env, n+"="+strconv.Itoa(ports[i]))
	}
	otlp := "127.0.0.1:" + strconv.Itoa(ports[0])
	query := "http://127.0.0.1:" + strconv.Itoa(ports[2])
	health := "http://127.0.0.1:" + strconv.Itoa(ports[4]) + "/status"

	cfgPath, err := filepath.Abs("testdata/jaeger-loopback.yaml")
	require.NoError(t, err)
	logPath := filepath.Join(t.TempDir(), "jaeger.log")
	logFile, err := os.Create(logPath)
	require.NoError(t, err)
	cmd := exec.Command(bin, "--config="+cfgPath)
	cmd.Env, cmd.Stdout, cmd.Stderr = env, logFile, logFile
	// If this test process dies without running its cleanups (a test
	// timeout), the kernel kills Jaeger too.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	require.NoError(t, cmd.Start())
	t.Logf("jaeger pid %d, otlp %s, query %s", cmd.Process.Pid, otlp, query)
	t.Cleanup(func() {
		stopJaeger(t, cmd)
		logFile.Close()
		if t.Failed() {
			b, _ := os.ReadFile(logPath)
			t.Logf("jaeger log:\n%s", b)
		}
	})

	hc := &http.Client{Transport: &http.Transport{}, Timeout: 10 * time.Second}
	defer hc.CloseIdleConnections()
	poll(t, 60*time.Second, "jaeger healthy", func() bool {
		resp, err := hc.Get(health)
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	t.Logf("jaeger healthy after %v", time.Since(started).Round(time.Millisecond))

	service := fmt.Sprintf("recourse-e2e-%d", time.Now().UnixNano())
	var out bytes.Buffer
	ids, err := run(context.Background(), &out, config{otlp: otlp, service: service, query: query})
	require.NoError(t, err)
	t.Logf("program output:\n%s", out.String())

	// Poll the search API until both traces are complete (3 spans each).
	var raw []byte
	var found map[string]jaegerTrace
	poll(t, 30*time.Second, "both traces in Jaeger", func() bool {
		raw = get(t, hc, query+"/api/traces?service="+service+"&limit=20")
		var r struct{ Data []jaegerTrace }
		require.NoError(t, json.Unmarshal(raw, &r))
		found = map[string]jaegerTrace{}
		for _, tr := range r.Data {
			found[tr.TraceID] = tr
		}
		return len(found[ids.Completion].Spans) == 3 && len(found[ids.Stream].Spans) == 3
	})
	t.Logf("traces readable after %v", time.Since(started).Round(time.Millisecond))
	for _, c := range canaries {
		assert.NotContains(t, string(raw), c, "search API answer")
	}

	for _, tc := range []struct {
		name, id string
		stream   bool
	}{{"completion", ids.Completion, false}, {"stream", ids.Stream, true}} {
		t.Run(tc.name, func(t *testing.T) {
			one := get(t, hc, query+"/api/traces/"+tc.id)
			for _, c := range canaries {
				assert.NotContains(t, string(one), c, "trace API answer")
			}
			var r struct{ Data []jaegerTrace }
			require.NoError(t, json.Unmarshal(one, &r))
			require.Len(t, r.Data, 1)
			tr := r.Data[0]
			t.Logf("%s trace %s:\n%s", tc.name, tc.id, tr.tree())
			checkTree(t, tr, service, tc.stream)
		})
	}
}

// checkTree asserts the span tree of one call: the logical span and its two
// attempt spans (503, then 200 with resend_count 1).
func checkTree(t *testing.T, tr jaegerTrace, service string, stream bool) {
	t.Helper()
	require.Len(t, tr.Spans, 3)
	var root *jaegerSpan
	var posts []*jaegerSpan
	for i := range tr.Spans {
		s := &tr.Spans[i]
		assert.Equal(t, service, tr.Processes[s.ProcessID].ServiceName)
		if len(s.References) == 0 {
			require.Nil(t, root, "one root")
			root = s
			continue
		}
		posts = append(posts, s)
	}
	require.NotNil(t, root)
	require.Len(t, posts, 2)
	slices.SortFunc(posts, func(a, b *jaegerSpan) int { return int(a.StartTime - b.StartTime) })

	assert.Equal(t, "chat "+model, root.OperationName)
	rt := root.tags()
	assert.Equal(t, "client", rt["span.kind"])
	assert.Equal(t, "chat", rt["gen_ai.operation.name"])
	assert.Equal(t, "openai", rt["gen_ai.provider.name"])
	assert.Equal(t, model, rt["gen_ai.request.model"])
	assert.Equal(t, "gpt-4o-mini-2024-07-18", rt["gen_ai.response.model"])
	assert.Equal(t, "success", rt["recourse.outcome"])
	assert.Equal(t, "2", rt["recourse.attempts"])
	assert.NotContains(t, rt, "error")
	if stream {
		assert.Equal(t, "true", rt["gen_ai.request.stream"])
	} else {
		assert.NotContains(t, rt, "gen_ai.request.stream")
	}
	assert.Equal(t, []string{"recourse.admission.pending", "recourse.admission.allowed", "recourse.delay.scheduled", "recourse.retry.started"}, root.events())

	for i, p := range posts {
		assert.Equal(t, "POST", p.OperationName)
		require.Len(t, p.References, 1)
		assert.Equal(t, "CHILD_OF", p.References[0].RefType)
		assert.Equal(t, root.SpanID, p.References[0].SpanID, "attempt %d is a child of the logical span", i+1)
		assert.GreaterOrEqual(t, p.StartTime, root.StartTime)
		assert.LessOrEqual(t, p.StartTime+p.Duration, root.StartTime+root.Duration)
		pt := p.tags()
		assert.Equal(t, "client", pt["span.kind"])
		assert.Equal(t, "POST", pt["http.request.method"])
		assert.Equal(t, "127.0.0.1", pt["server.address"])
		assert.NotEmpty(t, pt["server.port"])
		assert.True(t, strings.HasSuffix(pt["url.full"], "/v1/chat/completions"), pt["url.full"])
	}
	first, second := posts[0].tags(), posts[1].tags()
	assert.Equal(t, "503", first["http.response.status_code"])
	assert.Equal(t, "503", first["error.type"])
	assert.Equal(t, "true", first["error"])
	assert.NotContains(t, first, "http.request.resend_count")
	assert.Equal(t, "200", second["http.response.status_code"])
	assert.Equal(t, "1", second["http.request.resend_count"])
	assert.NotContains(t, second, "error")
	assert.GreaterOrEqual(t, posts[1].StartTime, posts[0].StartTime+posts[0].Duration, "the resend starts after the first attempt ended")
	if stream {
		// The stream ends after the headers: the logical span covers it.
		assert.GreaterOrEqual(t, root.StartTime+root.Duration, posts[1].StartTime+posts[1].Duration)
	}
}

// The parts of Jaeger's /api/traces JSON the test reads.
type jaegerTrace struct {
	TraceID   string       `json:"traceID"`
	Spans     []jaegerSpan `json:"spans"`
	Processes map[string]struct {
		ServiceName string `json:"serviceName"`
	} `json:"processes"`
}

type jaegerSpan struct {
	SpanID        string `json:"spanID"`
	OperationName string `json:"operationName"`
	References    []struct {
		RefType string `json:"refType"`
		SpanID  string `json:"spanID"`
	} `json:"references"`
	StartTime int64       `json:"startTime"` // µs
	Duration  int64       `json:"duration"`  // µs
	Tags      []jaegerKV  `json:"tags"`
	Logs      []jaegerLog `json:"logs"`
	ProcessID string      `json:"processID"`
}

type jaegerKV struct {
	Key   string          `json:"key"`
	Value json.RawMessage `json:"value"`
}

type jaegerLog struct {
	Fields []jaegerKV `json:"fields"`
}

// text returns a tag value as text: strings unquoted, numbers and booleans as written.
func (kv jaegerKV) text() string {
	var s string
	if json.Unmarshal(kv.Value, &s) == nil {
		return s
	}
	return string(kv.Value)
}

func (s *jaegerSpan) tags() map[string]string {
	m := map[string]string{}
	for _, kv := range s.Tags {
		m[kv.Key] = kv.text()
	}
	return m
}

// events returns the span's log (span event) names in order.
func (s *jaegerSpan) events() []string {
	var out []string
	for _, l := range s.Logs {
		for _, f := range l.Fields {
			if f.Key == "event" {
				out = append(out, f.text())
			}
		}
	}
	return out
}

// tree renders the trace for the test log: names, parents, tags, events.
func (tr jaegerTrace) tree() string {
	var b strings.Builder
	var t0 int64
	for _, s := range tr.Spans {
		if len(s.References) == 0 {
			t0 = s.StartTime
		}
	}
	spans := slices.Clone(tr.Spans)
	slices.SortFunc(spans, func(a, b jaegerSpan) int { return int(a.StartTime - b.StartTime) })
	for _, s := range spans {
		parent := "-"
		indent := ""
		if len(s.References) > 0 {
			parent, indent = s.References[0].SpanID, "  └─ "
		}
		fmt.Fprintf(&b, "%s%s  span=%s parent=%s start=+%dµs dur=%dµs\n", indent, s.OperationName, s.SpanID, parent, s.StartTime-t0, s.Duration)
		keys := make([]string, 0, len(s.Tags))
		tags := s.tags()
		for k := range tags {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			fmt.Fprintf(&b, "%s      %s=%s\n", strings.Repeat(" ", len(indent)), k, tags[k])
		}
		for _, l := range s.Logs {
			var fs []string
			for _, f := range l.Fields {
				fs = append(fs, f.Key+"="+f.text())
			}
			fmt.Fprintf(&b, "%s      log: %s\n", strings.Repeat(" ", len(indent)), strings.Join(fs, " "))
		}
	}
	return b.String()
}

func get(t *testing.T, hc *http.Client, url string) []byte {
	t.Helper()
	resp, err := hc.Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode, "GET %s: %s", url, b)
	return b
}

// poll calls ok every 100 ms until it returns true or d passes.
func poll(t *testing.T, d time.Duration, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", d, what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// freePorts returns n distinct free TCP ports on 127.0.0.1.
func freePorts(t *testing.T, n int) []int {
	t.Helper()
	var ls []net.Listener
	var ports []int
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	for _, l := range ls {
		l.Close()
	}
	return ports
}

// stopJaeger sends SIGTERM to Jaeger's PID and waits; after 15 s it kills.
func stopJaeger(t *testing.T, cmd *exec.Cmd) {
	t.Helper()
	start := time.Now()
	_ = cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(15 * time.Second):
		_ = cmd.Process.Kill()
		<-done
	}
	t.Logf("jaeger stopped in %v", time.Since(start).Round(time.Millisecond))
}
