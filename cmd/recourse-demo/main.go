// Command recourse-demo narrates recourse's recovery policy against an
// embedded scripted provider: no network, no keys. Each scenario prints its
// lifecycle events as they happen; a closing table lists the outcome, the
// wire attempts, the POSTs the provider saw and the hits on a redirect
// target that must receive nothing.
//
// With -real and OPENAI_API_KEY set it also runs one completion against the
// real endpoint (OPENAI_BASE_URL, default https://api.openai.com; model
// OPENAI_MODEL, default gpt-4o-mini) through the same default chain.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/recourse-dev/recourse/broker"
	"github.com/recourse-dev/recourse/chain"
	"github.com/recourse-dev/recourse/chat"
	"github.com/recourse-dev/recourse/client"
	"github.com/recourse-dev/recourse/codec"
	"github.com/recourse-dev/recourse/codecs/anthropic"
	"github.com/recourse-dev/recourse/codecs/gemini"
	"github.com/recourse-dev/recourse/codecs/ollama"
	"github.com/recourse-dev/recourse/codecs/openai"
	"github.com/recourse-dev/recourse/codecs/openai/responses"
	"github.com/recourse-dev/recourse/event"
	"github.com/recourse-dev/recourse/layer"
	"github.com/recourse-dev/recourse/layers/retry"
	"github.com/recourse-dev/recourse/recoursetest"
)

type row struct {
	name     string
	outcome  string
	attempts int
	posts    int
	target   string
}

type demo struct {
	out  io.Writer
	rows []row
}

func main() {
	real := flag.Bool("real", false, "also run one completion against a real OpenAI-compatible endpoint (needs OPENAI_API_KEY)")
	flag.Parse()
	d := &demo{out: os.Stdout}
	start := time.Now()
	d.run()
	if *real {
		d.real()
	}
	d.table()
	fmt.Fprintf(d.out, "\n%d scenarios in %.1fs, no network, no keys.\n", len(d.rows), time.Since(start).Seconds())
}

func (d *demo) events(prefix string) func(event.Event) error {
	return func(e event.Event) error {
		line := fmt.Sprintf("  %-22s attempt %d/%d", e.Type, e.WireAttempt, e.MaxAttempts)
		if f := e.Failure; f != nil && e.Type == event.AttemptFailed {
			line += fmt.Sprintf("  %s", f.Category)
			if f.HTTPStatus != 0 {
				line += fmt.Sprintf(" HTTP %d", f.HTTPStatus)
			}
			line += fmt.Sprintf(" → %s", f.Classification.Reason)
			if f.RetryAfter.Valid() {
				line += fmt.Sprintf(" (Retry-After %s: %s)", f.RetryAfter.Kind, f.RetryAfter.Delay)
			}
		}
		switch e.Type {
		case event.DelayScheduled:
			line += fmt.Sprintf("  waiting %s", e.Delay.Round(time.Millisecond))
		case event.AdmissionPending:
			line += fmt.Sprintf("  asking the application whether attempt %d may be sent", e.NextAttempt)
		case event.AdmissionAllowed:
			line += fmt.Sprintf("  the application allowed attempt %d", e.NextAttempt)
		case event.Exhausted:
			line += "  no retry: the call ends (the outcome below says why)"
		case event.Interrupted:
			line += "  not retryable: the call ends"
		}
		fmt.Fprintln(d.out, prefix+line)
		return nil
	}
}

func request(model string) *chat.Request {
	return &chat.Request{Model: model, Messages: []chat.Message{{Role: chat.User, Content: "Say hello."}}}
}

func allow(context.Context, layer.AdmissionRequest) (layer.Decision, error) {
	return layer.Allow, nil
}

