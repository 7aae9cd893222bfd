package eventlog_test

import (
	"bytes"
	"context"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/recourse-dev/recourse/codecs/openai/responses"
	"github.com/recourse-dev/recourse/eventlog"
	"github.com/recourse-dev/recourse/internal/rigtest"
	"github.com/recourse-dev/recourse/layers/retry"
	"github.com/recourse-dev/recourse/recoursetest"
)

// R19.10: the records of a background stream's resume carry its cursor
// (resume.cursor) and never the response ID.
func TestR19_10_RecordsCarryTheResumeCursor(t *testing.T) {
	const id = "resp_log1"
	var buf bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	r := rigtest.New(t, responses.New(responses.Background()), retry.Policy{MaxAttempts: 3, OnEvent: eventlog.New(logger)},
		recoursetest.ResponsesBackground(id, recoursetest.ResponsesEvents(id, "Hel", "lo")...).CutEvents(5), recoursetest.ResponsesResume(id))
	req := canaryRequest()
	req.Stream = true
	_, _, err := rigtest.Collect(t, r.Client.Stream(context.Background(), req))
	require.NoError(t, err)
	assert.Contains(t, buf.String(), "type=retry_started")
	assert.Contains(t, buf.String(), "resume.cursor=4")
	assert.NotContains(t, buf.String(), id)
}
