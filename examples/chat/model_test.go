package main

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/recourse-dev/recourse/broker"
	"github.com/recourse-dev/recourse/codec"
	"github.com/recourse-dev/recourse/codecs/ollama"
	"github.com/recourse-dev/recourse/codecs/openai"
	"github.com/recourse-dev/recourse/event"
	"github.com/recourse-dev/recourse/layer"
)

// The exact status line of the ticket (R17.2).
const status504 = "retrying LLM request after HTTP 504 (attempt 2/4 in 1.2s)"

var t0 = time.Date(2026, 10, 17, 12, 0, 0, 0, time.UTC)

// newTestModel returns a model without a session; Close runs at cleanup.
func newTestModel(t *testing.T) *Model {
	t.Helper()
	m := NewModel(context.Background())
	t.Cleanup(m.Close)
	m.Update(tea.WindowSizeMsg{Width: 100, Height: 20})
	return m
}

// update runs one Update and returns the command; the model is a pointer,
// so the returned model is m itself.
func update(t *testing.T, m *Model, msg tea.Msg) tea.Cmd {
	t.Helper()
	got, cmd := m.Update(msg)
	require.Same(t, m, got)
	return cmd
}

func retry504(at time.Time) noticeMsg {
	return noticeMsg{at: at, notice: broker.Notice{Event: broker.EventRetry, Retry: &broker.RetryNotice{
		Completion: 2, FailedAttempt: 1, MaxAttempts: 4, Wait: 1200 * time.Millisecond,
		Elapsed: 3 * time.Second, HTTPStatus: 504, Error: "HTTP 504",
	}}}
}

func continuation(discarded int) noticeMsg {
	return noticeMsg{at: t0, notice: broker.Notice{Event: broker.EventContinuation, Continuation: &broker.ContinuationNotice{
		Completion: 1, Attempt: 1, Max: 3, Reason: "transport error", Wait: 1200 * time.Millisecond, Discarded: discarded,
	}}}
}

func activity(k broker.ActivityKind) noticeMsg {
	return noticeMsg{at: t0, notice: broker.Notice{Event: broker.EventActivity, Activity: &broker.Activity{Kind: k, Completion: 2}}}
}

func key(s string) tea.KeyPressMsg {
	switch s {
	case "enter":
		return tea.KeyPressMsg{Code: tea.KeyEnter}
	case "esc":
		return tea.KeyPressMsg{Code: tea.KeyEscape}
	case "backspace":
		return tea.KeyPressMsg{Code: tea.KeyBackspace}
	case "space":
		return tea.KeyPressMsg{Code: tea.KeySpace, Text: " "}
	case "ctrl+c":
		return tea.KeyPressMsg{Code: 'c', Mod: tea.ModCtrl}
	}
	r := []rune(s)
	return tea.KeyPressMsg{Code: r[0], Text: s}
}

// viewText returns the rendered view without its styles.
func viewText(m *Model) string { return ansi.Strip(m.View().Content) }

// R17.2: a retry notice sets the one status line to the ticket's exact text.
func TestR17_2RetryNoticeSetsStatusLine(t *testing.T) {
	m := newTestModel(t)
	cmd := update(t, m, retry504(t0))
	assert.NotNil(t, cmd, "listening goes on and the countdown starts")
	assert.Equal(t, status504, m.StatusLine())
	assert.Contains(t, viewText(m), "\n"+status504+"\n")
	assert.Empty(t, m.Transcript(), "a notice is never a transcript entry")
}

func TestR17_2ContinuationNoticeSetsStatusLine(t *testing.T) {
	m := newTestModel(t)
	update(t, m, continuation(0))
	assert.Equal(t, "LLM stream interrupted; continuing generation (1/3): transport error", m.StatusLine())
	assert.Empty(t, m.Transcript())
}

// R17.2: the next sign of activity clears the status line: a new
// completion, a content, reasoning or tool delta, a tool result, the run
// ending, idle, streamed content and the end of the turn.
func TestR17_2ProgressClearsStatusLine(t *testing.T) {
	signals := map[string]tea.Msg{
		"completion started": activity(broker.ActivityCompletionStarted),
		"content delta":      activity(broker.ActivityContent),
		"reasoning delta":    activity(broker.ActivityReasoning),
		"tool delta":         activity(broker.ActivityToolCall),
		"tool result":        activity(broker.ActivityToolResult),
		"run ended":          activity(broker.ActivityRunEnded),
		"idle":               activity(broker.ActivityIdle),
		"streamed content":   chunkMsg("Hello"),
		"turn ended":         turnDoneMsg{},
		"turn failed":        turnDoneMsg{err: errors.New("boom")},
	}
	for name, signal := range signals {
		for _, set := range []noticeMsg{retry504(t0), continuation(0)} {
			t.Run(name+"/"+string(set.notice.Event), func(t *testing.T) {
				m := newTestModel(t)
				update(t, m, set)
				require.NotEmpty(t, m.StatusLine())
				update(t, m, signal)
				assert.Empty(t, m.StatusLine())
				assert.NotContains(t, viewText(m), "retrying")
				assert.NotContains(t, viewText(m), "interrupted")
			})
		}
	}
}