// scenario runs one native completion against a fresh scripted provider.
func (d *demo) scenario(name, narration string, cdc codec.Codec, model string, p retry.Policy, target *recoursetest.Target, steps ...recoursetest.Step) {
	fmt.Fprintf(d.out, "\n▶ %s\n  %s\n", name, narration)
	srv := recoursetest.NewServer(steps...)
	defer srv.Close()
	p.OnEvent = d.events("")
	ch, err := chain.Default(cdc, chain.WithPolicy(p))
	if err != nil {
		fmt.Fprintln(d.out, "  chain:", err)
		return
	}
	cl, _ := client.New(srv.URL, ch, client.WithAPIKey("demo-key-not-a-secret"))
	ctx := context.Background()
	comp, err := cl.Complete(ctx, request(model))
	r := row{name: name, posts: srv.Count(), target: "-"}
	if target != nil {
		r.target = fmt.Sprint(target.Hits())
	}
	var re *layer.RecoveryError
	switch {
	case err == nil:
		r.outcome = "success"
		r.attempts = srv.Count()
		fmt.Fprintf(d.out, "  ✓ answer: %q\n", comp.Message.Content)
	case errors.As(err, &re):
		r.outcome = string(re.Outcome)
		r.attempts = len(re.History)
		fmt.Fprintf(d.out, "  ✗ %v\n", err)
	default:
		r.outcome = "error"
		fmt.Fprintf(d.out, "  ✗ %v\n", err)
	}
	d.rows = append(d.rows, r)
}

func (d *demo) run() {
	quick := new(50 * time.Millisecond)
	d.scenario("503 then success", "The provider is busy once; the admission hook allows a resend of the exact same bytes.",
		openai.New(), "gpt-4o-mini", retry.Policy{MaxAttempts: 3, BaseDelay: quick, Admit: allow}, nil,
		recoursetest.JSON(503, recoursetest.OpenAIError("server_error", "server_error", "overloaded")),
		recoursetest.JSON(200, recoursetest.OpenAIChat("Hello after one retry.")))

	when := time.Now().Add(1500 * time.Millisecond).UTC().Format(http1123)
	d.scenario("429 with Retry-After date", "The provider names a time to come back; the delay is at least that long, never shorter.",
		openai.New(), "gpt-4o-mini", retry.Policy{MaxAttempts: 2, BaseDelay: quick}, nil,
		recoursetest.JSON(429, recoursetest.OpenAIError("requests", "rate_limit_exceeded", "slow down"), "Retry-After", when),
		recoursetest.JSON(200, recoursetest.OpenAIChat("Hello after waiting for the provider.")))

	release := make(chan struct{})
	pending := func(ctx context.Context, req layer.AdmissionRequest) (layer.Decision, error) {
		fmt.Fprintf(d.out, "  … the hook waits for an outside decision about attempt %d; nothing is resent meanwhile\n", req.NextAttempt)
		select {
		case <-release:
			return layer.Allow, nil
		case <-ctx.Done():
			return "", ctx.Err()
		}
	}
	go func() { time.Sleep(400 * time.Millisecond); close(release) }()
	d.scenario("admission pending, then allowed", "The hook waits for an outside decision; nothing is resent while it is pending.",
		openai.New(), "gpt-4o-mini", retry.Policy{MaxAttempts: 2, BaseDelay: quick, Admit: pending}, nil,
		recoursetest.JSON(502, recoursetest.OpenAIError("server_error", "", "bad gateway")),
		recoursetest.JSON(200, recoursetest.OpenAIChat("Hello once the application allowed it.")))

	target := recoursetest.NewTarget()
	defer target.Close()
	d.scenario("307 refused", "A redirect is a failure: its Location is never contacted, with or without credentials.",
		openai.New(), "gpt-4o-mini", retry.Policy{MaxAttempts: 3, BaseDelay: quick, Admit: allow}, target,
		recoursetest.Redirect(307, target.URL+"/v1/chat/completions"))

	d.scenario("400 never retried", "A bad request is permanent, even with attempts to spare.",
		openai.New(), "gpt-4o-mini", retry.Policy{MaxAttempts: 3, BaseDelay: quick, Admit: allow}, nil,
		recoursetest.JSON(400, recoursetest.OpenAIError("invalid_request_error", "invalid_request_error", "bad")))

	d.scenario("Retry-After: 3600 refused", "Admission is asked first (it always precedes the delay); then the provider's minimum of 1 h is above the 30 s delay ceiling, so the retry is refused at once: a provider's minimum is never shortened.",
		openai.New(), "gpt-4o-mini", retry.Policy{MaxAttempts: 3, BaseDelay: quick, Admit: allow}, nil,
		recoursetest.JSON(503, recoursetest.OpenAIError("server_error", "", "maintenance"), "Retry-After", "3600"))

	keepalive := ": keep-alive\n\n"
	d.streamScenario("stream cut after keepalives", "The first attempt sends only keepalives and is cut: nothing was generated, so a new attempt continues the one stream.",
		retry.Policy{MaxAttempts: 3, BaseDelay: quick},
		recoursetest.Step{Status: 200, Chunks: [][]byte{[]byte(keepalive), []byte(keepalive)}}.Cut(2*len(keepalive)),
		recoursetest.SSE(recoursetest.OpenAIStream("Hello, ", "streamed ", "world.")...))

	events := recoursetest.OpenAIStream("Half an ", "answer ", "never repeated.")
	d.streamScenario("stream cut after content", "Content already arrived: a resend would duplicate inference, so the stream ends with the typed interrupted error.",
		retry.Policy{MaxAttempts: 3, BaseDelay: quick},
		recoursetest.SSE(events...).Cut(len(events[0])+len(events[1])+len(events[2])),
		recoursetest.SSE(events...))

	d.toolLoop()
	d.continuation()
	d.backgroundResume(retry.Policy{MaxAttempts: 3, BaseDelay: quick})
	d.claudeOverload(retry.Policy{MaxAttempts: 3, BaseDelay: quick})

	d.scenario("Ollama 503 without a hook", "A local server may have run the request: without an admission hook nothing is resent.",
		ollama.New(), "llama3.2", retry.Policy{MaxAttempts: 3, BaseDelay: quick}, nil,
		recoursetest.JSON(503, `{"error":"server busy, please try again.  maximum pending requests exceeded"}`),
		recoursetest.JSON(200, recoursetest.OllamaChat("unused")))

	d.scenario("Ollama 503 with an allowing hook", "The same failure, and the application allows the resend.",
		ollama.New(), "llama3.2", retry.Policy{MaxAttempts: 3, BaseDelay: quick, Admit: allow}, nil,
		recoursetest.JSON(503, `{"error":"server busy, please try again.  maximum pending requests exceeded"}`),
		recoursetest.JSON(200, recoursetest.OllamaChat("Hello from a local model.")))

	d.geminiScene(retry.Policy{MaxAttempts: 3, BaseDelay: quick})
}

