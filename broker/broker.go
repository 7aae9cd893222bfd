package broker

import (
	"context"
	"encoding/json"
	"slices"

	"github.com/recourse-dev/recourse/chat"
	"github.com/recourse-dev/recourse/client"
	"github.com/recourse-dev/recourse/event"
	"github.com/recourse-dev/recourse/layer"
	"github.com/recourse-dev/recourse/layers/retry"
)

// DefaultMaxToolDepth is the number of tool rounds a run executes at most
// unless WithMaxToolDepth says otherwise.
const DefaultMaxToolDepth = 8

// Tool is a tool the model may call: its descriptor and the function that
// runs it. Run receives the call's argument object as JSON text and returns
// the text of the tool message; an error becomes the tool message
// "error: " + err.Error(), so it is what the model reads and must not hold
// anything the model may not see. Run is called at most once per call; a panic in it
// is recovered and becomes the tool message "error: the tool failed" (the
// panic value is not shown to the model), so the history stays complete.
type Tool struct {
	// Spec is the descriptor sent to the model; its Name selects the tool.
	Spec chat.ToolSpec
	// Run executes one call; it should honour ctx.
	Run func(ctx context.Context, args json.RawMessage) (string, error)
}

// Continuation configures stream continuation. The zero value
// leaves it off.
type Continuation struct {
	// Max is the budget: how many continuations (or restarts) of one answer
	// may be sent in a row. A completion that ends normally resets the
	// count. 0 or less turns continuation off.
	Max int
}

// Option configures a Broker.
type Option func(*Broker)

// WithModel sets the model every request names.
func WithModel(model string) Option { return func(b *Broker) { b.model = model } }

// WithRequestOptions sets the sampling and generation controls
// (chat.Options) of every request.
func WithRequestOptions(o chat.Options) Option { return func(b *Broker) { b.options = o } }

// WithTools adds tools the model may call. A tool whose name was already
// added replaces the earlier one.
func WithTools(tools ...Tool) Option {
	return func(b *Broker) {
		for _, t := range tools {
			if i := slices.IndexFunc(b.tools, func(o Tool) bool { return o.Spec.Name == t.Spec.Name }); i >= 0 {
				b.tools[i] = t
				continue
			}
			b.tools = append(b.tools, t)
		}
	}
}

// WithMaxToolDepth sets how many tool rounds (a response's calls executed
// and answered) one run executes at most; values below 1 mean 1. The
// default is DefaultMaxToolDepth.
func WithMaxToolDepth(n int) Option { return func(b *Broker) { b.maxDepth = max(n, 1) } }

// WithPolicy sets the recovery policy applied to every completion of the
// broker through retry.WithPolicy, and the admission hook, the
// backoff, the jitter, the budget and deadline, the clocks and the Sleep of
// continuations. Without it every completion and every continuation uses
// the chain's own policy.
func WithPolicy(p retry.Policy) Option { return func(b *Broker) { b.policy = &p } }

// WithNotices sets the callback that receives the run's notices: retry and
// continuation notices and activity signals (see Notice). It is called
// synchronously, on the goroutine of the call, in order; a panic in it
// propagates to the caller. Runs of one Broker on several goroutines call
// it concurrently. For GenerateStream and Session.SendStream the order is
// also the order relative to the yielded content: a completion's
// ActivityCompletionStarted comes before its first content string, and a
// ContinuationNotice comes after the last string of the broken stream and
// before the first string of its continuation.
func WithNotices(f func(Notice)) Option { return func(b *Broker) { b.notify = f } }

// WithContinuation turns on stream continuation for GenerateStream,
// off by default.
func WithContinuation(c Continuation) Option { return func(b *Broker) { b.cont = c } }

// Broker runs the tool loop over a native client. It is immutable
// after New and safe for concurrent use; each call is an independent run.
type Broker struct {
	client   *client.Client
	model    string
	options  chat.Options
	tools    []Tool
	maxDepth int
	policy   *retry.Policy
	notify   func(Notice)
	cont     Continuation
}

// New returns a broker that sends through client.
func New(cl *client.Client, opts ...Option) *Broker {
	b := &Broker{client: cl, maxDepth: DefaultMaxToolDepth}
	for _, o := range opts {
		o(b)
	}
	return b
}

