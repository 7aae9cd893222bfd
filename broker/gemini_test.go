package broker_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/recourse-dev/recourse/broker"
	"github.com/recourse-dev/recourse/client"
	"github.com/recourse-dev/recourse/codecs/gemini"
	"github.com/recourse-dev/recourse/internal/rigtest"
	"github.com/recourse-dev/recourse/layers/fallback"
	"github.com/recourse-dev/recourse/layers/retry"
	"github.com/recourse-dev/recourse/recoursetest"
)

// geminiToolCall is a Gemini answer whose one part is a whole function
// call of lookup, sent without an ID as the API sends it.
const geminiToolCall = `{"candidates":[{"content":{"role":"model","parts":[{"functionCall":{"name":"lookup","args":{"city":"Paris"}}}]},"finishReason":"STOP"}],"modelVersion":"gemini-2.5-flash"}`

// R16.1 and R23: the broker's tool loop over the Gemini codec, streamed:
// the function call arrives whole, runs once, and the completion after it
// recovers from a 503 and a 429 whose wait is in the body; the resends
// carry the same functionCall and functionResponse turns.
func TestR23_BrokerToolLoopOverGeminiRunsTheToolOnce(t *testing.T) {
	r := rigtest.New(t, gemini.New(), retry.Policy{},
		recoursetest.SSE(recoursetest.GeminiEvent(geminiToolCall)),
		recoursetest.JSON(503, recoursetest.GeminiError(503, "UNAVAILABLE", "overloaded")),
		recoursetest.GeminiRateLimit("2s", "GenerateRequestsPerMinutePerProjectPerModel-FreeTier"),
		recoursetest.SSE(recoursetest.GeminiStream("It is sunny ", "in Paris.")...))
	tl := &toolLog{}
	b := broker.New(r.Client, broker.WithModel("gemini-2.5-flash"), broker.WithTools(lookup(tl)),
		broker.WithPolicy(wire(r, retry.Policy{MaxAttempts: 3, Jitter: jitter(0)})))
	h := user("Weather in Paris?")
	text, err := drain(b.GenerateStream(context.Background(), &h))
	require.NoError(t, err)
	assert.Equal(t, "It is sunny in Paris.", text)
	assert.Equal(t, []string{`{"city":"Paris"}`}, tl.runs(), "the tool ran exactly once")
	assert.Equal(t, []string{"user", "assistant(tool_calls)", "tool", "assistant"}, roles(h))
	reqs := r.Server.Requests()
	require.Len(t, reqs, 4)
	for _, q := range reqs {
		assert.Equal(t, "/v1beta/models/gemini-2.5-flash:streamGenerateContent", q.Path)
	}
	assert.Equal(t, string(reqs[1].Body), string(reqs[2].Body), "R2.5: the resend is the same payload")
	assert.Equal(t, string(reqs[1].Body), string(reqs[3].Body))
	var body struct {
		Contents []struct {
			Role  string            `json:"role"`
			Parts []json.RawMessage `json:"parts"`
		} `json:"contents"`
	}
	require.NoError(t, json.Unmarshal(reqs[3].Body, &body))
	require.Len(t, body.Contents, 3)
	assert.Equal(t, "model", body.Contents[1].Role)
	assert.JSONEq(t, `{"functionCall":{"name":"lookup","args":{"city":"Paris"}}}`, string(body.Contents[1].Parts[0]))
	assert.Contains(t, string(body.Contents[2].Parts[0]), `"functionResponse":{"name":"lookup","response":{"output":"sunny `)
	sleeps := r.Clock.Sleeps()
	require.Len(t, sleeps, 2)
	assert.Equal(t, 2*time.Second, sleeps[1], "the wait the 429's body named")
}

// R16.2 and R23: a chat session over the Gemini codec sends its system
// prompt as the systemInstruction and its history as contents; a 503
// before the answer is recovered, and the native client falls back to
// another Gemini model by its path when the first is exhausted (R20.9).
func TestR23_SessionOverGeminiWithFallbackToAnotherModel(t *testing.T) {
	busy := recoursetest.JSON(503, recoursetest.GeminiError(503, "UNAVAILABLE", "overloaded"))
	r := rigtest.New(t, gemini.New(), retry.Policy{MaxAttempts: 2, Jitter: jitter(0)},
		busy, recoursetest.JSON(200, recoursetest.GeminiChat("first answer")),
		busy, busy, recoursetest.JSON(200, recoursetest.GeminiChat("from flash")))
	c, err := client.New(r.Server.URL, r.Chain,
		client.WithFallback(fallback.Rules{}, client.FallbackTarget{Client: r.Client, Model: "gemini-2.5-flash"}))
	require.NoError(t, err)
	s := broker.NewSession(broker.New(c, broker.WithModel("gemini-2.5-pro")), "Be brief.")
	got, err := s.Send(context.Background(), "hello")
	require.NoError(t, err)
	assert.Equal(t, "first answer", got)
	got, err = s.Send(context.Background(), "again")
	require.NoError(t, err)
	assert.Equal(t, "from flash", got)
	var paths []string
	for _, q := range r.Server.Requests() {
		paths = append(paths, q.Path)
	}
	pro, flash := "/v1beta/models/gemini-2.5-pro:generateContent", "/v1beta/models/gemini-2.5-flash:generateContent"
	assert.Equal(t, []string{pro, pro, pro, pro, flash}, paths)
	last := string(r.Server.Requests()[4].Body)
	assert.Contains(t, last, `"systemInstruction":{"parts":[{"text":"Be brief."}]}`)
	assert.Contains(t, last, `{"role":"model","parts":[{"text":"first answer"}]}`)
}