// geminiScene is a Gemini 429 RESOURCE_EXHAUSTED without a Retry-After
// header: the wait is in its body (RetryInfo.retryDelay), and the codec
// hands it to the engine as a minimum delay (R23.2).
func (d *demo) geminiScene(p retry.Policy) {
	d.scenario("Gemini 429, wait in the body", "Gemini names its wait in the error body (RetryInfo.retryDelay \"1s\"), with no Retry-After header; it is a minimum all the same.",
		gemini.New(), "gemini-2.5-flash", p, nil,
		recoursetest.GeminiRateLimit("1s", "GenerateRequestsPerMinutePerProjectPerModel-FreeTier"),
		recoursetest.JSON(200, recoursetest.GeminiChat("Hello from Gemini after the wait its 429 named.")))
}

const http1123 = "Mon, 02 Jan 2006 15:04:05 GMT"

// notices prints the broker's retry and continuation notices as the status
// line a terminal shows (never a transcript entry).
func (d *demo) notices(n broker.Notice) {
	switch n.Event {
	case broker.EventRetry:
		fmt.Fprintf(d.out, "  status: %s\n", broker.FormatRetry(*n.Retry))
	case broker.EventContinuation:
		fmt.Fprintf(d.out, "\n  status: %s\n  ", broker.FormatContinuation(*n.Continuation))
	}
}

