package broker_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/recourse-dev/recourse/broker"
	"github.com/recourse-dev/recourse/chat"
	"github.com/recourse-dev/recourse/codecs/openai"
	"github.com/recourse-dev/recourse/event"
	"github.com/recourse-dev/recourse/internal/rigtest"
	"github.com/recourse-dev/recourse/layer"
	"github.com/recourse-dev/recourse/layers/retry"
	"github.com/recourse-dev/recourse/recoursetest"
)

// TestMain fails the package if any goroutine outlives the tests.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const model = "gpt-4o-mini"

// argsCanary and outputCanary are tool arguments and tool output that may
// appear in the history and the model context, but never in a notice.
const (
	argsCanary   = "ARGS-CANARY-5d1e"
	outputCanary = "TOOL-OUTPUT-CANARY-91ab"
)

// --- OpenAI wire fixtures -------------------------------------------------

func quote(s string) string { b, _ := json.Marshal(s); return string(b) }

// chunk is one chat.completion.chunk event with delta and finish reason.
func chunk(delta, finish string) string {
	fr := "null"
	if finish != "" {
		fr = quote(finish)
	}
	return `data: {"id":"chatcmpl-s","object":"chat.completion.chunk","model":"m","choices":[{"index":0,"delta":` +
		delta + `,"finish_reason":` + fr + `}]}` + "\n\n"
}

func textDelta(s string) string      { return chunk(`{"content":`+quote(s)+`}`, "") }
func reasoningDelta(s string) string { return chunk(`{"reasoning_content":`+quote(s)+`}`, "") }
func toolStart(id, name string) string {
	return chunk(`{"tool_calls":[{"index":0,"id":`+quote(id)+`,"type":"function","function":{"name":`+quote(name)+`,"arguments":""}}]}`, "")
}
func toolArgs(args string) string {
	return chunk(`{"tool_calls":[{"index":0,"function":{"arguments":`+quote(args)+`}}]}`, "")
}
func finish(reason string) string { return chunk(`{}`, reason) }

// stream is a complete SSE answer made of events, a finish and [DONE].
func stream(finishReason string, events ...string) recoursetest.Step {
	return recoursetest.SSE(append(events, finish(finishReason), recoursetest.StreamDone)...)
}

// broken delivers events and then aborts the connection: the stream
// breaks after exactly these events.
func broken(events ...string) recoursetest.Step {
	return recoursetest.SSE(events...).Cut(len(strings.Join(events, "")))
}

// toolCallStream streams a complete response that calls lookup once.
func toolCallStream(id, args string) recoursetest.Step {
	return stream("tool_calls", toolStart(id, "lookup"), toolArgs(args))
}

// toolCallBody is an ordinary response that calls lookup once.
func toolCallBody(id, args, finishReason string) string {
	return `{"id":"chatcmpl-t","object":"chat.completion","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":null,` +
		`"tool_calls":[{"id":` + quote(id) + `,"type":"function","function":{"name":"lookup","arguments":` + quote(args) + `}}]},` +
		`"finish_reason":` + quote(finishReason) + `}],"usage":{"prompt_tokens":5,"completion_tokens":3,"total_tokens":8}}`
}

func toolCallStep(id, args string) recoursetest.Step {
	return recoursetest.JSON(200, toolCallBody(id, args, "tool_calls"))
}

func okStep(content string) recoursetest.Step {
	return recoursetest.JSON(200, recoursetest.OpenAIChat(content))
}

// gateway504 is a 504 whose body echoes the key and the prompt, as a
// careless gateway might.
func gateway504() recoursetest.Step {
	return recoursetest.JSON(504, recoursetest.OpenAIError("server_error", "server_error", "timeout for "+rigtest.Key+" "+rigtest.Prompt))
}

func repeat(s recoursetest.Step, n int) []recoursetest.Step {
	out := make([]recoursetest.Step, n)
	for i := range out {
		out[i] = s
	}
	return out
}

// --- rig, policy, tools, notices -----------------------------------------

func steps(s ...any) []recoursetest.Step {
	var out []recoursetest.Step
	for _, v := range s {
		switch v := v.(type) {
		case recoursetest.Step:
			out = append(out, v)
		case []recoursetest.Step:
			out = append(out, v...)
		}
	}
	return out
}

// newRig starts a scripted OpenAI provider behind a chain whose own policy
// is chainPolicy (the broker's WithPolicy overrides it per call).
func newRig(t *testing.T, chainPolicy retry.Policy, s ...recoursetest.Step) *rigtest.Rig {
	t.Helper()
	return rigtest.New(t, openai.New(), chainPolicy, s...)
}

