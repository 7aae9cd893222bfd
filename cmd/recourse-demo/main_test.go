package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/recourse-dev/recourse/layers/retry"
)

// R19.9, R19.10: the demo's background scene shows the whole answer once,
// the resume notice, and one POST followed by one resume read.
func TestR19_9_DemoBackgroundScene(t *testing.T) {
	var out bytes.Buffer
	d := &demo{out: &out}
	d.backgroundResume(retry.Policy{MaxAttempts: 3, Sleep: func(ctx context.Context, _ time.Duration) error { return ctx.Err() }})
	s := out.String()
	whole := strings.Join(backgroundAnswer, "")
	assert.Contains(t, s, "✓ the whole answer, each byte exactly once: \""+whole+"\"")
	assert.Contains(t, s, "status: resuming LLM stream after transport error (from event 7)")
	assert.Contains(t, s, "provider saw: GET /v1/responses/resp_demo?starting_after=7&stream=true")
	require.Len(t, d.rows, 1)
	assert.Equal(t, row{name: "background stream resumed", outcome: "success", attempts: 2, posts: 1, target: "-"}, d.rows[0])
	// The streamed text, with the status line taken out, is the answer once.
	var shown strings.Builder
	for _, line := range strings.Split(s, "\n") {
		if strings.HasPrefix(line, "  ") && !strings.Contains(line, "status:") && !strings.Contains(line, "✓") &&
			!strings.Contains(line, "provider saw") && !strings.Contains(line, "A background Responses stream") {
			shown.WriteString(strings.TrimPrefix(line, "  "))
		}
	}
	assert.Equal(t, whole, shown.String())
}

// R22.2: the demo's Claude scene shows the in-band overload handled as a
// 529, one resend, and the whole answer.
func TestR22_2_DemoClaudeScene(t *testing.T) {
	var out bytes.Buffer
	d := &demo{out: &out}
	d.claudeOverload(retry.Policy{MaxAttempts: 3, Sleep: func(ctx context.Context, _ time.Duration) error { return ctx.Err() }})
	s := out.String()
	assert.Contains(t, s, "attempt_failed         attempt 1/3  http HTTP 529 → transient")
	assert.Contains(t, s, "✓ streamed answer: \""+strings.Join(claudeAnswer, "")+"\"")
	require.Len(t, d.rows, 1)
	assert.Equal(t, row{name: "Claude in-band overload", outcome: "success", attempts: 2, posts: 2, target: "-"}, d.rows[0])
}

// R23.2: the demo's Gemini scene waits the delay the 429's body named, with
// no Retry-After header, and succeeds on the second POST to the model's
// path.
func TestR23_2_DemoGeminiScene(t *testing.T) {
	var out bytes.Buffer
	var slept []time.Duration
	d := &demo{out: &out}
	d.geminiScene(retry.Policy{MaxAttempts: 3, Sleep: func(_ context.Context, dl time.Duration) error { slept = append(slept, dl); return nil }})
	s := out.String()
	assert.Contains(t, s, "HTTP 429 → transient (Retry-After body: 1s)")
	assert.Contains(t, s, "✓ answer: \"Hello from Gemini after the wait its 429 named.\"")
	assert.Equal(t, []time.Duration{time.Second}, slept)
	require.Len(t, d.rows, 1)
	assert.Equal(t, row{name: "Gemini 429, wait in the body", outcome: "success", attempts: 2, posts: 2, target: "-"}, d.rows[0])
}
