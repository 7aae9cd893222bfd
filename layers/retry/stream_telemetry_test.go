package retry_test

// Stream telemetry and progress counters: Ollama's progress and metrics
// events (R13.6), the delivered and observed counters (R13.2), and an abort
// raised by a telemetry observer (R13.5).

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/recourse-dev/recourse/chat"
	"github.com/recourse-dev/recourse/client"
	"github.com/recourse-dev/recourse/codec"
	"github.com/recourse-dev/recourse/event"
)

// scOllama returns the Ollama provider row.
func scOllama() scProv {
	for _, p := range scProviders() {
		if p.ndjson {
			return p
		}
	}
	panic("no ollama row")
}

// scWantMetrics are the numbers of every Ollama done line of these tests.
var scWantMetrics = codec.Metrics{
	TotalDuration:      512345678 * time.Nanosecond,
	LoadDuration:       12345678 * time.Nanosecond,
	PromptEvalCount:    12,
	PromptEvalDuration: 98765432 * time.Nanosecond,
	EvalCount:          7,
	EvalDuration:       345678901 * time.Nanosecond,
}

// scNoted ranges over a chunk stream and notes every delivery in rec's log,
// so that its order against the events can be checked.
func scNoted(rec *scRecorder, seq func(func(chat.Chunk, error) bool)) scRun {
	var r scRun
	for ch, err := range seq {
		r.items++
		if err != nil {
			rec.Note("error")
			r.err = err
			continue
		}
		switch {
		case ch.Done:
			rec.Note("chunk:done")
		default:
			rec.Note("chunk:" + ch.Content)
		}
		r.chunks = append(r.chunks, ch)
	}
	return r
}

// scEventLog returns the recorder's log without captures.
func scEventLog(rec *scRecorder) []string {
	var out []string
	for _, l := range rec.Log() {
		if !strings.HasPrefix(l, "wire:") {
			out = append(out, strings.TrimPrefix(l, "event:"))
		}
	}
	return out
}

// TestR13_6_OllamaProgressPrecedesDelivery: every valid Ollama frame gets a
// telemetry event before its deliveries, with a frame index that counts from
// 1 and restarts in every attempt; done:true adds a metrics event with the numbers of the
// done line.
func TestR13_6_OllamaTelemetryPrecedesDelivery(t *testing.T) {
	p := scOllama()
	r, rec := scRig(t, p, scPolicy(true), p.cut(p.empty), p.step(p.full("Hel", "lo")...))
	run := scNoted(rec, r.Client.Stream(context.Background(), p.request()))
	require.NoError(t, run.err)
	assert.Equal(t, []string{
		"attempt_started", "telemetry", "attempt_failed",
		"admission_pending", "admission_allowed", "delay_scheduled", "retry_started",
		"attempt_started",
		"telemetry", "chunk:Hel",
		"telemetry", "chunk:lo",
		"telemetry", "metrics", "attempt_succeeded", "chunk:done",
	}, scEventLog(rec))

	var frames, attempts []int
	var metrics []event.Event
	started := map[int]string{}
	for _, e := range rec.Events() {
		switch e.Type {
		case event.AttemptStarted:
			started[e.WireAttempt] = e.AttemptID
		case event.Telemetry:
			frames = append(frames, e.Frame)
			attempts = append(attempts, e.WireAttempt)
			assert.Equal(t, started[e.WireAttempt], e.AttemptID, "progress carries the attempt's identity")
			assert.True(t, e.Progress.HeadersReceived)
			assert.Equal(t, codec.Ollama, e.Provider)
		case event.Metrics:
			metrics = append(metrics, e)
		}
	}
	assert.Equal(t, []int{1, 1, 2, 3}, frames, "frame index counts from 1, restarting per attempt")
	assert.Equal(t, []int{1, 2, 2, 2}, attempts)
	require.Len(t, metrics, 1)
	require.NotNil(t, metrics[0].Metrics)
	assert.Equal(t, scWantMetrics, *metrics[0].Metrics)
	assert.Equal(t, 2, metrics[0].WireAttempt)

	// The chunks name the frame they came from.
	require.Len(t, run.chunks, 3)
	assert.Equal(t, []int{1, 2, 3}, []int{run.chunks[0].Frame, run.chunks[1].Frame, run.chunks[2].Frame})
}