// wire gives p the rig's clocks, sleep and recorder unless it sets its own.
func wire(r *rigtest.Rig, p retry.Policy) retry.Policy {
	if p.WallClock == nil {
		p.WallClock = r.Clock.Now
	}
	if p.MonotonicClock == nil {
		p.MonotonicClock = r.Clock.Mono
	}
	if p.Sleep == nil {
		p.Sleep = func(ctx context.Context, d time.Duration) error {
			r.Rec.Note("sleep")
			return r.Clock.Sleep(ctx, d)
		}
	}
	if p.OnEvent == nil {
		p.OnEvent = r.Rec.OnEvent
	}
	return p
}

func allow(context.Context, layer.AdmissionRequest) (layer.Decision, error) {
	return layer.Allow, nil
}

func jitter(v float64) func() float64 { return func() float64 { return v } }

// toolLog records the arguments of every tool run.
type toolLog struct {
	mu   sync.Mutex
	args []string
}

func (l *toolLog) runs() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.args...)
}

// lookup is a tool whose output carries outputCanary.
func lookup(l *toolLog) broker.Tool {
	return broker.Tool{
		Spec: chat.ToolSpec{Name: "lookup", Description: "Looks up the weather of a city.",
			Parameters: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}}}`)},
		Run: func(_ context.Context, args json.RawMessage) (string, error) {
			l.mu.Lock()
			l.args = append(l.args, string(args))
			l.mu.Unlock()
			return "sunny " + outputCanary, nil
		},
	}
}

// notices records notices and notes them in the rig's ordered log.
type notices struct {
	mu  sync.Mutex
	all []broker.Notice
	rec *rigtest.Recorder
	// hook, when set, runs for every notice after it is recorded.
	hook func(broker.Notice)
}

func (n *notices) add(x broker.Notice) {
	n.mu.Lock()
	n.all = append(n.all, x)
	n.mu.Unlock()
	if n.rec != nil {
		n.rec.Note("notice:" + string(x.Event))
	}
	if n.hook != nil {
		n.hook(x)
	}
}

func (n *notices) list() []broker.Notice {
	n.mu.Lock()
	defer n.mu.Unlock()
	return append([]broker.Notice(nil), n.all...)
}

func (n *notices) retries() []broker.RetryNotice {
	var out []broker.RetryNotice
	for _, x := range n.list() {
		if x.Retry != nil {
			out = append(out, *x.Retry)
		}
	}
	return out
}

func (n *notices) continuations() []broker.ContinuationNotice {
	var out []broker.ContinuationNotice
	for _, x := range n.list() {
		if x.Continuation != nil {
			out = append(out, *x.Continuation)
		}
	}
	return out
}

func (n *notices) activity() []broker.Activity {
	var out []broker.Activity
	for _, x := range n.list() {
		if x.Activity != nil {
			out = append(out, *x.Activity)
		}
	}
	return out
}

func user(text string) []chat.Message { return []chat.Message{{Role: chat.User, Content: text}} }

// drain consumes a content stream and returns the text and the error.
func drain(seq func(func(string, error) bool)) (string, error) {
	var b strings.Builder
	for s, err := range seq {
		if err != nil {
			return b.String(), err
		}
		b.WriteString(s)
	}
	return b.String(), nil
}

// wireMessage is a message as the scripted provider received it.
type wireMessage struct {
	Role       string `json:"role"`
	Content    any    `json:"content"`
	ToolCalls  []any  `json:"tool_calls"`
	ToolCallID string `json:"tool_call_id"`
}

// sent decodes the messages and tools of every request the provider got.
func sent(t *testing.T, r *rigtest.Rig) (msgs [][]wireMessage, tools []int) {
	t.Helper()
	for _, req := range r.Server.Requests() {
		var body struct {
			Messages []wireMessage `json:"messages"`
			Tools    []any         `json:"tools"`
		}
		require.NoError(t, json.Unmarshal(req.Body, &body))
		msgs = append(msgs, body.Messages)
		tools = append(tools, len(body.Tools))
	}
	return msgs, tools
}

// roles lists the roles of msgs, marking assistant messages with tool calls.
func roles(msgs []chat.Message) []string {
	var out []string
	for _, m := range msgs {
		s := string(m.Role)
		if len(m.ToolCalls) > 0 {
			s += "(tool_calls)"
		}
		out = append(out, s)
	}
	return out
}

// logicalIDs returns the distinct logical IDs of events, in order, and the
// wire attempts seen under each.
func logicalIDs(evs []event.Event) ([]string, map[string][]int) {
	var ids []string
	attempts := map[string][]int{}
	for _, e := range evs {
		if _, ok := attempts[e.LogicalID]; !ok {
			ids = append(ids, e.LogicalID)
			attempts[e.LogicalID] = nil
		}
		if e.Type == event.AttemptStarted {
			attempts[e.LogicalID] = append(attempts[e.LogicalID], e.WireAttempt)
		}
	}
	return ids, attempts
}

// only keeps the lines of log that start with one of the prefixes.
func only(log []string, prefixes ...string) []string {
	var out []string
	for _, l := range log {
		for _, p := range prefixes {
			if strings.HasPrefix(l, p) {
				out = append(out, l)
				break
			}
		}
	}
	return out
}
