package eventlog_test

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/recourse-dev/recourse/client"
	"github.com/recourse-dev/recourse/codecs/openai"
	"github.com/recourse-dev/recourse/event"
	"github.com/recourse-dev/recourse/eventlog"
	"github.com/recourse-dev/recourse/internal/rigtest"
	"github.com/recourse-dev/recourse/layers/fallback"
	"github.com/recourse-dev/recourse/layers/retry"
	"github.com/recourse-dev/recourse/recoursetest"
)

// A native call that falls back writes a fallback line at Warn with the
// step's safe fields, and a target_started line per target.
func TestR20_6_EventlogWritesTheFallbackStep(t *testing.T) {
	var buf bytes.Buffer
	logger := slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	overloaded := echoStep(503)
	ra := rigtest.New(t, openai.New(), retry.Policy{MaxAttempts: 2, OnEvent: eventlog.New(logger)}, overloaded, overloaded)
	rb := rigtest.New(t, openai.New(), retry.Policy{}, recoursetest.JSON(200, recoursetest.OpenAIChat("ok")))
	c, err := client.New(ra.Server.URL, ra.Chain, client.WithAPIKey(rigtest.Key),
		client.WithFallback(fallback.Rules{}, client.FallbackTarget{Client: rb.Client, Model: "gpt-4o"}))
	require.NoError(t, err)
	_, err = c.Complete(t.Context(), canaryRequest())
	require.NoError(t, err)
	out := buf.String()
	assert.NotContains(t, out, rigtest.Key)
	assert.NotContains(t, out, rigtest.Prompt)
	var fb []map[string]any
	starts := 0
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var m map[string]any
		require.NoError(t, json.Unmarshal([]byte(line), &m))
		switch m["type"] {
		case string(event.Fallback):
			fb = append(fb, m)
		case string(event.TargetStarted):
			starts++
		}
	}
	assert.Equal(t, 2, starts)
	require.Len(t, fb, 1)
	assert.Equal(t, "WARN", fb[0]["level"])
	assert.Equal(t, map[string]any{"from": "gpt-4o-mini", "to": "gpt-4o", "index": float64(1), "outcome": "exhausted", "attempts": float64(2)}, fb[0]["fallback"])
	assert.Equal(t, slog.LevelInfo, eventlog.Level(event.TargetStarted))
}
