package broker_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/recourse-dev/recourse/broker"
	"github.com/recourse-dev/recourse/chat"
	"github.com/recourse-dev/recourse/codecs/anthropic"
	"github.com/recourse-dev/recourse/internal/rigtest"
	"github.com/recourse-dev/recourse/layers/retry"
	"github.com/recourse-dev/recourse/recoursetest"
)

// claudeToolUse is a Messages API answer that thinks, then calls get_time.
const claudeToolUse = `{"id":"msg_1","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[` +
	`{"type":"thinking","thinking":"I need the time.","signature":"SIG1"},` +
	`{"type":"tool_use","id":"toolu_01","name":"get_time","input":{"zone":"UTC"}}],` +
	`"stop_reason":"tool_use","usage":{"input_tokens":10,"output_tokens":5}}`

// TestR22_3_BrokerToolLoopOverTheMessagesAPI: the broker's tool loop on
// Claude, with a 529 before each answer: the tool runs once, its result
// goes back as a tool_result answering the tool_use, and the thinking
// block goes back with its signature.
func TestR22_3_BrokerToolLoopOverTheMessagesAPI(t *testing.T) {
	r := rigtest.New(t, anthropic.New(anthropic.WithDefaultMaxTokens(512)), retry.Policy{},
		recoursetest.AnthropicOverloaded(), recoursetest.JSON(200, claudeToolUse),
		recoursetest.AnthropicOverloaded(), recoursetest.JSON(200, recoursetest.AnthropicMessage("It is noon.")))
	var runs atomic.Int32
	tool := broker.Tool{
		Spec: chat.ToolSpec{Name: "get_time", Parameters: json.RawMessage(`{"type":"object","properties":{"zone":{"type":"string"}}}`)},
		Run: func(_ context.Context, args json.RawMessage) (string, error) {
			runs.Add(1)
			assert.JSONEq(t, `{"zone":"UTC"}`, string(args))
			return "12:00", nil
		},
	}
	b := broker.New(r.Client, broker.WithModel(recoursetest.AnthropicModel), broker.WithTools(tool),
		broker.WithPolicy(wire(r, retry.Policy{MaxAttempts: 2, Jitter: jitter(0)})))
	h := []chat.Message{{Role: chat.User, Content: "What time is it?"}}
	comp, err := b.Generate(context.Background(), &h)
	require.NoError(t, err)
	assert.Equal(t, "It is noon.", comp.Message.Content)
	assert.Equal(t, int32(1), runs.Load(), "the tool ran once")
	require.Len(t, h, 4)
	assert.Equal(t, "SIG1", h[1].ReasoningSignature)
	assert.Equal(t, "toolu_01", h[2].ToolCallID)
	reqs := r.Server.Requests()
	require.Len(t, reqs, 4)
	assert.Equal(t, reqs[0].Body, reqs[1].Body)
	assert.Equal(t, reqs[2].Body, reqs[3].Body)
	second := string(reqs[2].Body)
	assert.Contains(t, second, `{"role":"assistant","content":[{"type":"thinking","thinking":"I need the time.","signature":"SIG1"},{"type":"tool_use","id":"toolu_01","name":"get_time","input":{"zone":"UTC"}}]}`)
	assert.Contains(t, second, `{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_01","content":"12:00"}]}`)
	assert.Equal(t, 1, strings.Count(second, `"tool_use_id"`))
}

func pausedTurn(text string) string {
	return `{"id":"msg_p","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[` +
		`{"type":"server_tool_use","id":"srvtoolu_1","name":"web_search","input":{"query":"q"}},` +
		`{"type":"text","text":` + strconvQuote(text) + `}],"stop_reason":"pause_turn","usage":{"input_tokens":10,"output_tokens":5}}`
}

func strconvQuote(s string) string { b, _ := json.Marshal(s); return string(b) }

// TestR22_7_PauseTurnIsContinuedBySendingTheContentBack: a paused turn's
// text goes back as the last assistant message of a new request (never a
// resend of the same bytes), and the run ends with the answer that
// follows.
func TestR22_7_PauseTurnIsContinuedBySendingTheContentBack(t *testing.T) {
	r := rigtest.New(t, anthropic.New(anthropic.WithDefaultMaxTokens(512)), retry.Policy{},
		recoursetest.JSON(200, pausedTurn("Searching. ")), recoursetest.JSON(200, recoursetest.AnthropicMessage("Found it.")))
	b := broker.New(r.Client, broker.WithModel(recoursetest.AnthropicModel))
	h := []chat.Message{{Role: chat.User, Content: "Look it up."}}
	comp, err := b.Generate(context.Background(), &h)
	require.NoError(t, err)
	assert.Equal(t, "Found it.", comp.Message.Content)
	require.Len(t, h, 3)
	assert.Equal(t, chat.Message{Role: chat.Assistant, Content: "Searching. "}, h[1])
	reqs := r.Server.Requests()
	require.Len(t, reqs, 2)
	assert.NotEqual(t, reqs[0].Body, reqs[1].Body, "a continuation, never a resend")
	assert.True(t, strings.HasSuffix(string(reqs[1].Body), `{"role":"assistant","content":[{"type":"text","text":"Searching. "}]}]}`), string(reqs[1].Body))
}

