package eventlog_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/recourse-dev/recourse/chain"
	"github.com/recourse-dev/recourse/chat"
	"github.com/recourse-dev/recourse/codec"
	"github.com/recourse-dev/recourse/codecs/ollama"
	"github.com/recourse-dev/recourse/codecs/openai"
	"github.com/recourse-dev/recourse/event"
	"github.com/recourse-dev/recourse/eventlog"
	"github.com/recourse-dev/recourse/internal/rigtest"
	"github.com/recourse-dev/recourse/layer"
	"github.com/recourse-dev/recourse/layers/quota"
	"github.com/recourse-dev/recourse/layers/retry"
	"github.com/recourse-dev/recourse/layers/stall"
	"github.com/recourse-dev/recourse/recoursetest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// echo repeats the canary key and prompt back, as a hostile provider would.
var echo = "Invalid key " + rigtest.Key + " for " + rigtest.Prompt

func echoStep(status int, kv ...string) recoursetest.Step {
	return recoursetest.JSON(status, recoursetest.OpenAIError("invalid_request_error", "invalid_api_key", echo), kv...)
}

func canaryRequest() *chat.Request {
	return &chat.Request{Model: "gpt-4o-mini", Messages: []chat.Message{{Role: chat.User, Content: rigtest.Prompt}}}
}

// run makes one call through a rig whose policy logs to a JSON handler at
// Debug, and returns the log.
func run(t *testing.T, cdc codec.Codec, p retry.Policy, stream bool, steps ...recoursetest.Step) string {
	t.Helper()
	return runWith(t, cdc, p, nil, stream, steps...)
}

// runWith is run with more options for the chain (per-call layers).
func runWith(t *testing.T, cdc codec.Codec, p retry.Policy, opts []chain.Option, stream bool, steps ...recoursetest.Step) string {
	t.Helper()
	var buf bytes.Buffer
	p.OnEvent = eventlog.New(slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug})))
	r := rigtest.NewWith(t, cdc, p, opts, steps...)
	req := canaryRequest()
	if stream {
		for _, err := range r.Client.Stream(context.Background(), req) {
			if err != nil {
				break
			}
		}
	} else {
		_, _ = r.Client.Complete(context.Background(), req)
	}
	return buf.String()
}

// R10.5: no record of any scenario holds the key, the prompt, a header or
// a hook's error text; the canary is live (each scenario logs something).
func TestR10_5_LogsHoldNoSecret(t *testing.T) {
	allow := func(context.Context, layer.AdmissionRequest) (layer.Decision, error) { return layer.Allow, nil }
	hookErr := func(context.Context, layer.AdmissionRequest) (layer.Decision, error) {
		return "", errors.New("deny " + rigtest.Key + " " + rigtest.Prompt)
	}
	for name, out := range map[string]func(t *testing.T) string{
		"401 echoing key and prompt": func(t *testing.T) string {
			return run(t, openai.New(), retry.Policy{MaxAttempts: 2}, false, echoStep(401, "X-Request-Id", rigtest.Key))
		},
		"429 with Retry-After, then success echoing the prompt": func(t *testing.T) string {
			return run(t, openai.New(), retry.Policy{MaxAttempts: 2}, false,
				echoStep(429, "Retry-After", "1", "X-Request-Id", "req_"+rigtest.Prompt),
				recoursetest.JSON(200, recoursetest.OpenAIChat("You said "+rigtest.Prompt)))
		},
		"503s exhausted": func(t *testing.T) string {
			return run(t, openai.New(), retry.Policy{MaxAttempts: 3}, false, echoStep(503), echoStep(503, "Retry-After", rigtest.Key), echoStep(503))
		},
		"admission hook error": func(t *testing.T) string {
			return run(t, openai.New(), retry.Policy{MaxAttempts: 2, Admit: hookErr}, false, echoStep(503))
		},
		"stream cut after echoed content": func(t *testing.T) string {
			return run(t, openai.New(), retry.Policy{MaxAttempts: 2}, true,
				recoursetest.SSE(recoursetest.OpenAIStream("You said "+rigtest.Prompt)...).Cut(90))
		},
		"retry quota keyed by credential refuses after an echoing 429": func(t *testing.T) string {
			q, err := quota.New(quota.WithFloor(1), quota.WithRatio(0), quota.ByCredential(), quota.ByModel(), quota.WithStore(quota.NewMemoryStore()))
			require.NoError(t, err)
			log := runWith(t, openai.New(), retry.Policy{MaxAttempts: 3}, []chain.Option{chain.WithPerCall(q)}, false,
				echoStep(429, "Retry-After", "1"), echoStep(429, "Retry-After", "1"))
			assert.Contains(t, log, `"type":"quota_refused"`)
			assert.Contains(t, log, `"quota":{"upstream":"127.0.0.1:`)
			return log
		},
		"ollama stream with telemetry": func(t *testing.T) string {
			return run(t, ollama.New(), retry.Policy{MaxAttempts: 2, Admit: allow}, true,
				recoursetest.NDJSON(recoursetest.OllamaStream("You said "+rigtest.Prompt)...))
		},
	} {
		t.Run(name, func(t *testing.T) {
			log := out(t)
			require.NotEmpty(t, log, "the canary is live: the scenario logged")
			for _, banned := range []string{rigtest.Key, rigtest.Prompt, "CANARY", "Bearer", "Authorization"} {
				assert.NotContains(t, log, banned)
			}
		})
	}
}

