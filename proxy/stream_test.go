package proxy

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/recourse-dev/recourse/recoursetest"
)

const keepalive = ": keepalive\n\n"

func TestStreamIsByteForByteWithKeepalives(t *testing.T) {
	events := recoursetest.OpenAIStream("Hel", "lo")
	events = append([]string{keepalive}, events...)
	r := newRig(t, "openai", nil, recoursetest.SSE(events...).WithHeader("X-Request-Id", "req-9"))
	got := r.post(t, "/v1/chat/completions", streamBody)
	require.NoError(t, got.err)
	assert.Equal(t, 200, got.status)
	assert.Equal(t, strings.Join(events, ""), got.body)
	assert.Equal(t, "text/event-stream", got.header.Get("Content-Type"))
	assert.Equal(t, "req-9", got.header.Get("X-Request-Id"))
}

// TestStreamFramesAreFlushedOneByOne reads the first output while the
// upstream holds the rest: the proxy adds no buffering (the role chunk
// before it is held for it, R13.9).
func TestStreamFramesAreFlushedOneByOne(t *testing.T) {
	gate := make(chan struct{})
	events := recoursetest.OpenAIStream("Hel", "lo")
	r := newRig(t, "openai", nil, recoursetest.SSE(events...).Gated(2, gate))
	req, err := http.NewRequest(http.MethodPost, r.proxy.URL+"/v1/chat/completions", strings.NewReader(streamBody))
	require.NoError(t, err)
	resp, err := r.client.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	first := make([]byte, len(events[0])+len(events[1]))
	_, err = io.ReadFull(resp.Body, first)
	require.NoError(t, err)
	assert.Equal(t, events[0]+events[1], string(first), "the first output arrives while the upstream holds the rest")
	close(gate)
	rest, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	assert.Equal(t, strings.Join(events[2:], ""), string(rest))
}

func TestStreamCutBeforeContentIsResumed(t *testing.T) {
	events := recoursetest.OpenAIStream("Hel", "lo")
	r := newRig(t, "openai", nil,
		recoursetest.SSE(keepalive, events[0], events[1]).Cut(len(keepalive)+3),
		recoursetest.SSE(events...))
	got := r.post(t, "/v1/chat/completions", streamBody)
	require.NoError(t, got.err)
	assert.Equal(t, 200, got.status)
	assert.Equal(t, 2, r.up.Count())
	assert.Equal(t, 1, strings.Count(got.body, `"content":"Hel"`), "no duplicated text")
	assert.True(t, strings.HasSuffix(got.body, "data: [DONE]\n\n"))
	assert.True(t, strings.HasPrefix(got.body, keepalive), "the keepalive of the failed attempt was forwarded")
	assert.Contains(t, got.body, ": retrying after transport error (attempt 2/4 in 100ms)\n",
		"a committed stream announces its backoff")
}

func TestStreamCutAfterContentEndsWithAnInBandError(t *testing.T) {
	events := recoursetest.OpenAIStream("Hel", "lo")
	cut := len(events[0]) + len(events[1]) + 5
	r := newRig(t, "openai", nil, recoursetest.SSE(events...).Cut(cut))
	got := r.post(t, "/v1/chat/completions", streamBody)
	assert.Equal(t, 200, got.status)
	require.Error(t, got.err, "the connection is closed without the chunked terminator")
	assert.Equal(t, 1, r.up.Count())
	assert.True(t, strings.HasPrefix(got.body, events[0]+events[1]), got.body)
	tail := got.body[len(events[0])+len(events[1]):]
	assert.True(t, strings.HasPrefix(tail, `data: {"error":{"message":"recourse: recovery interrupted`), tail)
	assert.True(t, strings.HasSuffix(tail, "\n\n"))
	assert.NotContains(t, got.body, "[DONE]")
	r.logged(t, `"outcome":"interrupted"`)
}

func TestOllamaStreamCutAfterContent(t *testing.T) {
	lines := recoursetest.OllamaStream("Hel", "lo")
	r := newRig(t, "ollama", nil, recoursetest.NDJSON(lines...).Cut(len(lines[0])+3))
	got := r.post(t, "/api/chat", `{"model":"llama3.2","messages":[{"role":"user","content":"hi"}]}`)
	assert.Equal(t, 200, got.status)
	require.Error(t, got.err)
	assert.True(t, strings.HasPrefix(got.body, lines[0]))
	tail := got.body[len(lines[0]):]
	assert.True(t, strings.HasPrefix(tail, `{"error":"recourse: `), tail)
	assert.NotContains(t, tail, `"done":true`)
}

// commitNow makes a stream commit at its first backoff.
func commitNow(c *Config) { c.StreamCommitAfter = time.Nanosecond }

func TestStreamCommittedEarlyShowsNotices(t *testing.T) {
	events := recoursetest.OpenAIStream("Hi")
	r := newRig(t, "openai", commitNow,
		recoursetest.JSON(503, recoursetest.OpenAIError("server_error", "", "overloaded")),
		recoursetest.JSON(429, recoursetest.OpenAIError("rate_limit_error", "", "slow"), "Retry-After", "2"),
		recoursetest.SSE(events...))
	got := r.post(t, "/v1/chat/completions", streamBody)
	require.NoError(t, got.err)
	assert.Equal(t, 200, got.status)
	assert.Equal(t, "text/event-stream", got.header.Get("Content-Type"))
	assert.Len(t, got.header.Get(HeaderCallID), 36)
	want := ": retrying after HTTP 503 (attempt 2/4 in 100ms)\n" +
		": retrying after HTTP 429 (attempt 3/4 in 2.0s)\n" + strings.Join(events, "")
	assert.Equal(t, want, got.body)
}

