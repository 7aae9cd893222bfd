package main

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/recourse-dev/recourse/chain"
	"github.com/recourse-dev/recourse/chat"
	"github.com/recourse-dev/recourse/client"
	"github.com/recourse-dev/recourse/event"
	"github.com/recourse-dev/recourse/layer"
	"github.com/recourse-dev/recourse/layer/layertest"
	"github.com/recourse-dev/recourse/recoursetest"
)

// The request log keeps the layer contract: pass-through, errors passed up,
// the caller's request unchanged, safe for concurrent use.
func TestRequestLogContract(t *testing.T) {
	layertest.Layer(t, NewRequestLog(slog.New(slog.NewJSONHandler(io.Discard, nil))))
	assert.Equal(t, layer.PerCall, NewRequestLog(nil).Position())
}

// logBuffer is a concurrency-safe buffer for a JSON slog handler.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// records returns the JSON records written so far.
func (l *logBuffer) records(t *testing.T) []map[string]any {
	t.Helper()
	var out []map[string]any
	for line := range strings.Lines(l.String()) {
		var m map[string]any
		require.NoError(t, json.Unmarshal([]byte(line), &m), "record %q", line)
		out = append(out, m)
	}
	return out
}

func newJSONLog() (*logBuffer, *slog.Logger) {
	buf := &logBuffer{}
	return buf, slog.New(slog.NewJSONHandler(buf, nil))
}

// assertNoSecret checks the whole log output for the canaries: the API
// key, the prompt, the answer, the signing key (raw and hex) and the
// signatures the gateway received.
func assertNoSecret(t *testing.T, log string, key []byte, gw *gateway, extra ...string) {
	t.Helper()
	canaries := append([]string{demoAPIKey, prompt, "canary-answer", "Bearer", string(key), hex.EncodeToString(key)}, extra...)
	for _, r := range gw.Received() {
		canaries = append(canaries, r.Signature)
	}
	for _, c := range canaries {
		assert.NotContains(t, log, c)
	}
}

// One logical completion that took two wire attempts (503, then 200) is
// one Info record with the method, the path, the final status, the logical
// request ID and the attempt count; a second completion on the same chain
// is a second record with its own logical ID. No record holds a secret.
func TestRequestLogOneRecordPerCall(t *testing.T) {
	key := []byte(demoSigningKey)
	gw := newGateway(key,
		recoursetest.JSON(http.StatusServiceUnavailable, recoursetest.OpenAIError("server_error", "", "upstream overloaded")),
		recoursetest.JSON(http.StatusOK, recoursetest.OpenAIChat("canary-answer one")),
		recoursetest.JSON(http.StatusOK, recoursetest.OpenAIChat("canary-answer two")),
	)
	t.Cleanup(gw.Close)
	buf, logger := newJSONLog()
	var logical []string
	ch, err := buildChain(logger, key, func(ev event.Event) error {
		if ev.Type == event.AttemptSucceeded {
			logical = append(logical, ev.LogicalID)
		}
		return nil
	})
	require.NoError(t, err)
	cl, err := client.New(gw.URL, ch, client.WithAPIKey(demoAPIKey))
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	_, err = cl.Complete(ctx, helloRequest())
	require.NoError(t, err)
	recs := buf.records(t)
	require.Len(t, recs, 1, "one record for one logical completion")
	r := recs[0]
	assert.Equal(t, "INFO", r["level"])
	assert.Equal(t, "completion", r["msg"])
	assert.Equal(t, "POST", r["method"])
	assert.Equal(t, "/openai/v1/chat", r["path"])
	assert.EqualValues(t, 200, r["status"])
	assert.EqualValues(t, 2, r["wire_attempts"])
	assert.Equal(t, logical[0], r["logical_request_id"])
	assert.Contains(t, r, "duration")
	for _, k := range []string{"error", "outcome", "reason"} {
		assert.NotContains(t, r, k)
	}

	_, err = cl.Complete(ctx, helloRequest())
	require.NoError(t, err)
	recs = buf.records(t)
	require.Len(t, recs, 2)
	assert.EqualValues(t, 1, recs[1]["wire_attempts"])
	assert.Equal(t, logical[1], recs[1]["logical_request_id"])
	assert.NotEqual(t, recs[0]["logical_request_id"], recs[1]["logical_request_id"])

	require.Len(t, gw.Received(), 3)
	assertNoSecret(t, buf.String(), key, gw)
}