// R11: one record per event, in order, each at its level, with the safe
// fields a reader needs.
func TestR11_OneRecordPerEventAtItsLevel(t *testing.T) {
	allow := func(context.Context, layer.AdmissionRequest) (layer.Decision, error) { return layer.Allow, nil }
	var buf bytes.Buffer
	p := retry.Policy{MaxAttempts: 2, Admit: allow}
	p.OnEvent = eventlog.New(slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug,
		ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey {
				return slog.Attr{}
			}
			return a
		}})))
	r := rigtest.New(t, openai.New(), p, echoStep(503, "Retry-After", "2"), recoursetest.JSON(200, recoursetest.OpenAIChat("hi")))
	_, err := r.Client.Complete(context.Background(), canaryRequest())
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	want := []struct{ level, typ string }{
		{"DEBUG", "attempt_started"}, {"WARN", "attempt_failed"}, {"INFO", "admission_pending"}, {"INFO", "admission_allowed"},
		{"INFO", "delay_scheduled"}, {"INFO", "retry_started"}, {"DEBUG", "attempt_started"}, {"DEBUG", "attempt_succeeded"},
	}
	require.Len(t, lines, len(want), buf.String())
	for i, w := range want {
		assert.Contains(t, lines[i], "level="+w.level+" ")
		assert.Contains(t, lines[i], "type="+w.typ+" ")
	}
	assert.Contains(t, lines[1], "failure.http_status=503")
	assert.Contains(t, lines[1], "failure.reason=transient")
	assert.Contains(t, lines[4], "delay_ms=2000")
	assert.Contains(t, lines[4], "failure.retry_after=seconds")
	assert.Contains(t, lines[6], "wire_attempt=2")
}

// Levels follow the event type; a disabled level writes nothing and the
// observer never fails the call.
func TestLevels(t *testing.T) {
	for typ, want := range map[event.Type]slog.Level{
		event.AttemptStarted: slog.LevelDebug, event.Telemetry: slog.LevelDebug,
		event.AttemptFailed: slog.LevelWarn, event.DelayScheduled: slog.LevelInfo,
		event.Cancelled: slog.LevelInfo, event.Exhausted: slog.LevelError,
		event.AdmissionNoDecision: slog.LevelError, event.AdmissionRequired: slog.LevelError,
		event.QuotaRefused: slog.LevelWarn, event.QuotaUnavailable: slog.LevelWarn, event.CooldownWait: slog.LevelInfo,
	} {
		assert.Equal(t, want, eventlog.Level(typ), typ)
	}
	var buf bytes.Buffer
	obs := eventlog.New(slog.New(slog.NewTextHandler(&buf, nil))) // Info and above
	require.NoError(t, obs(event.Event{Type: event.AttemptStarted}))
	assert.Empty(t, buf.String())
	require.NoError(t, obs(event.Event{Type: event.Exhausted}))
	assert.Contains(t, buf.String(), "level=ERROR")
}

// R11.2: a record carries every safe field of the event's failure that the
// proxy's lines carry too — the stall limit that fired, the provider hint
// the classification honoured and the header a millisecond Retry-After was
// read from — and still no secret (R10.5).
func TestR11_2_RecordsCarryStallHintAndRetryAfterHeader(t *testing.T) {
	hinted := run(t, openai.New(), retry.Policy{MaxAttempts: 2, ProviderHints: true}, false,
		echoStep(503, "retry-after-ms", "5", "x-should-retry", "false", "X-Request-Id", rigtest.Key))
	assert.Contains(t, hinted, `"hint":"x_should_retry_false"`)
	assert.Contains(t, hinted, `"retry_after":"milliseconds","retry_after_header":"retry-after-ms","retry_after_ms":5`)

	plain := run(t, openai.New(), retry.Policy{MaxAttempts: 2}, false, echoStep(503, "Retry-After", "1"), recoursetest.JSON(200, recoursetest.OpenAIChat("hi")))
	assert.Contains(t, plain, `"retry_after":"seconds","retry_after_ms":1000`)
	assert.NotContains(t, plain, "retry_after_header", "Retry-After itself is the default header and is not named")

	lim, err := stall.New(stall.Limits{Idle: time.Millisecond})
	require.NoError(t, err)
	stalled := runWith(t, openai.New(), retry.Policy{MaxAttempts: 1}, []chain.Option{chain.WithPerAttempt(lim)}, true,
		recoursetest.SSE(": keepalive\n\n").Held())
	assert.Contains(t, stalled, `"stall":"idle_timeout"`)

	for _, log := range []string{hinted, plain, stalled} {
		for _, banned := range []string{rigtest.Key, rigtest.Prompt, "CANARY", "Bearer", "Authorization"} {
			assert.NotContains(t, log, banned)
		}
	}
}
