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
	tmux, err := exec.LookPath("tmux")
	if err != nil {
		t.Skip("tmux is not installed (.ci/run installs it)")
	}
	bin := filepath.Join(t.TempDir(), "chat")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	socket := "recourse-chat-test-" + strconv.Itoa(os.Getpid())
	run := func(args ...string) (string, error) {
		out, err := exec.Command(tmux, append([]string{"-L", socket}, args...)...).CombinedOutput()
		return string(out), err
	}
	if out, err := run("new-session", "-d", "-s", "chat", "-x", "100", "-y", "16",
		"env -u OPENAI_API_KEY -u OLLAMA_HOST "+bin+" -faults"); err != nil {
		t.Fatalf("tmux new-session: %v\n%s", err, out)
	}
	t.Cleanup(func() { _, _ = run("kill-server") })
	screen := func() string {
		out, _ := run("capture-pane", "-p", "-t", "chat")
		return out
	}
	waitFor := func(what string, ok func(string) bool) string {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for time.Now().Before(deadline) {
			if s := screen(); ok(s) {
				return s
			}
			time.Sleep(50 * time.Millisecond)
		}
		t.Fatalf("%s never appeared; the screen:\n%s", what, screen())
		return ""
	}
	waitFor("the chat's header", func(s string) bool { return strings.Contains(s, "recourse chat") })
	if out, err := run("send-keys", "-t", "chat", "Hi! What can you do?", "Enter"); err != nil {
		t.Fatalf("send-keys: %v\n%s", err, out)
	}
	during := waitFor("the retry status line", func(s string) bool {
		return strings.Contains(s, "retrying LLM request after HTTP 504 (attempt 2/4 in ")
	})
	t.Logf("while retrying:\n%s", during)
	if strings.Contains(transcriptPart(during), "retrying") {
		t.Errorf("the retry notice is in the transcript:\n%s", during)
	}
	after := waitFor("the answer", func(s string) bool { return strings.Contains(s, "assistant: Hello!") })
	t.Logf("after the answer:\n%s", after)
	if strings.Contains(after, "retrying LLM request") {
		t.Errorf("the status line was not cleared by the answer:\n%s", after)
	}
}

// transcriptPart is the screen above the separator line.
func transcriptPart(screen string) string {
	if i := strings.Index(screen, "────"); i >= 0 {
		return screen[:i]
	}
	return screen
}
