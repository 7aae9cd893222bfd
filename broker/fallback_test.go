package broker_test

import (
	"encoding/json"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/recourse-dev/recourse/broker"
	"github.com/recourse-dev/recourse/chat"
	"github.com/recourse-dev/recourse/client"
	"github.com/recourse-dev/recourse/codecs/ollama"
	"github.com/recourse-dev/recourse/codecs/openai"
	"github.com/recourse-dev/recourse/event"
	"github.com/recourse-dev/recourse/internal/rigtest"
	"github.com/recourse-dev/recourse/layers/fallback"
	"github.com/recourse-dev/recourse/layers/retry"
	"github.com/recourse-dev/recourse/recoursetest"
)

// A broker over a client with fallback targets announces the fallback with
// one safe notice and status line, "falling back to llama3 after HTTP 503
// (4 attempts)", before the next target answers.
func TestR20_6_BrokerAnnouncesTheFallback(t *testing.T) {
	overloaded := recoursetest.JSON(503, recoursetest.OpenAIError("server_error", "server_error", "overloaded"))
	ra := rigtest.New(t, openai.New(), retry.Policy{MaxAttempts: 4}, overloaded, overloaded, overloaded, overloaded)
	rb := rigtest.New(t, ollama.New(), retry.Policy{}, recoursetest.JSON(200, recoursetest.OllamaChat("from llama")))
	c, err := client.New(ra.Server.URL, ra.Chain, client.WithAPIKey(rigtest.Key),
		client.WithFallback(fallback.Rules{}, client.FallbackTarget{Client: rb.Client, Model: "llama3"}))
	require.NoError(t, err)
	var mu sync.Mutex
	var notices []broker.Notice
	var status broker.Status
	b := broker.New(c, broker.WithModel("gpt-4o"), broker.WithNotices(func(n broker.Notice) {
		mu.Lock()
		defer mu.Unlock()
		notices = append(notices, n)
		if n.Event == broker.EventFallback {
			status.Apply(n)
			assert.Equal(t, 0, rb.Server.Count(), "the notice precedes the next target's request")
		}
	}))
	history := []chat.Message{{Role: chat.User, Content: rigtest.Prompt}}
	comp, err := b.Generate(t.Context(), &history)
	require.NoError(t, err)
	assert.Equal(t, "from llama", comp.Message.Content)
	mu.Lock()
	defer mu.Unlock()
	var fb []broker.FallbackNotice
	for _, n := range notices {
		if n.Event == broker.EventFallback {
			fb = append(fb, *n.Fallback)
		}
		js, err := json.Marshal(n)
		require.NoError(t, err)
		assert.NotContains(t, string(js), rigtest.Key)
		assert.NotContains(t, string(js), rigtest.Prompt)
	}
	require.Len(t, fb, 1)
	assert.Equal(t, broker.FallbackNotice{Completion: 1, From: "gpt-4o", To: "llama3", Outcome: event.OutcomeExhausted,
		Attempts: 4, HTTPStatus: 503, Error: "HTTP 503"}, fb[0])
	assert.Equal(t, "falling back to llama3 after HTTP 503 (4 attempts)", broker.FormatFallback(fb[0]))
	assert.Equal(t, "falling back to llama3 after HTTP 503 (4 attempts)", status.Line())
	for _, h := range history {
		assert.NotContains(t, h.Content, "falling back", "notices never enter the history")
	}
}

// The fallback notice round-trips through JSON, and a skipped target reads
// as cooling down.
func TestR20_6_FallbackNoticeJSONAndText(t *testing.T) {
	n := broker.Notice{Event: broker.EventFallback, Fallback: &broker.FallbackNotice{Completion: 2, From: "a", To: "b",
		Outcome: event.OutcomeDelayCeiling, Skipped: true, Error: "transport error"}}
	js, err := json.Marshal(n)
	require.NoError(t, err)
	assert.JSONEq(t, `{"event":"llm_fallback","data":{"completion":2,"from":"a","to":"b","outcome":"delay_ceiling","attempts":0,"skipped":true,"error":"transport error"}}`, string(js))
	var back broker.Notice
	require.NoError(t, json.Unmarshal(js, &back))
	assert.Equal(t, n, back)
	assert.Equal(t, "falling back to b: a is cooling down", broker.FormatFallback(*n.Fallback))
	assert.Equal(t, "falling back to b after HTTP 429 (1 attempt)", broker.FormatFallback(broker.FallbackNotice{To: "b", Attempts: 1, Error: "HTTP 429"}))
	_, err = json.Marshal(broker.Notice{Event: broker.EventFallback})
	assert.Error(t, err)
}