// A call that fails is one Warn record too, with the status of the last
// attempt, the classification reason and, where the error reaches the
// layer, its type and the recovery outcome.
func TestRequestLogFailures(t *testing.T) {
	key := []byte(demoSigningKey)
	busy := recoursetest.JSON(http.StatusServiceUnavailable, recoursetest.OpenAIError("server_error", "", "upstream overloaded"))
	bad := recoursetest.JSON(http.StatusBadRequest, recoursetest.OpenAIError("invalid_request_error", "", "canary-answer: bad request"))
	for _, tc := range []struct {
		name   string
		script []recoursetest.Step
		dropIn bool
		want   map[string]any
	}{
		{"permanent 400, native client", []recoursetest.Step{bad}, false, map[string]any{
			"status": 400.0, "reason": "permanent", "error": "*layer.RecoveryError", "outcome": "interrupted", "wire_attempts": 1.0}},
		{"three 503s, native client", []recoursetest.Step{busy, busy, busy}, false, map[string]any{
			"status": 503.0, "reason": "transient", "error": "*layer.RecoveryError", "outcome": "exhausted", "wire_attempts": 3.0}},
		// A drop-in client gets the 400 itself: no error reaches the layer,
		// the call's Result still names the outcome.
		{"permanent 400, drop-in", []recoursetest.Step{bad}, true, map[string]any{
			"status": 400.0, "reason": "permanent", "outcome": "interrupted", "wire_attempts": 1.0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			gw := newGateway(key, tc.script...)
			t.Cleanup(gw.Close)
			buf, logger := newJSONLog()
			ch, err := buildChain(logger, key, nil)
			require.NoError(t, err)
			t.Cleanup(ch.CloseIdleConnections)

			if tc.dropIn {
				resp, err := dropInPost(t, ch, gw, helloRequest())
				require.NoError(t, err)
				assert.Equal(t, http.StatusBadRequest, resp.StatusCode)
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			} else {
				cl, err := client.New(gw.URL, ch, client.WithAPIKey(demoAPIKey))
				require.NoError(t, err)
				_, err = cl.Complete(context.Background(), helloRequest())
				require.Error(t, err)
			}

			recs := buf.records(t)
			require.Len(t, recs, 1)
			assert.Equal(t, "WARN", recs[0]["level"])
			for k, v := range tc.want {
				assert.Equal(t, v, recs[0][k], k)
			}
			if _, ok := tc.want["error"]; !ok {
				assert.NotContains(t, recs[0], "error")
			}
			assertNoSecret(t, buf.String(), key, gw)
		})
	}
}

// dropInPost sends req, encoded by the gateway codec, through ch as an SDK
// would: an http.Client over the chain, with the API key as a bearer token.
func dropInPost(t *testing.T, ch *chain.Chain, gw *gateway, req *chat.Request) (*http.Response, error) {
	t.Helper()
	body, err := NewGatewayCodec().Encode(req)
	require.NoError(t, err)
	hreq, err := http.NewRequest(http.MethodPost, gw.URL+gatewayPath, bytes.NewReader(body))
	require.NoError(t, err)
	hreq.Header.Set("Authorization", "Bearer "+demoAPIKey)
	hreq.Header.Set("Content-Type", "application/json")
	return (&http.Client{Transport: ch}).Do(hreq)
}

