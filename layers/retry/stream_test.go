package retry_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/recourse-dev/recourse/client"
	"github.com/recourse-dev/recourse/codecs/openai"
	"github.com/recourse-dev/recourse/event"
	"github.com/recourse-dev/recourse/internal/rigtest"
	"github.com/recourse-dev/recourse/layer"
	"github.com/recourse-dev/recourse/layers/retry"
	"github.com/recourse-dev/recourse/recoursetest"
)

const keepalive = ": keep-alive\n\n"

var collect = rigtest.Collect

func TestR13_1_KeepaliveThenResetIsResumed(t *testing.T) {
	cut := recoursetest.Step{Status: 200, Chunks: [][]byte{[]byte(keepalive)}}.Cut(len(keepalive))
	full := recoursetest.SSE(append([]string{keepalive}, recoursetest.OpenAIStream("Hel", "lo")...)...)
	r := rigtest.New(t, openai.New(), retry.Policy{MaxAttempts: 3}, cut, full)
	text, comp, err := collect(t, r.Client.Stream(context.Background(), userRequest()))
	require.NoError(t, err)
	assert.Equal(t, "Hello", text, "content exactly once")
	require.NotNil(t, comp)
	assert.Equal(t, "stop", comp.FinishReason)
	assert.Equal(t, 2, r.Server.Count())
	assert.Equal(t, []string{"attempt_started", "attempt_failed", "delay_scheduled", "retry_started", "attempt_started", "attempt_succeeded"}, r.Rec.Types())
	f := r.Rec.Events()[1].Failure
	assert.True(t, f.Classification.Eligible)
	assert.Equal(t, int64(len(keepalive)), f.Progress.RawBytes)
	assert.False(t, f.Progress.Observed.Any())
}

func TestR13_1_ContentThenResetIsInterrupted(t *testing.T) {
	events := recoursetest.OpenAIStream("Hel", "lo")
	partial := events[0] + events[1]
	cut := recoursetest.SSE(events...).Cut(len(partial))
	r := rigtest.New(t, openai.New(), retry.Policy{MaxAttempts: 3}, cut, recoursetest.SSE(events...))
	text, _, err := collect(t, r.Client.Stream(context.Background(), userRequest()))
	re := recoveryError(t, err)
	assert.Equal(t, event.OutcomeInterrupted, re.Outcome)
	assert.Equal(t, event.ReasonSemanticOutput, re.Failure.Classification.Reason)
	assert.Equal(t, "Hel", text)
	assert.Equal(t, 1, r.Server.Count())
	assert.Equal(t, int64(3), re.Failure.Progress.Observed.ContentBytes)
	assert.Equal(t, int64(3), re.Failure.Progress.Delivered.ContentBytes)
}

func TestR13_3_LengthFinishIsTerminalWithoutDone(t *testing.T) {
	ev := `data: {"id":"c","object":"chat.completion.chunk","model":"m","choices":[{"index":0,"delta":{"content":"abc"},"finish_reason":"length"}]}` + "\n\n"
	r := rigtest.New(t, openai.New(), retry.Policy{MaxAttempts: 3}, recoursetest.SSE(ev).Held())
	_, _, err := collect(t, r.Client.Stream(context.Background(), userRequest()))
	re := recoveryError(t, err)
	assert.Equal(t, event.OutcomeInterrupted, re.Outcome)
	var se *layer.StreamError
	require.ErrorAs(t, event.Inspect(&re.Failure).Cause, &se)
	assert.Equal(t, layer.StreamIncompleteCompletion, se.Reason)
	assert.Equal(t, "length", se.FinishReason)
	assert.Equal(t, "length", event.Inspect(&re.Failure).Response.FinishReason)
	assert.Equal(t, 1, r.Server.Count())
}

func TestR13_3_EOFBeforeTerminalIsIncomplete(t *testing.T) {
	events := recoursetest.OpenAIStream("Hi")
	noDone := recoursetest.SSE(events[:len(events)-1]...)
	r := rigtest.New(t, openai.New(), retry.Policy{MaxAttempts: 3}, noDone)
	_, _, err := collect(t, r.Client.Stream(context.Background(), userRequest()))
	re := recoveryError(t, err)
	assert.Equal(t, event.CategoryTransport, re.Failure.Category)
	assert.Equal(t, event.ReasonSemanticOutput, re.Failure.Classification.Reason)
}

func TestR13_1_DropInStreamResumesBeforeSemanticOutput(t *testing.T) {
	cut := recoursetest.Step{Status: 200, Chunks: [][]byte{[]byte(keepalive)}}.Cut(len(keepalive))
	events := recoursetest.OpenAIStream("Hi")
	r := rigtest.New(t, openai.New(), retry.Policy{MaxAttempts: 3}, cut, recoursetest.SSE(events...))
	req, _ := http.NewRequest("POST", r.Server.URL+"/v1/chat/completions", strings.NewReader(`{"model":"m","stream":true,"messages":[]}`))
	resp, err := r.HTTP.Do(req)
	require.NoError(t, err)
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.NoError(t, err)
	assert.Equal(t, keepalive+strings.Join(events, ""), string(b), "one stream, no duplicated byte")
	assert.Equal(t, 2, r.Server.Count())
}

