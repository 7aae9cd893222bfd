package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestTmuxShowsStatusThenAnswer runs the built chat in a real terminal
// (tmux) against the scripted provider with faults: the status line shows
// the retry countdown while the provider answers 504, then the answer
// arrives and the status line is gone (R17.2). CI installs tmux; without it
// the test cannot run.
func TestTmuxShowsStatusThenAnswer(t *testing.T) {
	tm := startTmux(t)
	tm.send("Hi! What can you do?")
	during := tm.waitFor("the retry status line", func(s string) bool {
		return strings.Contains(s, "retrying LLM request after HTTP 504 (attempt 2/4 in ")
	})
	t.Logf("while retrying:\n%s", during)
	if strings.Contains(transcriptPart(during), "retrying") {
		t.Errorf("the retry notice is in the transcript:\n%s", during)
	}
	after := tm.waitFor("the answer", func(s string) bool { return strings.Contains(s, "assistant: Hello!") })
	t.Logf("after the answer:\n%s", after)
	if strings.Contains(after, "retrying LLM request") {
		t.Errorf("the status line was not cleared by the answer:\n%s", after)
	}
}

// TestTmuxShowsAStalledAttemptRetried plays the fault turns up to the
// stall scenario in a real terminal: the provider's stream sends a
// keep-alive and goes silent, the chain's idle limit ends the attempt, and
// the status line names the limit while the resend waits; then the answer
// arrives and the status line is gone.
func TestTmuxShowsAStalledAttemptRetried(t *testing.T) {
	tm := startTmux(t)
	// Each earlier fault turn ends with its own answer on the screen and
	// the model no longer awaited.
	for _, turn := range []struct{ text, answer string }{
		{"hello", "assistant: Hello! I am the scripted"},
		{"again", "assistant: This answer came on the second try. The first stream sent only"},
		{"and again", "assistant: This is the continuation."},
		{"roll a die", "assistant: The die shows "},
	} {
		tm.send(turn.text)
		tm.waitFor("the answer to "+strconv.Quote(turn.text), func(s string) bool {
			return strings.Contains(s, turn.answer) && !strings.Contains(s, "waiting for the model")
		})
	}
	tm.send("stall")
	during := tm.waitFor("the stall's retry status line", func(s string) bool {
		return strings.Contains(s, "retrying LLM request after idle timeout (attempt 2/4 in ")
	})
	t.Logf("while retrying the stalled attempt:\n%s", during)
	if strings.Contains(transcriptPart(during), "retrying") {
		t.Errorf("the retry notice is in the transcript:\n%s", during)
	}
	after := tm.waitFor("the answer", func(s string) bool {
		return strings.Contains(s, "The first stream sent a keep-alive and") && !strings.Contains(s, "waiting for the model")
	})
	t.Logf("after the answer:\n%s", after)
	if strings.Contains(after, "retrying LLM request") {
		t.Errorf("the status line was not cleared by the answer:\n%s", after)
	}
}

// tmuxChat is the built chat running with -faults in a tmux session.
type tmuxChat struct {
	t   *testing.T
	run func(args ...string) (string, error)
}

// startTmux builds the chat and starts it with -faults in a detached tmux
// session of 100×16 cells; the session ends with the test.
func startTmux(t *testing.T) *tmuxChat {
	t.Helper()
	tmux, err := exec.LookPath("tmux")
	if err != nil {
		t.Skip("tmux is not installed (.ci/run installs it)")
	}
	bin := filepath.Join(t.TempDir(), "chat")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	socket := "recourse-chat-test-" + strconv.Itoa(os.Getpid()) + "-" + t.Name()
	tm := &tmuxChat{t: t, run: func(args ...string) (string, error) {
		out, err := exec.Command(tmux, append([]string{"-L", socket}, args...)...).CombinedOutput()
		return string(out), err
	}}
	if out, err := tm.run("new-session", "-d", "-s", "chat", "-x", "100", "-y", "16",
		"env -u OPENAI_API_KEY -u OLLAMA_HOST "+bin+" -faults"); err != nil {
		t.Fatalf("tmux new-session: %v\n%s", err, out)
	}
	t.Cleanup(func() { _, _ = tm.run("kill-server") })
	tm.waitFor("the chat's header", func(s string) bool { return strings.Contains(s, "recourse chat") })
	return tm
}

func (tm *tmuxChat) screen() string {
	out, _ := tm.run("capture-pane", "-p", "-t", "chat")
	return out
}

// send types text and Enter.
func (tm *tmuxChat) send(text string) {
	tm.t.Helper()
	if out, err := tm.run("send-keys", "-t", "chat", text, "Enter"); err != nil {
		tm.t.Fatalf("send-keys: %v\n%s", err, out)
	}
}

// waitFor polls the screen until ok holds (at most 30 s) and returns it.
func (tm *tmuxChat) waitFor(what string, ok func(string) bool) string {
	tm.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if s := tm.screen(); ok(s) {
			return s
		}
		time.Sleep(50 * time.Millisecond)
	}
	tm.t.Fatalf("%s never appeared; the screen:\n%s", what, tm.screen())
	return ""
}

// transcriptPart is the screen above the separator line.
func transcriptPart(screen string) string {
	if i := strings.Index(screen, "────"); i >= 0 {
		return screen[:i]
	}
	return screen
}
