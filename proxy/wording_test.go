package proxy

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/recourse-dev/recourse/broker"
	"github.com/recourse-dev/recourse/codec"
	"github.com/recourse-dev/recourse/codecs/ollama"
	"github.com/recourse-dev/recourse/codecs/omlx"
	"github.com/recourse-dev/recourse/codecs/openai"
	"github.com/recourse-dev/recourse/event"
	"github.com/recourse-dev/recourse/recoursetest"
)

// R21.6: a committed stream's notices read as the broker's status line
// does for the same retries: the failure as broker.FailureText writes it,
// the wait as broker.FormatRetry does.
func TestR21_6_StreamNoticesSpeakTheBrokersWording(t *testing.T) {
	events := recoursetest.OpenAIStream("Hi")
	r := newRig(t, "openai", commitNow,
		recoursetest.SSE(events...).Cut(3),
		recoursetest.JSON(429, recoursetest.OpenAIError("rate_limit_error", "", "slow"), "Retry-After", "2"),
		recoursetest.SSE(events...))
	got := r.post(t, "/v1/chat/completions", streamBody)
	require.NoError(t, got.err)
	assert.Equal(t, http.StatusOK, got.status)
	assert.True(t, strings.HasSuffix(got.body, strings.Join(events, "")), got.body)
	var notices []string
	for _, line := range strings.SplitAfter(got.body, "\n") {
		if rest, ok := strings.CutPrefix(line, ": retrying after "); ok {
			notices = append(notices, strings.TrimSuffix(rest, "\n"))
		}
	}
	require.Equal(t, []string{"transport error (attempt 2/4 in 100ms)", "HTTP 429 (attempt 3/4 in 2.0s)"}, notices)

	broker1 := broker.FormatRetry(broker.RetryNotice{FailedAttempt: 1, MaxAttempts: 4, Wait: 100 * time.Millisecond,
		Error: broker.FailureText(&event.Failure{Category: event.CategoryTransport})})
	broker2 := broker.FormatRetry(broker.RetryNotice{FailedAttempt: 2, MaxAttempts: 4, Wait: 2 * time.Second, HTTPStatus: 429})
	assert.Equal(t, "retrying LLM request after "+notices[0], broker1)
	assert.Equal(t, "retrying LLM request after "+notices[1], broker2)
}

// R21.6: the resume of a background stream before any event carried a
// sequence number says "from the start", as the broker does, not a cursor
// of -1.
func TestR21_6_ResumeNoticeFromTheStart(t *testing.T) {
	ev := event.Event{Type: event.DelayScheduled, Operation: codec.Streaming, NextAttempt: 2, MaxAttempts: 4,
		Delay: 1200 * time.Millisecond, Failure: &event.Failure{Category: event.CategoryTransport, Stall: event.StallIdle},
		Resume: &event.Resume{Cursor: -1}}
	assert.Equal(t, ": resuming after idle timeout from the start (attempt 2/4 in 1.2s)\n", notice(ev))
	ev.Resume.Cursor = 57
	assert.Equal(t, ": resuming after idle timeout from event 57 (attempt 2/4 in 1.2s)\n", notice(ev))
	assert.Contains(t, broker.FormatRetry(broker.RetryNotice{Error: broker.FailureText(ev.Failure), Resume: ev.Resume}),
		"after idle timeout (from event 57)", "the broker names the same failure")
	ev = event.Event{Type: event.DelayScheduled, Operation: codec.Streaming, NextAttempt: 2, MaxAttempts: 4, Delay: 800 * time.Millisecond}
	assert.Equal(t, ": retrying after error (attempt 2/4 in 800ms)\n", notice(ev), "an event without a failure")
}

// R21.6: the proxy's own error answers are the codec's error document, in
// every dialect, and parse as the provider's clients parse them.
func TestR21_6_ErrorAnswersAreTheCodecsDocument(t *testing.T) {
	for _, c := range []struct {
		provider, path, body string
		codec                codec.ErrorDocumenter
	}{
		{"openai", "/v1/chat/completions", chatBody, openai.New()},
		{"omlx", "/v1/chat/completions", chatBody, omlx.New()},
		{"ollama", "/api/chat", ollamaBody, ollama.New()},
	} {
		t.Run(c.provider, func(t *testing.T) {
			r := newRig(t, c.provider, func(cfg *Config) { cfg.MaxBodyBytes = 16 })
			got := r.post(t, c.path, c.body)
			assert.Equal(t, http.StatusRequestEntityTooLarge, got.status)
			assert.Equal(t, "application/json", got.header.Get("Content-Type"))
			msg := "recourse-proxy: the request body is larger than the proxy's limit of 16 bytes (-max-body); nothing was sent upstream"
			assert.Equal(t, string(c.codec.ErrorDocument("request_too_large", msg)), got.body)
			var doc map[string]any
			require.NoError(t, json.Unmarshal([]byte(got.body), &doc), got.body)
			assert.Zero(t, r.up.Count())
		})
	}
	for _, ed := range []codec.ErrorDocumenter{openai.New(), omlx.New(), ollama.New()} {
		odd := "a \"quoted\"\n\\ <html> \u2028 \x01 message"
		var doc struct {
			Error json.RawMessage `json:"error"`
		}
		b := ed.ErrorDocument(`co"de`, odd)
		require.NoError(t, json.Unmarshal(b, &doc), "%s", b)
		assert.True(t, strings.HasSuffix(string(b), "}\n"))
		assert.Contains(t, string(b), "<html>", "HTML characters are not escaped")
	}
}

// R21.6: the proxy asks its codec what the dialect needs and never
// branches on a provider's name or writes JSON by hand; the names are read
// in one place, dialectFor.
func TestR21_6_NoProviderNameBranches(t *testing.T) {
	files, err := filepath.Glob("*.go")
	require.NoError(t, err)
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		src := string(b)
		if f == "config.go" {
			// The one mapping of a name to its codecs, and the list of names.
			i := strings.Index(src, "func dialectFor(")
			require.Positive(t, i)
			end := strings.Index(src[i:], "\n}\n")
			src = src[:i] + src[i+end:]
			src = strings.Replace(src, `var providers = []string{"openai", "ollama", "omlx", "gemini", "anthropic"}`, "", 1)
		}
		var code []string // the file without its comment lines, which may name providers
		for _, line := range strings.Split(src, "\n") {
			if !strings.HasPrefix(strings.TrimSpace(line), "//") {
				code = append(code, line)
			}
		}
		src = strings.Join(code, "\n")
		for _, lit := range []string{`"openai"`, `"ollama"`, `"omlx"`, `"gemini"`, `"anthropic"`, "jsonString", "errorBody"} {
			assert.False(t, strings.Contains(src, lit), "%s holds %s", f, lit)
		}
	}
}