// TestR13_6_OllamaMetricsOnLength: a done:true line with done_reason length
// still reports its metrics (R13.6), before the attempt fails.
func TestR13_6_OllamaMetricsOnLength(t *testing.T) {
	p := scOllama()
	r, rec := scRig(t, p, scPolicy(true), p.step(p.length("abc")...).Held())
	run := scNoted(rec, r.Client.Stream(context.Background(), p.request()))
	re := scRE(t, run.err)
	assert.Equal(t, event.OutcomeInterrupted, re.Outcome)
	log := scEventLog(rec)
	assert.Equal(t, 1, scCountStr(log, "metrics"), "one metrics event")
	var m *codec.Metrics
	for _, e := range rec.Events() {
		if e.Type == event.Metrics {
			m = e.Metrics
		}
	}
	require.NotNil(t, m)
	assert.Equal(t, scWantMetrics, *m)
	// The metrics come before the failure is recorded.
	mi, fi := scIndexOf(log, "metrics"), scIndexOf(log, "attempt_failed")
	assert.True(t, mi >= 0 && mi < fi, "metrics before attempt_failed: %v", log)
	assert.Equal(t, 1, r.Server.Count())
}

// TestR13_6_OllamaLengthFrameGetsProgress: the done_reason length line is a
// valid frame (its metrics are reported, it is not malformed), so R13.6's
// "for each valid frame a telemetry event" covers it too, with the next frame
// index, before its metrics.
func TestR13_6_OllamaLengthFrameGetsTelemetry(t *testing.T) {
	p := scOllama()
	r, rec := scRig(t, p, scPolicy(true), p.step(p.length("abc")...).Held())
	run := scNoted(rec, r.Client.Stream(context.Background(), p.request()))
	scRE(t, run.err)
	var frames []int
	for _, e := range rec.Events() {
		if e.Type == event.Telemetry {
			frames = append(frames, e.Frame)
		}
	}
	assert.Equal(t, []int{1, 2}, frames, "R13.6: progress for the content line and for the length line")
	assert.Equal(t, []string{"attempt_started", "telemetry", "chunk:abc", "telemetry", "metrics", "attempt_failed", "interrupted", "error"},
		scEventLog(rec))
}

// TestR13_6_SSEProvidersEmitNoTelemetry: OpenAI and oMLX emit neither
// progress nor metrics events, also over a resumed stream.
func TestR13_6_SSEProvidersEmitNoTelemetry(t *testing.T) {
	for _, p := range scProviders() {
		if p.ndjson {
			continue
		}
		t.Run(p.name, func(t *testing.T) {
			r, rec := scRig(t, p, scPolicy(true), p.cut(p.keepalive, p.empty), p.step(p.full("Hel", "lo")...))
			run := scCollect(r.Client.Stream(context.Background(), p.request()))
			require.NoError(t, run.err)
			types := rec.Types()
			assert.Equal(t, resumedTypes, types, "no progress, no metrics")
		})
	}
}

// TestR13_2_StreamProgressCounters: observed counts every decoded byte and
// fragment on the wire; delivered counts only what the consumer was handed
// (reasoning only WithReasoning, fragments only WithToolFragments, no
// reasoning at all in the event API). Byte counts are UTF-8 bytes of the
// decoded strings: "é🙂" is 6.
func TestR13_2_StreamProgressCounters(t *testing.T) {
	const s = "é🙂"
	require.Equal(t, 6, len(s))
	modes := []struct {
		name      string
		opts      []client.StreamOption
		events    bool
		delivered codec.Counts
	}{
		{"plain", nil, false, codec.Counts{ContentBytes: 6}},
		{"with_reasoning", []client.StreamOption{client.WithReasoning()}, false, codec.Counts{ReasoningBytes: 6, ContentBytes: 6}},
		{"with_tool_fragments", []client.StreamOption{client.WithToolFragments()}, false, codec.Counts{ContentBytes: 6, ToolFragments: 1}},
		{"with_both", []client.StreamOption{client.WithReasoning(), client.WithToolFragments()}, false, codec.Counts{ReasoningBytes: 6, ContentBytes: 6, ToolFragments: 1}},
		{"event_api", nil, true, codec.Counts{ContentBytes: 6}},
	}
	for _, p := range scProviders() {
		frames := []string{p.keepalive, p.reasoning(s), p.content(s), p.tool}
		raw := int64(len(strings.Join(frames, "")))
		for _, m := range modes {
			t.Run(p.name+"/"+m.name, func(t *testing.T) {
				r, _ := scRig(t, p, scPolicy(true), p.cut(frames...))
				var err error
				if m.events {
					for e := range r.Client.StreamEvents(context.Background(), p.request()) {
						if e.Type == client.EventError {
							err = e.Err
						}
					}
				} else {
					err = scCollect(r.Client.Stream(context.Background(), p.request(), m.opts...)).err
				}
				re := scRE(t, err)
				assert.Equal(t, event.OutcomeInterrupted, re.Outcome)
				pr := re.Failure.Progress
				assert.True(t, pr.HeadersReceived)
				assert.Equal(t, raw, pr.RawBytes, "raw bytes")
				assert.Equal(t, codec.Counts{ReasoningBytes: 6, ContentBytes: 6, ToolFragments: 1}, pr.Observed, "observed")
				assert.Equal(t, m.delivered, pr.Delivered, "delivered")
			})
		}
	}
}