// The countdown of a retry notice goes down on every tick and stops at
// zero; ticks stop once the status line is clear.
func TestR17_2CountdownTicks(t *testing.T) {
	m := newTestModel(t)
	require.NotNil(t, update(t, m, retry504(t0)))
	assert.Equal(t, status504, m.StatusLine())
	want := map[time.Duration]string{
		100 * time.Millisecond:  "retrying LLM request after HTTP 504 (attempt 2/4 in 1.1s)",
		200 * time.Millisecond:  "retrying LLM request after HTTP 504 (attempt 2/4 in 1.0s)",
		700 * time.Millisecond:  "retrying LLM request after HTTP 504 (attempt 2/4 in 500ms)",
		1150 * time.Millisecond: "retrying LLM request after HTTP 504 (attempt 2/4 in 50ms)",
		3 * time.Second:         "retrying LLM request after HTTP 504 (attempt 2/4 in 0ms)",
	}
	for _, d := range []time.Duration{100 * time.Millisecond, 200 * time.Millisecond, 700 * time.Millisecond, 1150 * time.Millisecond, 3 * time.Second} {
		cmd := update(t, m, tickMsg(t0.Add(d)))
		assert.NotNil(t, cmd, "ticking goes on while the status line is set")
		assert.Equal(t, want[d], m.StatusLine(), "after %s", d)
		assert.Contains(t, viewText(m), want[d])
	}
	// A new notice restarts the countdown from its own arrival.
	update(t, m, retry504(t0.Add(5*time.Second)))
	assert.Equal(t, status504, m.StatusLine())

	update(t, m, activity(broker.ActivityCompletionStarted))
	assert.Nil(t, update(t, m, tickMsg(t0.Add(6*time.Second))), "no ticks without a status line")
	assert.NotNil(t, update(t, m, retry504(t0.Add(7*time.Second))), "the next notice starts ticking again")
}

// R17.1: notices never enter the transcript, whatever their order with
// content.
func TestR17_1NoticesNeverInTranscript(t *testing.T) {
	m := newTestModel(t)
	for _, msg := range []tea.Msg{
		activity(broker.ActivityCompletionStarted),
		retry504(t0),
		activity(broker.ActivityCompletionStarted),
		activity(broker.ActivityContent),
		chunkMsg("Hel"),
		retry504(t0), // cannot happen mid-stream, but must not matter
		chunkMsg("lo."),
		continuation(0),
		activity(broker.ActivityCompletionStarted),
		chunkMsg(" More."),
		retry504(t0),
	} {
		update(t, m, msg)
	}
	assert.Equal(t, []string{"assistant: Hello.", "assistant:  More."}, m.Transcript())
	assert.Equal(t, status504, m.StatusLine())
	for _, line := range m.Transcript() {
		assert.NotContains(t, line, "retrying")
		assert.NotContains(t, line, "interrupted")
	}
	// In the view the notice is on the status line only, below the rule.
	v := viewText(m)
	assert.Equal(t, 1, strings.Count(v, "retrying LLM request"))
	assert.Less(t, strings.LastIndex(v, "─"), strings.Index(v, "retrying LLM request"))
}

// R17.3: text of the broken stream that the broker did not commit is taken
// back from the transcript; the continuation gets its own entry.
func TestR17_3ContinuationTakesBackDiscardedText(t *testing.T) {
	m := newTestModel(t)
	update(t, m, activity(broker.ActivityCompletionStarted))
	update(t, m, chunkMsg("I was halfway "))
	update(t, m, chunkMsg("through"))
	update(t, m, continuation(len("halfway through")))
	assert.Equal(t, []string{"assistant: I was "}, m.Transcript())
	update(t, m, activity(broker.ActivityCompletionStarted))
	update(t, m, chunkMsg("Again."))
	assert.Equal(t, []string{"assistant: I was ", "assistant: Again."}, m.Transcript())

	m = newTestModel(t)
	update(t, m, chunkMsg("all of it"))
	update(t, m, continuation(len("all of it")))
	assert.Empty(t, m.Transcript(), "an entry whose text was all taken back goes away")
	update(t, m, chunkMsg("New."))
	assert.Equal(t, []string{"assistant: New."}, m.Transcript())
}

// askOllama runs the admission hook for an ambiguous Ollama failure in a
// goroutine and returns the prompt message it sent and the channel of its
// answer.
func askOllama(t *testing.T, m *Model, ctx context.Context) (tea.Msg, <-chan layer.Decision, <-chan error) {
	t.Helper()
	decision, errc := make(chan layer.Decision, 1), make(chan error, 1)
	go func() {
		d, err := m.admit(ctx, layer.AdmissionRequest{NextAttempt: 2, Facts: ollama.New().Facts(), Failure: event.Failure{
			Provider: codec.Ollama, Category: event.CategoryHTTP, HTTPStatus: 504, Acceptance: event.AcceptanceUnknown,
		}})
		decision <- d
		errc <- err
	}()
	msg := m.listen() // what the program's listening command would deliver
	require.IsType(t, admitMsg{}, msg)
	return msg, decision, errc
}

