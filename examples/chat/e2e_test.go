package main

import (
	"bytes"
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/recourse-dev/recourse/layers/stall"
)

// observer watches a running program from its message filter, which runs
// on the program's goroutine right before each Update: it records every
// distinct status line the model showed and signals turn ends and
// admission prompts to the test.
type observer struct {
	statuses []string // the status lines shown, in order, without repeats
	turns    chan error
	prompts  chan string
}

func newObserver() *observer {
	return &observer{turns: make(chan error, 16), prompts: make(chan string, 64)}
}

func (o *observer) filter(tm tea.Model, msg tea.Msg) tea.Msg {
	m := tm.(*Model)
	if s := m.StatusLine(); s != "" && (len(o.statuses) == 0 || o.statuses[len(o.statuses)-1] != s) {
		o.statuses = append(o.statuses, s)
	}
	switch msg := msg.(type) {
	case turnDoneMsg:
		o.turns <- msg.err
	case admitMsg:
		o.prompts <- msg.failure
	}
	return msg
}

// typeLine sends text as key presses, then Enter.
func typeLine(p *tea.Program, text string) {
	for _, r := range text {
		if r == ' ' {
			p.Send(tea.KeyPressMsg{Code: tea.KeySpace, Text: " "})
			continue
		}
		p.Send(tea.KeyPressMsg{Code: r, Text: string(r)})
	}
	p.Send(tea.KeyPressMsg{Code: tea.KeyEnter})
}

// headless runs the chat for cfg as a real bubbletea program without a
// terminal: no input reader, no renderer, no signal handler.
type headless struct {
	app  *chatApp
	p    *tea.Program
	obs  *observer
	done chan error
	out  bytes.Buffer
}

func startHeadless(t *testing.T, cfg config) *headless {
	t.Helper()
	a, err := newApp(context.Background(), cfg)
	require.NoError(t, err)
	h := &headless{app: a, obs: newObserver(), done: make(chan error, 1)}
	h.p = tea.NewProgram(a.model,
		tea.WithInput(nil), tea.WithOutput(&h.out), tea.WithoutRenderer(),
		tea.WithoutSignalHandler(), tea.WithFilter(h.obs.filter), tea.WithWindowSize(100, 30))
	go func() {
		_, err := h.p.Run()
		h.done <- err
	}()
	return h
}

// turn types text and waits for the turn to end, answering every
// admission prompt with answer; it returns the failures it was asked about
// and the turn's error.
func (h *headless) turn(t *testing.T, text, answer string) ([]string, error) {
	t.Helper()
	typeLine(h.p, text)
	var asked []string
	deadline := time.After(20 * time.Second)
	for {
		select {
		case err := <-h.obs.turns:
			return asked, err
		case f := <-h.obs.prompts:
			asked = append(asked, f)
			h.p.Send(tea.KeyPressMsg{Code: []rune(answer)[0], Text: answer})
		case <-deadline:
			t.Fatalf("turn %q did not end", text)
			return nil, nil
		}
	}
}