// TestR13_2_StreamProgressOnSuccess: the attempt_succeeded event of a full
// stream carries the same split of observed and delivered reasoning.
func TestR13_2_StreamProgressOnSuccess(t *testing.T) {
	const s = "é🙂"
	for _, p := range scProviders() {
		full := p.full(s)
		// Put a reasoning frame in front of the content.
		i := 0
		for j, f := range full {
			if f == p.content(s) {
				i = j
			}
		}
		frames := append(append(append([]string{}, full[:i]...), p.reasoning(s)), full[i:]...)
		for _, m := range []struct {
			name      string
			opts      []client.StreamOption
			events    bool
			reasoning int64
		}{{"plain", nil, false, 0}, {"with_reasoning", []client.StreamOption{client.WithReasoning()}, false, 6}, {"event_api", nil, true, 0}} {
			t.Run(p.name+"/"+m.name, func(t *testing.T) {
				r, rec := scRig(t, p, scPolicy(true), p.step(frames...))
				if m.events {
					var last client.StreamEvent
					for e := range r.Client.StreamEvents(context.Background(), p.request()) {
						last = e
					}
					require.Equal(t, client.EventDone, last.Type)
				} else {
					run := scCollect(r.Client.Stream(context.Background(), p.request(), m.opts...))
					require.NoError(t, run.err)
					require.Len(t, run.dones(), 1)
					assert.Equal(t, s, run.dones()[0].Completion.Message.Reasoning, "the completion keeps the reasoning")
				}
				ok := scEventsOf(rec.Events(), event.AttemptSucceeded)
				require.Len(t, ok, 1)
				pr := ok[0].Progress
				assert.Equal(t, codec.Counts{ReasoningBytes: 6, ContentBytes: 6}, pr.Observed)
				assert.Equal(t, codec.Counts{ReasoningBytes: m.reasoning, ContentBytes: 6}, pr.Delivered)
			})
		}
	}
}

// TestR13_5_OllamaAbortFromTelemetryObserverWins: an observer that cancels
// the context in a telemetry event stops the stream before that frame's
// deliveries; cancelling at the done frame's progress also suppresses the
// terminal telemetry (metrics) and the completion. "Abort wins over queued
// content, terminal telemetry and completion."
func TestR13_5_OllamaAbortFromTelemetryObserverWins(t *testing.T) {
	p := scOllama()
	for _, c := range []struct {
		name     string
		at       int // cancel in the telemetry event of this frame
		wantText string
	}{
		{"content_frame", 2, "Hel"},
		{"done_frame", 3, "Hello"},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			r, rec := scRig(t, p, scPolicy(true), p.step(p.full("Hel", "lo")...).Held())
			rec.hook = func(ev event.Event) {
				if ev.Type == event.Telemetry && ev.Frame == c.at {
					cancel()
				}
			}
			run := scNoted(rec, r.Client.Stream(ctx, p.request()))
			assert.Equal(t, c.wantText, run.text(), "nothing is delivered after the abort")
			assert.Empty(t, run.dones(), "abort wins over completion")
			types := rec.Types()
			assert.Zero(t, scCount(types, event.Metrics), "abort wins over terminal telemetry")
			assert.Zero(t, scCount(types, event.AttemptSucceeded), "abort wins over completion")
			assert.Equal(t, 1, scCount(types, event.Cancelled))
			t.Logf("observed: %v", scEventLog(rec))
			require.Error(t, run.err, "the stream must end with the cancellation, not a completion")
			scAssertCancelled(t, run)
		})
	}
}
