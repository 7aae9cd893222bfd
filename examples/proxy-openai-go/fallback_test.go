package proxyopenaigo

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/recourse-dev/recourse/layers/fallback"
	"github.com/recourse-dev/recourse/layers/retry"
	"github.com/recourse-dev/recourse/proxy"
	"github.com/recourse-dev/recourse/recoursetest"
)

// openai-go, unmodified, behind a proxy with a fallback model (R20.10):
// the upstream answers 503 on model A every time and answers on model B.
// The client gets B's answer, and the upstream saw exactly max-attempts
// POSTs for A and one for B.
func TestR20_10_OpenAIGoGetsTheFallbackModelsAnswer(t *testing.T) {
	up := recoursetest.NewServer(overloaded, overloaded, overloaded, overloaded,
		recoursetest.JSON(200, recoursetest.OpenAIChat("Hello from B")))
	t.Cleanup(up.Close)
	p := retry.Recommended()
	p.Sleep = func(ctx context.Context, _ time.Duration) error { return ctx.Err() }
	h, err := proxy.New(proxy.Config{Provider: "openai", Upstream: up.URL, Policy: p,
		Fallback: []fallback.Target{{Model: "model-b"}}})
	require.NoError(t, err)
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	client := openai.NewClient(option.WithBaseURL(srv.URL+"/v1/"), option.WithAPIKey("sk-test"),
		option.WithHTTPClient(&http.Client{Transport: tr}))

	res, err := client.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{
		Model:    "model-a",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hello")},
	})
	require.NoError(t, err)
	assert.Equal(t, "Hello from B", res.Choices[0].Message.Content)
	count := map[string]int{}
	for _, r := range up.Requests() {
		var m struct{ Model string }
		require.NoError(t, json.Unmarshal(r.Body, &m))
		count[m.Model]++
	}
	assert.Equal(t, map[string]int{"model-a": p.MaxAttempts, "model-b": 1}, count)
}
