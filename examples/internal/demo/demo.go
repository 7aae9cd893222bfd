// Package demo is the plumbing the example programs share, so that each
// example's main.go shows only what it demonstrates: running a program's
// run function, picking an OpenAI-compatible endpoint (a scripted server
// on 127.0.0.1 unless OPENAI_BASE_URL names a real one) and printing the
// safe fields of lifecycle events.
package demo

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"time"

	"github.com/recourse-dev/recourse/event"
	"github.com/recourse-dev/recourse/recoursetest"
)

// Main runs run with standard output and, when it fails, prints the error
// on standard error after the program's name and exits with status 1.
func Main(name string, run func(w io.Writer) error) {
	if err := run(os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, name+":", err)
		os.Exit(1)
	}
}

// SSEKeepalive is an SSE comment event, the keep-alive some servers send
// before the first chunk; an offline script cuts a stream right after it.
const SSEKeepalive = ": keep-alive\n\n"

// Recovered503 returns the script of a completion whose first attempt the
// server refuses as overloaded (a 503 with OpenAI's error body) and whose
// second attempt it answers with a 200 chat completion.
func Recovered503() []recoursetest.Step {
	return []recoursetest.Step{
		recoursetest.JSON(http.StatusServiceUnavailable, recoursetest.OpenAIError("server_error", "server_error", "The server is overloaded.")),
		recoursetest.JSON(http.StatusOK, recoursetest.OpenAIChat("Hello from the scripted server.")),
	}
}

// RecoveredStream returns the script of a stream that the server cuts
// after a keep-alive, before any content, and then plays in full as
// OpenAI chunks of deltas.
func RecoveredStream(deltas ...string) []recoursetest.Step {
	return []recoursetest.Step{
		recoursetest.SSE(SSEKeepalive).CutEvents(1),
		recoursetest.SSE(recoursetest.OpenAIStream(deltas...)...),
	}
}

// Endpoint is the OpenAI-compatible endpoint an example talks to.
type Endpoint struct {
	// APIBase is the API root, for example "https://api.openai.com/v1".
	APIBase string
	// Key is the API key.
	Key string
	// Model is the model to ask.
	Model string
}

// OpenAI returns the endpoint of OPENAI_BASE_URL, OPENAI_API_KEY and
// OPENAI_MODEL (default "gpt-4o-mini") when OPENAI_BASE_URL is set.
// Otherwise it starts a scripted server on 127.0.0.1 that plays steps,
// announces it on w as "offline: scripted server at <URL> (<script>)" (no
// parentheses for an empty script) and returns its root, "<URL>/v1/", with
// a demo key. stop stops the server; for a real endpoint it does nothing.
func OpenAI(w io.Writer, script string, steps ...recoursetest.Step) (ep Endpoint, stop func()) {
	ep = Endpoint{APIBase: os.Getenv("OPENAI_BASE_URL"), Key: os.Getenv("OPENAI_API_KEY"), Model: os.Getenv("OPENAI_MODEL")}
	if ep.Model == "" {
		ep.Model = "gpt-4o-mini"
	}
	if ep.APIBase != "" {
		return ep, func() {}
	}
	srv := recoursetest.NewServer(steps...)
	ep.APIBase, ep.Key = srv.URL+"/v1/", "sk-offline-demo"
	if script != "" {
		script = " (" + script + ")"
	}
	fmt.Fprintf(w, "offline: scripted server at %s%s\n", srv.URL, script)
	return ep, srv.Close
}

// EventFormat is how an example prints a lifecycle event: only its safe
// fields, never a body, header or credential (R10.5).
type EventFormat struct {
	// Indent goes before every line.
	Indent string
	// Width pads the event type to this many characters.
	Width int
	// Next adds the next wire attempt of an event that names one.
	Next bool
}

// Print writes ev to w as one line: "event <type> attempt <n>/<max>", the
// failure's category, HTTP status and reason when there is one, the next
// attempt when f.Next is set, and the delay of a delay_scheduled event.
func (f EventFormat) Print(w io.Writer, ev event.Event) {
	line := fmt.Sprintf("%sevent %-*s attempt %d/%d", f.Indent, f.Width, ev.Type, ev.WireAttempt, ev.MaxAttempts)
	if fl := ev.Failure; fl != nil {
		line += fmt.Sprintf("  %s", fl.Category)
		if fl.HTTPStatus != 0 {
			line += fmt.Sprintf(" %d", fl.HTTPStatus)
		}
		line += fmt.Sprintf(" (%s)", fl.Classification.Reason)
	}
	if f.Next && ev.NextAttempt != 0 {
		line += fmt.Sprintf("  next %d", ev.NextAttempt)
	}
	if ev.Type == event.DelayScheduled {
		line += fmt.Sprintf("  delay %s", ev.Delay.Round(time.Millisecond))
	}
	fmt.Fprintln(w, line)
}