// Generate runs the tool loop on history: it sends the
// conversation, and while the response asks for tools it appends the
// assistant message with its calls, runs each call once and appends one
// tool message per call (ToolCallID, ToolName, the tool's output or an
// error text), then sends again. The response without tool calls is
// appended too and returned. Everything completed stays appended when a
// later completion fails; the failure is returned as the chain reports it
// (a *layer.RecoveryError, a *layer.PolicyError before anything was sent,
// …), or as a *ToolDepthError or *IncompleteError.
func (b *Broker) Generate(ctx context.Context, history *[]chat.Message) (*chat.Completion, error) {
	if history == nil {
		return nil, ErrNilHistory
	}
	r := b.newRun()
	defer r.end()
	rounds := 0
	for {
		cctx, idx := r.begin(ctx)
		comp, err := b.client.Complete(cctx, b.request(*history, true))
		if err != nil {
			return nil, err
		}
		r.arrived(idx, comp.Message)
		done, err := b.completed(ctx, r, idx, history, comp, &rounds)
		if err != nil {
			return nil, err
		}
		if done {
			return comp, nil
		}
	}
}

// GenerateObject runs one structured completion that asks for JSON
// following schema: the schema is sent as given, no tools are
// offered or executed and the answer is parsed, not validated. The
// assistant message is appended to history and the completion returned.
func (b *Broker) GenerateObject(ctx context.Context, history *[]chat.Message, schema chat.Schema) (*chat.Completion, error) {
	if history == nil {
		return nil, ErrNilHistory
	}
	r := b.newRun()
	defer r.end()
	cctx, idx := r.begin(ctx)
	comp, err := b.client.CompleteStructured(cctx, b.request(*history, false), schema)
	if err != nil {
		return nil, err
	}
	r.arrived(idx, comp.Message)
	msg := comp.Message.Clone()
	msg.Role = chat.Assistant
	*history = append(*history, msg)
	return comp, nil
}

// FinishPauseTurn is the finish reason of a turn the provider paused
// (Anthropic's stop_reason pause_turn, after a long run of its own server
// tools). Generate and GenerateStream continue such a turn by sending its
// content back as the last assistant message — a new request, never a
// resend — counting each pause as a round of WithMaxToolDepth (R22.7). A
// paused turn with no text to send back ends the run with that completion.
const FinishPauseTurn = "pause_turn"

// request builds the request of one completion from a copy of history.
func (b *Broker) request(history []chat.Message, tools bool) *chat.Request {
	msgs := make([]chat.Message, len(history))
	for i, m := range history {
		msgs[i] = m.Clone()
	}
	req := &chat.Request{Model: b.model, Messages: msgs, Options: b.options}
	if tools {
		for _, t := range b.tools {
			req.Tools = append(req.Tools, t.Spec)
		}
	}
	return req
}

// completed is the one success path of a completed response, shared by
// Generate and GenerateStream: append the final answer and stop, or append
// the assistant message with its tool calls, run them once and append
// their results. done reports the final answer.
func (b *Broker) completed(ctx context.Context, r *run, idx int, history *[]chat.Message, comp *chat.Completion, rounds *int) (done bool, err error) {
	msg := comp.Message.Clone()
	msg.Role = chat.Assistant
	if comp.FinishReason == FinishPauseTurn && len(msg.ToolCalls) == 0 && msg.Content != "" {
		// The provider paused a long turn of its own tools (R22.7): the
		// turn goes on by sending its content back, a new request, never
		// a resend; each pause counts as a round.
		if *rounds >= b.maxDepth {
			return false, &ToolDepthError{Max: b.maxDepth, Completion: idx}
		}
		*rounds++
		*history = append(*history, msg)
		return false, nil
	}
	if len(msg.ToolCalls) == 0 {
		*history = append(*history, msg)
		return true, nil
	}
	if comp.FinishReason == "length" {
		return false, &IncompleteError{Completion: idx, FinishReason: comp.FinishReason}
	}
	if *rounds >= b.maxDepth {
		return false, &ToolDepthError{Max: b.maxDepth, Completion: idx}
	}
	*rounds++
	*history = append(*history, msg)
	for _, call := range msg.ToolCalls {
		out := b.runTool(ctx, call)
		*history = append(*history, chat.Message{Role: chat.Tool, Content: out, ToolCallID: call.ID, ToolName: call.Name})
		r.activity(ActivityToolResult, idx)
	}
	return false, nil
}