// quit ends the program and releases everything.
func (h *headless) quit(t *testing.T) {
	t.Helper()
	h.p.Send(tea.KeyPressMsg{Code: 'c', Mod: tea.ModCtrl})
	select {
	case err := <-h.done:
		require.NoError(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("the program did not quit")
	}
	h.app.close()
}

// faultConfig is -faults with short waits: base delay 30 ms and jitter
// 0.5, so the waits are 15 ms, 30 ms, 60 ms; the idle limit is 1 s of
// real time, which only the stall scenario's silent stream reaches.
func faultConfig(dialect string, rolls *atomic.Int32) config {
	return config{
		provider: providerScripted, faults: true, dialect: dialect, model: scriptedModel,
		baseDelay: 30 * time.Millisecond, jitter: func() float64 { return 0.5 },
		roll:  func(int) int { rolls.Add(1); return 4 },
		stall: stall.Limits{Header: 30 * time.Second, FirstOutput: 30 * time.Second, Idle: time.Second},
	}
}

// The whole chat against the scripted provider with faults on: five turns,
// one per fault scenario, through the real bubbletea program.
func TestEndToEndFaults(t *testing.T) {
	for _, dialect := range []string{dialectOpenAI, dialectOllama} {
		t.Run(dialect, func(t *testing.T) {
			var rolls atomic.Int32
			h := startHeadless(t, faultConfig(dialect, &rolls))
			var prompts []string
			for _, text := range []string{"hello", "again", "and again", "roll a die", "stall"} {
				asked, err := h.turn(t, text, "y")
				require.NoError(t, err, "turn %q", text)
				prompts = append(prompts, asked...)
			}
			h.quit(t)
			m := h.app.model

			assert.Equal(t, []string{
				"user: hello", "assistant: " + answer504,
				"user: again", "assistant: " + answerKeepaliveCut,
				"user: and again", "assistant: " + answerContentCut,
				"user: roll a die", "assistant: " + answerDice("4"),
				"user: stall", "assistant: " + answerStall,
			}, m.Transcript(), "the transcript ends with the scripted answer; the cut text was taken back")
			assert.Equal(t, int32(1), rolls.Load(), "the tool ran once")
			// 504, 504, answer; keep-alive cut, answer; cut, continuation;
			// tool call, 503, 503, answer; stalled stream, answer.
			assert.Equal(t, 3+2+2+4+2, h.app.backend.scripted.Hits())
			assert.Empty(t, m.StatusLine(), "idle clears the status line")

			// The status line showed every fault, with the exact texts.
			shown := strings.Join(h.obs.statuses, "\n")
			for _, want := range []string{
				"retrying LLM request after HTTP 504 (attempt 2/4 in ",
				"retrying LLM request after HTTP 504 (attempt 3/4 in ",
				"retrying LLM request after transport error (attempt 2/4 in ",
				"LLM stream interrupted; continuing generation (1/3): transport error",
				"retrying LLM request after HTTP 503 (attempt 2/4 in ",
				"retrying LLM request after HTTP 503 (attempt 3/4 in ",
				"retrying LLM request after idle timeout (attempt 2/4 in ",
			} {
				assert.Contains(t, shown, want)
			}
			for _, line := range m.Transcript() {
				assert.NotContains(t, line, "retrying")
				assert.NotContains(t, line, "interrupted")
				assert.NotContains(t, line, "send again")
			}
			if dialect == dialectOpenAI {
				assert.Empty(t, prompts, "OpenAI resends need no admission")
			} else {
				// Ollama failures are ambiguous: every resend and the
				// continuation were put to the user, the 503s too (the
				// hook sees the status, not Ollama's "server busy" body).
				assert.Equal(t, []string{"HTTP 504", "HTTP 504", "transport error", "transport error", "HTTP 503", "HTTP 503", "idle timeout"}, prompts)
				assert.Contains(t, shown, "LLM request failed (HTTP 504); "+promptQuestion)
			}
			t.Logf("status lines shown:\n%s", shown)
		})
	}
}

// Refusing an ambiguous resend ends the turn with the typed error; the
// conversation keeps the user message and no answer (R16.2), and the chat
// goes on.
func TestEndToEndAdmissionRejected(t *testing.T) {
	var rolls atomic.Int32
	h := startHeadless(t, faultConfig(dialectOllama, &rolls))
	asked, err := h.turn(t, "hello", "n")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "admission_rejected")
	assert.Equal(t, []string{"HTTP 504"}, asked)
	_, err = h.turn(t, "again", "y")
	require.NoError(t, err)
	h.quit(t)
	assert.Equal(t, []string{"user: hello", "user: again", "assistant: " + answerKeepaliveCut}, h.app.model.Transcript())
	assert.Equal(t, 1+2, h.app.backend.scripted.Hits())
}