func TestStreamCommittedEarlyFailsInBand(t *testing.T) {
	fail := recoursetest.JSON(503, recoursetest.OpenAIError("server_error", "", "overloaded"))
	r := newRig(t, "openai", commitNow, fail, fail, fail, fail)
	got := r.post(t, "/v1/chat/completions", streamBody)
	assert.Equal(t, 200, got.status, "the status was committed before the outcome was known")
	require.Error(t, got.err)
	lines := strings.SplitAfter(got.body, "\n")
	assert.Equal(t, ": retrying after HTTP 503 (attempt 2/4 in 100ms)\n", lines[0])
	assert.Contains(t, got.body, `data: {"error":{"message":"recourse: recovery exhausted (http/transient, HTTP 503, wire attempt 4)","type":"recourse_error"}}`+"\n\n")
	assert.NotContains(t, got.body, "overloaded", "the provider's text never reaches an in-band frame")
	assert.Equal(t, 4, r.up.Count())
}

func TestStreamHeldByDefault(t *testing.T) {
	fail := recoursetest.JSON(503, recoursetest.OpenAIError("server_error", "", "overloaded"))
	r := newRig(t, "openai", nil, fail, fail, fail, fail)
	got := r.post(t, "/v1/chat/completions", streamBody)
	assert.Equal(t, 503, got.status, "a short backoff keeps the real status")
	assert.Equal(t, "exhausted", got.header.Get("X-Recourse-Outcome"))
	assert.Equal(t, recoursetest.OpenAIError("server_error", "", "overloaded"), got.body)

	// A long Retry-After commits the stream once the wait reaches the limit.
	long := recoursetest.JSON(503, recoursetest.OpenAIError("server_error", "", "overloaded"), "Retry-After", "12")
	r = newRig(t, "openai", nil, long, recoursetest.SSE(recoursetest.OpenAIStream("Hi")...))
	got = r.post(t, "/v1/chat/completions", streamBody)
	assert.Equal(t, 200, got.status)
	assert.True(t, strings.HasPrefix(got.body, ": retrying after HTTP 503 (attempt 2/4 in 12.0s)\n"), got.body)

	// A negative StreamCommitAfter never commits.
	r = newRig(t, "openai", func(c *Config) { c.StreamCommitAfter = -1 }, long, long, long, long)
	got = r.post(t, "/v1/chat/completions", streamBody)
	assert.Equal(t, 503, got.status)
}

func TestOllamaStreamIsNeverCommittedEarly(t *testing.T) {
	fail := recoursetest.JSON(503, recoursetest.OllamaError("busy"))
	r := newRig(t, "ollama", func(c *Config) {
		commitNow(c)
		c.Policy.Admit = allowAll
	}, fail, recoursetest.NDJSON(recoursetest.OllamaStream("Hi")...))
	got := r.post(t, "/api/chat", `{"model":"llama3.2","messages":[{"role":"user","content":"hi"}]}`)
	require.NoError(t, got.err)
	assert.Equal(t, 200, got.status)
	assert.Equal(t, strings.Join(recoursetest.OllamaStream("Hi"), ""), got.body, "no comment lines in NDJSON")
}

// TestClientGoneStopsTheStream checks that a client that leaves mid-stream
// releases the upstream.
func TestClientGoneStopsTheStream(t *testing.T) {
	events := recoursetest.OpenAIStream("Hel", "lo")
	// The role chunk and the first content: the role chunk alone would be
	// held for the output (R13.9).
	r := newRig(t, "openai", nil, recoursetest.SSE(events[0], events[1]).Held())
	ctx, cancel := context.WithCancel(context.Background())
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, r.proxy.URL+"/v1/chat/completions", strings.NewReader(streamBody))
	require.NoError(t, err)
	resp, err := r.client.Do(req)
	require.NoError(t, err)
	line, err := bufio.NewReader(resp.Body).ReadString('\n')
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(line, "data: "))
	cancel()
	resp.Body.Close()
	select {
	case <-r.up.Left():
	case <-time.After(10 * time.Second):
		t.Fatal("the upstream was not released")
	}
}

// TestStreamFrameLargerThanTheFirstBufferArrivesWhole sends a frame longer
// than the copy's first buffer while the upstream holds the rest: every
// byte of it reaches the client without waiting for the next frame, and
// the stream stays byte for byte.
func TestStreamFrameLargerThanTheFirstBufferArrivesWhole(t *testing.T) {
	gate := make(chan struct{})
	events := recoursetest.OpenAIStream(strings.Repeat("x", 3*firstBufSize), "small", strings.Repeat("y", copyBufSize+firstBufSize))
	require.Greater(t, len(events[0])+len(events[1]), firstBufSize)
	r := newRig(t, "openai", nil, recoursetest.SSE(events...).Gated(2, gate))
	req, err := http.NewRequest(http.MethodPost, r.proxy.URL+"/v1/chat/completions", strings.NewReader(streamBody))
	require.NoError(t, err)
	resp, err := r.client.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	first := make([]byte, len(events[0])+len(events[1]))
	_, err = io.ReadFull(resp.Body, first)
	require.NoError(t, err)
	assert.Equal(t, events[0]+events[1], string(first), "the large frame arrives while the upstream holds the rest")
	close(gate)
	rest, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	assert.Equal(t, strings.Join(events[2:], ""), string(rest))
}