// toolLoop: a tool call, then 503s, then success; the tool runs once.
func (d *demo) toolLoop() {
	name := "tool loop: tool once, then 503s"
	fmt.Fprintf(d.out, "\n▶ %s\n  %s\n", name, "The model asks for a tool; the next completion meets two 503s. The tool's work is kept and never run again.")
	call := `{"id":"chatcmpl-t","object":"chat.completion","created":1,"model":"gpt-4o-mini","choices":[{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"clock","arguments":"{}"}}]},"finish_reason":"tool_calls"}]}`
	busy := recoursetest.JSON(503, recoursetest.OpenAIError("server_error", "", "busy"))
	srv := recoursetest.NewServer(recoursetest.JSON(200, call), busy, busy, recoursetest.JSON(200, recoursetest.OpenAIChat("It is 12:00.")))
	defer srv.Close()
	ch, _ := chain.Default(openai.New())
	cl, _ := client.New(srv.URL, ch)
	runs := 0
	clock := broker.Tool{
		Spec: chat.ToolSpec{Name: "clock", Description: "The current time.", Parameters: json.RawMessage(`{"type":"object","properties":{}}`)},
		Run: func(context.Context, json.RawMessage) (string, error) {
			runs++
			fmt.Fprintln(d.out, "  tool clock ran")
			return "12:00", nil
		},
	}
	b := broker.New(cl, broker.WithModel("gpt-4o-mini"), broker.WithTools(clock), broker.WithNotices(d.notices),
		broker.WithPolicy(retry.Policy{MaxAttempts: 3, BaseDelay: new(20 * time.Millisecond)}))
	history := []chat.Message{{Role: chat.User, Content: "What time is it?"}}
	comp, err := b.Generate(context.Background(), &history)
	r := row{name: name, posts: srv.Count(), target: "-", attempts: srv.Count()}
	if err != nil {
		r.outcome = "error"
		fmt.Fprintf(d.out, "  ✗ %v\n", err)
	} else {
		r.outcome = "success"
		fmt.Fprintf(d.out, "  ✓ answer: %q — the tool ran %d time(s)\n", comp.Message.Content, runs)
	}
	var roles []string
	for _, m := range history {
		roles = append(roles, string(m.Role))
	}
	fmt.Fprintf(d.out, "  history: [%s]\n", strings.Join(roles, ", "))
	d.rows = append(d.rows, r)
}

// continuation: a stream breaks after a closed text block; only that block
// is committed and the next request continues from it.
func (d *demo) continuation() {
	name := "stream continuation"
	fmt.Fprintf(d.out, "\n▶ %s\n  %s\n", name, "The stream breaks after a text block closed; only that block is kept, and the next request continues from it.")
	chunk := func(delta string, finish string) string {
		f := "null"
		if finish != "" {
			f = `"` + finish + `"`
		}
		return `data: {"id":"c","object":"chat.completion.chunk","model":"gpt-4o-mini","choices":[{"index":0,"delta":` + delta + `,"finish_reason":` + f + `}]}` + "\n\n"
	}
	first := []string{
		chunk(`{"content":"Let me check the clock. "}`, ""),
		chunk(`{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"clock","arguments":""}}]}`, ""),
		chunk(`{"tool_calls":[{"index":0,"function":{"arguments":"{\"tz\":"}}]}`, ""),
	}
	cut := recoursetest.SSE(first...).Cut(len(first[0]) + len(first[1]) + 10)
	rest := recoursetest.SSE(chunk(`{"content":"It is noon."}`, ""), chunk(`{}`, "stop"), "data: [DONE]\n\n")
	srv := recoursetest.NewServer(cut, rest)
	defer srv.Close()
	ch, _ := chain.Default(openai.New())
	cl, _ := client.New(srv.URL, ch)
	b := broker.New(cl, broker.WithModel("gpt-4o-mini"), broker.WithNotices(d.notices),
		broker.WithContinuation(broker.Continuation{Max: 3}),
		broker.WithPolicy(retry.Policy{MaxAttempts: 1, BaseDelay: new(20 * time.Millisecond)}))
	history := []chat.Message{{Role: chat.User, Content: "What time is it?"}}
	fmt.Fprint(d.out, "  ")
	r := row{name: name, target: "-", outcome: "success"}
	for text, err := range b.GenerateStream(context.Background(), &history) {
		if err != nil {
			r.outcome = "error"
			fmt.Fprintf(d.out, "\n  ✗ %v\n", err)
			break
		}
		fmt.Fprint(d.out, text)
	}
	fmt.Fprintln(d.out)
	for _, m := range history[1:] {
		fmt.Fprintf(d.out, "  history: %s %q (tool calls: %d)\n", m.Role, m.Content, len(m.ToolCalls))
	}
	r.posts, r.attempts = srv.Count(), srv.Count()
	d.rows = append(d.rows, r)
}

// backgroundAnswer is the answer of the background scene: ten deltas.
var backgroundAnswer = []string{"A background ", "response ", "keeps ", "running ", "at the provider, ", "so a cut ", "stream ", "is read again ", "from its cursor, ", "never resent."}