func TestR13_1_DropInStreamEndsWithTypedErrorWithoutDone(t *testing.T) {
	events := recoursetest.OpenAIStream("Hi")
	r := rigtest.New(t, openai.New(), retry.Policy{MaxAttempts: 3}, recoursetest.SSE(events[:len(events)-1]...))
	req, _ := http.NewRequest("POST", r.Server.URL+"/v1/chat/completions", strings.NewReader(`{"model":"m","stream":true,"messages":[]}`))
	resp, err := r.HTTP.Do(req)
	require.NoError(t, err)
	_, err = io.ReadAll(resp.Body)
	resp.Body.Close()
	re := recoveryError(t, err)
	assert.Equal(t, event.OutcomeInterrupted, re.Outcome)
}

func TestR13_5_CancelWhilePausedClosesTheRequest(t *testing.T) {
	events := recoursetest.OpenAIStream("Hi", "there")
	r := rigtest.New(t, openai.New(), retry.Policy{MaxAttempts: 3}, recoursetest.SSE(events[:2]...).Held())
	ctx, cancel := context.WithCancel(context.Background())
	next, stop := iterPull(r.Client.Stream(ctx, userRequest()))
	defer stop()
	ch, err, ok := next()
	require.True(t, ok)
	require.NoError(t, err)
	assert.Equal(t, "Hi", ch.Content)
	cancel() // the consumer is paused: nobody pulls
	select {
	case <-r.Server.Left():
	case <-time.After(5 * time.Second):
		t.Fatal("R13.5: the server never saw the request close while the consumer was paused")
	}
	_, err, ok = next()
	require.True(t, ok)
	re := recoveryError(t, err)
	assert.Equal(t, event.OutcomeCancelled, re.Outcome)
	types := r.Rec.Types()
	assert.Equal(t, []string{"attempt_started", "attempt_failed", "cancelled"}, types)
}

func TestR13_2_EventAPIDeliversNoReasoning(t *testing.T) {
	ev := func(delta string) string {
		return `data: {"id":"c","object":"chat.completion.chunk","model":"m","choices":[{"index":0,"delta":` + delta + `,"finish_reason":null}]}` + "\n\n"
	}
	events := []string{ev(`{"reasoning_content":"think"}`), ev(`{"content":"é🙂"}`),
		`data: {"id":"c","object":"chat.completion.chunk","model":"m","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}` + "\n\n", "data: [DONE]\n\n"}
	// Cut right after the content so that recovery reports its progress.
	all := strings.Join(events, "")
	cut := recoursetest.SSE(events...).Cut(len(events[0]) + len(events[1]))
	r := rigtest.New(t, openai.New(), retry.Policy{MaxAttempts: 2}, cut)
	var got []client.StreamEvent
	for e := range r.Client.StreamEvents(context.Background(), userRequest()) {
		got = append(got, e)
	}
	_ = all
	require.NotEmpty(t, got)
	last := got[len(got)-1]
	require.Equal(t, client.EventError, last.Type)
	assert.Equal(t, layer.StreamInterrupted, last.Err.Reason)
	require.NotNil(t, last.Err.Recovery)
	p := last.Err.Recovery.Failure.Progress
	assert.Equal(t, int64(5), p.Observed.ReasoningBytes)
	assert.Equal(t, int64(6), p.Observed.ContentBytes, "é🙂 is 6 UTF-8 bytes")
	assert.Equal(t, int64(0), p.Delivered.ReasoningBytes)
	assert.Equal(t, int64(6), p.Delivered.ContentBytes)
	assert.True(t, errors.As(last.Err, new(*layer.RecoveryError)))
}

func TestR13_1_DropInInBandErrorReachesTheClientBeforeTheTypedError(t *testing.T) {
	line := `{"error":"an error was encountered while running the model"}` + "\n"
	r := rigtest.New(t, ollamaCodec(), retry.Policy{MaxAttempts: 3},
		recoursetest.NDJSON(`{"model":"m","created_at":"2026-10-10T00:00:00Z","message":{"role":"assistant","content":"Hi"},"done":false}`, line))
	req, _ := http.NewRequest("POST", r.Server.URL+"/api/chat", strings.NewReader(`{"model":"m","messages":[]}`))
	resp, err := r.HTTP.Do(req)
	require.NoError(t, err)
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.True(t, strings.HasSuffix(string(b), line), "the provider's error line is handed over")
	re := recoveryError(t, err)
	assert.Equal(t, event.CategoryProviderResponse, re.Failure.Category)
}