const prompt504 = "LLM request failed (HTTP 504); the server may have run this request; send again? y/N"

// R8: the admission prompt answers Allow on y and Reject on n, N, Esc or
// Enter; the keys are not typed into the input line.
func TestR8AdmissionPromptAnswers(t *testing.T) {
	for k, want := range map[string]layer.Decision{
		"y": layer.Allow, "Y": layer.Allow,
		"n": layer.Reject, "N": layer.Reject, "esc": layer.Reject, "enter": layer.Reject,
	} {
		t.Run(k, func(t *testing.T) {
			m := newTestModel(t)
			update(t, m, key("a"))
			msg, decision, errc := askOllama(t, m, context.Background())
			update(t, m, msg)
			assert.Equal(t, prompt504, m.StatusLine())
			assert.Contains(t, viewText(m), prompt504)
			update(t, m, key("x")) // neither yes nor no: still asking
			assert.Equal(t, prompt504, m.StatusLine())
			update(t, m, key(k))
			assert.Equal(t, want, <-decision)
			assert.NoError(t, <-errc)
			assert.Empty(t, m.StatusLine())
			assert.Equal(t, "a", m.Input(), "prompt keys are answers, not input")
		})
	}
}

// A prompt replaces the line of the retry that was sent and failed again;
// after the answer that stale line does not come back, and the next retry
// notice is shown as usual.
func TestR8AdmissionThenRetryNotice(t *testing.T) {
	m := newTestModel(t)
	update(t, m, retry504(t0))
	msg, decision, _ := askOllama(t, m, context.Background())
	update(t, m, msg)
	assert.Equal(t, prompt504, m.StatusLine())
	update(t, m, key("y"))
	require.Equal(t, layer.Allow, <-decision)
	assert.Empty(t, m.StatusLine())
	update(t, m, retry504(t0))
	assert.Equal(t, status504, m.StatusLine())
}

// R8: when the hook's context ends (the request was cancelled or its
// budget ran out), the wait is pending: the hook returns without a decision
// and the prompt leaves the status line at the next tick.
func TestR8AdmissionPendingOnCancel(t *testing.T) {
	m := newTestModel(t)
	ctx, cancel := context.WithCancel(context.Background())
	msg, decision, errc := askOllama(t, m, ctx)
	require.NotNil(t, update(t, m, msg), "the prompt ticks")
	require.Equal(t, prompt504, m.StatusLine())
	cancel()
	assert.Equal(t, layer.Decision(""), <-decision)
	assert.ErrorIs(t, <-errc, context.Canceled)
	assert.Nil(t, update(t, m, tickMsg(t0)), "nothing left to tick")
	assert.Empty(t, m.StatusLine())
	update(t, m, key("y")) // nobody asks any more: an ordinary key
	assert.Equal(t, "y", m.Input())
}

// A prompt whose run moved on (the run ended) is cleared with the status.
func TestR8AdmissionClearedByActivity(t *testing.T) {
	m := newTestModel(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	msg, _, _ := askOllama(t, m, ctx)
	update(t, m, msg)
	update(t, m, activity(broker.ActivityRunEnded))
	assert.Empty(t, m.StatusLine())
}

// The default rule's resends (OpenAI, or nothing provably sent) are
// allowed without asking.
func TestR8UnambiguousFailuresAreNotAsked(t *testing.T) {
	m := newTestModel(t)
	for _, req := range []layer.AdmissionRequest{
		{Facts: openai.New().Facts(), Failure: event.Failure{Provider: codec.OpenAI, Category: event.CategoryHTTP, HTTPStatus: 504, Acceptance: event.AcceptanceUnknown}},
		{Facts: ollama.New().Facts(), Failure: event.Failure{Provider: codec.Ollama, Category: event.CategoryTransport, Acceptance: event.AcceptanceNo}},
	} {
		req.NextAttempt = 2
		d, err := m.admit(context.Background(), req)
		require.NoError(t, err)
		assert.Equal(t, layer.Allow, d)
	}
	assert.Empty(t, m.StatusLine())
}

func TestInputLine(t *testing.T) {
	m := newTestModel(t)
	for _, k := range []string{"h", "i", "space", "t", "h", "e", "r", "e", "backspace"} {
		update(t, m, key(k))
	}
	assert.Equal(t, "hi ther", m.Input())
	assert.Contains(t, viewText(m), "> hi ther")
	update(t, m, tea.PasteMsg{Content: "e\nyou"})
	assert.Equal(t, "hi there you", m.Input())
	update(t, m, key("esc"))
	assert.Equal(t, "", m.Input(), "esc clears the input when no turn runs")
	update(t, m, key("enter"))
	assert.Empty(t, m.Transcript(), "an empty input sends nothing")
	assert.Equal(t, tea.Quit(), update(t, m, key("ctrl+c"))())
}