// backgroundResume: a background Responses stream is cut at 40 % of its
// answer; recourse reads it again after the last event it delivered, and
// the user sees the whole answer once, with the broker's notice.
func (d *demo) backgroundResume(p retry.Policy) {
	name := "background stream resumed"
	fmt.Fprintf(d.out, "\n▶ %s\n  %s\n", name, "A background Responses stream is cut at 40 % of its answer; recourse reads the same response again from its cursor instead of resending it.")
	const id = "resp_demo"
	evs := recoursetest.ResponsesEvents(id, backgroundAnswer...)
	// Events 0–3 are lifecycle, 4–13 the deltas: cut after the fourth delta.
	srv := recoursetest.NewServer(recoursetest.ResponsesBackground(id, evs...).CutEvents(8), recoursetest.ResponsesResume(id))
	defer srv.Close()
	ch, err := chain.Default(responses.New(responses.Background()))
	if err != nil {
		fmt.Fprintln(d.out, "  chain:", err)
		return
	}
	cl, _ := client.New(srv.URL, ch)
	b := broker.New(cl, broker.WithModel("gpt-4.1-mini"), broker.WithPolicy(p),
		broker.WithNotices(func(n broker.Notice) {
			if n.Event == broker.EventRetry {
				fmt.Fprintf(d.out, "\n  status: %s\n  ", broker.FormatRetry(*n.Retry))
			}
		}))
	history := []chat.Message{{Role: chat.User, Content: "Why resume?"}}
	fmt.Fprint(d.out, "  ")
	r := row{name: name, target: "-", outcome: "success"}
	var text strings.Builder
	for chunk, err := range b.GenerateStream(context.Background(), &history) {
		if err != nil {
			r.outcome = "error"
			fmt.Fprintf(d.out, "\n  ✗ %v\n", err)
			break
		}
		fmt.Fprint(d.out, chunk)
		text.WriteString(chunk)
	}
	fmt.Fprintln(d.out)
	if r.outcome == "success" {
		fmt.Fprintf(d.out, "  ✓ the whole answer, each byte exactly once: %q\n", text.String())
	}
	for _, req := range srv.Requests() {
		if req.Method == "POST" {
			r.posts++
		}
		fmt.Fprintf(d.out, "  provider saw: %s %s", req.Method, req.Path)
		if req.RawQuery != "" {
			fmt.Fprintf(d.out, "?%s", req.RawQuery)
		}
		fmt.Fprintln(d.out)
	}
	r.attempts = srv.Count()
	d.rows = append(d.rows, r)
}

// claudeAnswer is the answer of the Claude scene, in deltas.
var claudeAnswer = []string{"Claude ", "was ", "overloaded ", "before ", "its ", "first ", "block, ", "so ", "recourse ", "sent ", "it ", "again."}

// claudeOverload: a Claude stream answers 200, sends message_start and a
// ping, then an in-band overloaded_error before any content block; recourse
// handles it as the 529 it stands for and sends the request again.
func (d *demo) claudeOverload(p retry.Policy) {
	name := "Claude in-band overload"
	fmt.Fprintf(d.out, "\n▶ %s\n  %s\n", name, "Claude's Messages API answers 200, then reports overloaded_error in-band before any content: that is a 529, and the same bytes are sent again.")
	overloaded := append(recoursetest.AnthropicStart(), recoursetest.AnthropicErrorEvent("overloaded_error", "Overloaded"))
	srv := recoursetest.NewServer(recoursetest.AnthropicStream(overloaded...), recoursetest.AnthropicStream(recoursetest.AnthropicEvents(claudeAnswer...)...))
	defer srv.Close()
	p.OnEvent = d.events("")
	ch, err := chain.Default(anthropic.New(anthropic.WithDefaultMaxTokens(256)), chain.WithPolicy(p))
	if err != nil {
		fmt.Fprintln(d.out, "  chain:", err)
		return
	}
	cl, _ := client.New(srv.URL, ch, client.WithHeader("x-api-key", "demo-key-not-a-secret"))
	r := row{name: name, target: "-", outcome: "success"}
	var text strings.Builder
	for chunk, err := range cl.Stream(context.Background(), request(recoursetest.AnthropicModel)) {
		if err != nil {
			var re *layer.RecoveryError
			if errors.As(err, &re) {
				r.outcome, r.attempts = string(re.Outcome), len(re.History)
			}
			fmt.Fprintf(d.out, "  ✗ %v\n", err)
			break
		}
		text.WriteString(chunk.Content)
	}
	if r.outcome == "success" {
		r.attempts = srv.Count()
		fmt.Fprintf(d.out, "  ✓ streamed answer: %q\n", text.String())
	}
	r.posts = srv.Count()
	d.rows = append(d.rows, r)
}