// TestR22_7_PauseTurnsAreBounded: each pause is a round of
// WithMaxToolDepth.
func TestR22_7_PauseTurnsAreBounded(t *testing.T) {
	r := rigtest.New(t, anthropic.New(anthropic.WithDefaultMaxTokens(512)), retry.Policy{},
		recoursetest.JSON(200, pausedTurn("a")), recoursetest.JSON(200, pausedTurn("b")), recoursetest.JSON(200, pausedTurn("c")))
	b := broker.New(r.Client, broker.WithModel(recoursetest.AnthropicModel), broker.WithMaxToolDepth(2))
	h := []chat.Message{{Role: chat.User, Content: "Look it up."}}
	_, err := b.Generate(context.Background(), &h)
	var de *broker.ToolDepthError
	require.ErrorAs(t, err, &de)
	assert.Equal(t, 3, r.Server.Count())
}

// TestR22_7_APausedTurnWithNothingToSendBackEndsTheRun: no text to send
// back (only server tool blocks, which a chat.Message cannot hold): the
// run ends with the paused completion instead of sending the same
// conversation again.
func TestR22_7_APausedTurnWithNothingToSendBackEndsTheRun(t *testing.T) {
	r := rigtest.New(t, anthropic.New(anthropic.WithDefaultMaxTokens(512)), retry.Policy{},
		recoursetest.JSON(200, pausedTurn("")), recoursetest.JSON(200, recoursetest.AnthropicMessage("unused")))
	b := broker.New(r.Client, broker.WithModel(recoursetest.AnthropicModel))
	h := []chat.Message{{Role: chat.User, Content: "Look it up."}}
	comp, err := b.Generate(context.Background(), &h)
	require.NoError(t, err)
	assert.Equal(t, broker.FinishPauseTurn, comp.FinishReason)
	assert.Equal(t, 1, r.Server.Count())
}

// thinkingEvents is a Claude stream that thinks "plan" (signed SIG), then
// starts its text with "Partial " and completes it with "answer.".
func thinkingEvents() []string {
	ev := func(typ, data string) string { return "event: " + typ + "\ndata: " + data + "\n\n" }
	return append(recoursetest.AnthropicStart(),
		ev("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":"","signature":""}}`),
		ev("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"plan"}}`),
		ev("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"SIG"}}`),
		ev("content_block_stop", `{"type":"content_block_stop","index":0}`),
		ev("content_block_start", `{"type":"content_block_start","index":1,"content_block":{"type":"text","text":""}}`),
		ev("content_block_delta", `{"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"Partial "}}`),
		ev("content_block_delta", `{"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"answer."}}`),
		ev("content_block_stop", `{"type":"content_block_stop","index":1}`),
		ev("message_delta", `{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":9}}`),
		ev("message_stop", `{"type":"message_stop"}`))
}

// TestR22_7_AClosedThinkingBlockIsCommittedWithItsSignature: a stream
// cut inside its text, after the provider closed a signed thinking block,
// is continued with that block — its text and signature — as the last
// assistant message; the open text block is never committed.
func TestR22_7_AClosedThinkingBlockIsCommittedWithItsSignature(t *testing.T) {
	evs := thinkingEvents()
	r := rigtest.New(t, anthropic.New(anthropic.WithDefaultMaxTokens(512)), retry.Policy{},
		recoursetest.AnthropicStream(evs...).CutEvents(8), recoursetest.AnthropicStream(recoursetest.AnthropicEvents("Done.")...))
	b := broker.New(r.Client, broker.WithModel(recoursetest.AnthropicModel), broker.WithContinuation(broker.Continuation{Max: 2}),
		broker.WithPolicy(wire(r, retry.Policy{MaxAttempts: 1, Jitter: jitter(0)})))
	h := []chat.Message{{Role: chat.User, Content: "Think."}}
	_, err := drain(b.GenerateStream(context.Background(), &h))
	require.NoError(t, err)
	require.Len(t, h, 3)
	assert.Equal(t, chat.Message{Role: chat.Assistant, Reasoning: "plan", ReasoningSignature: "SIG"}, h[1], "the closed block with its signature, not the open text")
	reqs := r.Server.Requests()
	require.Len(t, reqs, 2)
	assert.Contains(t, string(reqs[1].Body), `{"role":"assistant","content":[{"type":"thinking","thinking":"plan","signature":"SIG"}]}],"stream":true}`)
}

// TestR22_7_AnOpenThinkingBlockIsNeverCommitted: a cut inside the thinking
// block commits nothing; the same conversation is sent again.
func TestR22_7_AnOpenThinkingBlockIsNeverCommitted(t *testing.T) {
	evs := thinkingEvents()
	r := rigtest.New(t, anthropic.New(anthropic.WithDefaultMaxTokens(512)), retry.Policy{},
		recoursetest.AnthropicStream(evs...).CutEvents(5), recoursetest.AnthropicStream(recoursetest.AnthropicEvents("Done.")...))
	b := broker.New(r.Client, broker.WithModel(recoursetest.AnthropicModel), broker.WithContinuation(broker.Continuation{Max: 2}),
		broker.WithPolicy(wire(r, retry.Policy{MaxAttempts: 1, Jitter: jitter(0)})))
	h := []chat.Message{{Role: chat.User, Content: "Think."}}
	_, err := drain(b.GenerateStream(context.Background(), &h))
	require.NoError(t, err)
	require.Len(t, h, 2)
	reqs := r.Server.Requests()
	require.Len(t, reqs, 2)
	assert.Equal(t, reqs[0].Body, reqs[1].Body, "nothing was committed: a restart")
}