func streamScript() []recoursetest.Step {
	return []recoursetest.Step{
		recoursetest.JSON(http.StatusServiceUnavailable, recoursetest.OpenAIError("server_error", "", "upstream overloaded")),
		recoursetest.SSE(recoursetest.OpenAIStream("canary-answer ", "streamed")...),
	}
}

// A native stream is one record, written when the stream ends (not when
// its headers arrive), with both wire attempts counted.
func TestRequestLogNativeStream(t *testing.T) {
	key := []byte(demoSigningKey)
	gw := newGateway(key, streamScript()...)
	t.Cleanup(gw.Close)
	buf, logger := newJSONLog()
	ch, err := buildChain(logger, key, nil)
	require.NoError(t, err)
	cl, err := client.New(gw.URL, ch, client.WithAPIKey(demoAPIKey))
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	var content strings.Builder
	for chunk, err := range cl.Stream(ctx, helloRequest()) {
		require.NoError(t, err)
		if chunk.Content != "" {
			assert.Empty(t, buf.String(), "a record was written before the stream ended")
		}
		content.WriteString(chunk.Content)
	}

	assert.Equal(t, "canary-answer streamed", content.String())
	recs := buf.records(t)
	require.Len(t, recs, 1)
	assert.Equal(t, "INFO", recs[0]["level"])
	assert.EqualValues(t, 200, recs[0]["status"])
	assert.EqualValues(t, 2, recs[0]["wire_attempts"])
	assertNoSecret(t, buf.String(), key, gw)
}

// A drop-in stream is one record too, whether the client reads it to its
// end or closes it early.
func TestRequestLogDropInStream(t *testing.T) {
	for _, readAll := range []bool{true, false} {
		name := "closed early"
		if readAll {
			name = "read to the end"
		}
		t.Run(name, func(t *testing.T) {
			key := []byte(demoSigningKey)
			gw := newGateway(key, streamScript()...)
			t.Cleanup(gw.Close)
			buf, logger := newJSONLog()
			ch, err := buildChain(logger, key, nil)
			require.NoError(t, err)
			t.Cleanup(ch.CloseIdleConnections)
			req := helloRequest()
			req.Stream = true

			resp, err := dropInPost(t, ch, gw, req)
			require.NoError(t, err)
			assert.Equal(t, http.StatusOK, resp.StatusCode)
			assert.Empty(t, buf.String(), "a record was written before the stream ended")
			if readAll {
				b, err := io.ReadAll(resp.Body)
				require.NoError(t, err)
				assert.Contains(t, string(b), "data: [DONE]")
			}
			resp.Body.Close()

			recs := buf.records(t)
			require.Len(t, recs, 1)
			assert.EqualValues(t, 200, recs[0]["status"])
			assert.EqualValues(t, 2, recs[0]["wire_attempts"])
			assertNoSecret(t, buf.String(), key, gw)
		})
	}
}

// Without a logger the layer writes to slog.Default(). The path is logged
// without the query, which may hold a credential.
func TestRequestLogDefaultLogger(t *testing.T) {
	buf, logger := newJSONLog()
	old := slog.Default()
	slog.SetDefault(logger)
	t.Cleanup(func() { slog.SetDefault(old) })
	rt := NewRequestLog(nil).Wrap(layer.RoundTripperFunc(func(req *http.Request) (*http.Response, error) {
		return &http.Response{StatusCode: http.StatusNoContent, Body: http.NoBody, Request: req}, nil
	}))
	req, err := http.NewRequest(http.MethodPost, "http://user:canary-password@gateway.example/openai/v1/chat?key=canary-query", nil)
	require.NoError(t, err)

	resp, err := rt.RoundTrip(req)

	require.NoError(t, err)
	resp.Body.Close()
	recs := buf.records(t)
	require.Len(t, recs, 1)
	assert.EqualValues(t, 204, recs[0]["status"])
	assert.Equal(t, "/openai/v1/chat", recs[0]["path"])
	assert.NotContains(t, buf.String(), "canary")
	assert.NotContains(t, recs[0], "logical_request_id", "outside a chain there is no call to read")
}