// runTool runs one call and returns the text of its tool message.
func (b *Broker) runTool(ctx context.Context, call chat.ToolCall) string {
	i := slices.IndexFunc(b.tools, func(t Tool) bool { return t.Spec.Name == call.Name })
	if i < 0 || b.tools[i].Run == nil {
		return "error: unknown tool"
	}
	if ctx.Err() != nil {
		return "error: the tool was not run because the request was cancelled"
	}
	out, panicked, err := callTool(ctx, b.tools[i].Run, append(json.RawMessage(nil), call.Arguments...))
	if panicked {
		return "error: the tool failed"
	}
	if err != nil {
		return "error: " + err.Error()
	}
	return out
}

// callTool runs one tool call. A panic in the tool is recovered: the call
// still gets its tool message (so the history stays a valid conversation
// and nothing completed is lost), and the panic value, which may hold
// anything, is not shown to the model.
func callTool(ctx context.Context, run func(context.Context, json.RawMessage) (string, error), args json.RawMessage) (out string, panicked bool, err error) {
	defer func() {
		if recover() != nil {
			out, panicked, err = "", true, nil
		}
	}()
	out, err = run(ctx, args)
	return out, false, err
}

// run is the state of one Generate, GenerateStream or GenerateObject call.
type run struct {
	b *Broker
	n int // completions started
	// seen records the delta kinds already reported for completion n.
	seen map[ActivityKind]bool
}

func (b *Broker) newRun() *run { return &run{b: b} }

// begin starts the next completion: it announces it and returns its
// context (the broker's policy, the retry-notice observer) and index.
func (r *run) begin(ctx context.Context) (context.Context, int) {
	r.n++
	idx := r.n
	r.seen = nil
	r.activity(ActivityCompletionStarted, idx)
	if r.b.policy != nil {
		ctx = retry.WithPolicy(ctx, r.b.policy)
	}
	if notify := r.b.notify; notify != nil {
		// The completion's per-call value: the native client uses it, and
		// the engine calls its observers right after the policy's OnEvent
		// and before it sleeps, so the notice precedes every backoff sleep.
		lc := &layer.Call{}
		lc.Observe(func(ev event.Event) {
			switch ev.Type {
			case event.DelayScheduled:
				n := retryNotice(idx, ev)
				notify(Notice{Event: EventRetry, Retry: &n})
			case event.QuotaRefused:
				n := quotaNotice(idx, ev)
				notify(Notice{Event: EventQuotaExhausted, Quota: &n})
			case event.CooldownWait:
				notify(Notice{Event: EventCooldown, Cooldown: &CooldownNotice{Completion: idx, Wait: ev.Delay}})
			case event.Fallback:
				n := fallbackNotice(idx, ev)
				notify(Notice{Event: EventFallback, Fallback: &n})
			}
		})
		ctx = layer.WithCall(ctx, lc)
	}
	return ctx, idx
}

// end announces the end of the run.
func (r *run) end() { r.activity(ActivityRunEnded, r.n) }

// activity reports an activity signal.
func (r *run) activity(k ActivityKind, idx int) {
	if r.b.notify != nil {
		r.b.notify(Notice{Event: EventActivity, Activity: &Activity{Kind: k, Completion: idx}})
	}
}

// delta reports the first delta of kind k of completion idx.
func (r *run) delta(k ActivityKind, idx int) {
	if r.b.notify == nil || r.seen[k] {
		return
	}
	if r.seen == nil {
		r.seen = map[ActivityKind]bool{}
	}
	r.seen[k] = true
	r.activity(k, idx)
}

// arrived reports the output of a non-streamed completion.
func (r *run) arrived(idx int, m chat.Message) {
	if m.Reasoning != "" {
		r.delta(ActivityReasoning, idx)
	}
	if m.Content != "" {
		r.delta(ActivityContent, idx)
	}
	if len(m.ToolCalls) > 0 {
		r.delta(ActivityToolCall, idx)
	}
}