// streamScenario runs one native chunk stream and prints content as it
// arrives, with a transient status line while recovery waits.
func (d *demo) streamScenario(name, narration string, p retry.Policy, steps ...recoursetest.Step) {
	fmt.Fprintf(d.out, "\n▶ %s\n  %s\n", name, narration)
	srv := recoursetest.NewServer(steps...)
	defer srv.Close()
	p.OnEvent = func(e event.Event) error {
		switch e.Type {
		case event.AttemptFailed:
			f := e.Failure
			fmt.Fprintf(d.out, "\n  [%s after %d raw bytes, %d content bytes seen → %s]", f.Category, f.Progress.RawBytes, f.Progress.Observed.ContentBytes, f.Classification.Reason)
		case event.DelayScheduled:
			fmt.Fprintf(d.out, "\n  status: retrying LLM request after %s (attempt %d/%d in %s)", e.Failure.Category, e.NextAttempt, e.MaxAttempts, e.Delay.Round(time.Millisecond))
		case event.AttemptStarted:
			if e.WireAttempt > 1 {
				fmt.Fprint(d.out, "\n  status: (cleared)\n  ")
			}
		}
		return nil
	}
	ch, err := chain.Default(openai.New(), chain.WithPolicy(p))
	if err != nil {
		fmt.Fprintln(d.out, "  chain:", err)
		return
	}
	cl, _ := client.New(srv.URL, ch)
	fmt.Fprint(d.out, "  ")
	r := row{name: name, target: "-", outcome: "success"}
	var text strings.Builder
	for chunk, err := range cl.Stream(context.Background(), request("gpt-4o-mini")) {
		if err != nil {
			var re *layer.RecoveryError
			if errors.As(err, &re) {
				r.outcome, r.attempts = string(re.Outcome), len(re.History)
			}
			fmt.Fprintf(d.out, "\n  ✗ %v\n", err)
			break
		}
		fmt.Fprint(d.out, chunk.Content)
		text.WriteString(chunk.Content)
		if chunk.Done {
			fmt.Fprintf(d.out, "\n  ✓ streamed answer, each byte exactly once: %q\n", text.String())
		}
	}
	r.posts = srv.Count()
	if r.outcome == "success" {
		r.attempts = srv.Count()
	}
	d.rows = append(d.rows, r)
}

func (d *demo) real() {
	key := os.Getenv("OPENAI_API_KEY")
	if key == "" {
		fmt.Fprintln(d.out, "\n-real: OPENAI_API_KEY is not set; skipped.")
		return
	}
	base := envOr("OPENAI_BASE_URL", "https://api.openai.com")
	model := envOr("OPENAI_MODEL", "gpt-4o-mini")
	fmt.Fprintf(d.out, "\n▶ real provider (%s, %s)\n", strings.TrimRight(base, "/"), model)
	ch, err := chain.Default(openai.New(), chain.WithPolicy(retry.Policy{MaxAttempts: 3, OnEvent: d.events("")}))
	if err != nil {
		fmt.Fprintln(d.out, "  chain:", err)
		return
	}
	cl, _ := client.New(base, ch, client.WithAPIKey(key))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	comp, err := cl.Complete(ctx, request(model))
	r := row{name: "real provider", outcome: "success", target: "-"}
	if err != nil {
		r.outcome = "error"
		fmt.Fprintf(d.out, "  ✗ %v\n", err)
	} else {
		fmt.Fprintf(d.out, "  ✓ answer: %q\n", comp.Message.Content)
	}
	d.rows = append(d.rows, r)
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

func (d *demo) table() {
	fmt.Fprintln(d.out, "\nSummary")
	w := tabwriter.NewWriter(d.out, 2, 4, 2, ' ', 0)
	fmt.Fprintln(w, "scenario\toutcome\twire attempts\tPOSTs at provider\tredirect-target hits")
	for _, r := range d.rows {
		fmt.Fprintf(w, "%s\t%s\t%d\t%d\t%s\n", r.name, r.outcome, r.attempts, r.posts, r.target)
	}
	w.Flush()
}
