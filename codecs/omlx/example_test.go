package omlx_test

import (
	"errors"
	"fmt"
	"time"

	"github.com/recourse-dev/recourse/chat"
	"github.com/recourse-dev/recourse/codec"
	"github.com/recourse-dev/recourse/codecs/omlx"
)

func ExampleNew() {
	c := omlx.New()
	maxTokens, topK := 512, 20
	body, err := c.Encode(&chat.Request{
		Model:    "Qwen3-8B-4bit",
		Messages: []chat.Message{{Role: chat.User, Content: "Why is the sky blue?"}},
		Options:  chat.Options{MaxTokens: &maxTokens, TopK: &topK, ReasoningEffort: "low"},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("POST", c.Path())
	fmt.Println(string(body))
	fmt.Println("legacy timeout without recovery:", c.LegacyTimeout())
	// Output:
	// POST /v1/chat/completions
	// {"model":"Qwen3-8B-4bit","messages":[{"role":"user","content":"Why is the sky blue?"}],"stream":false,"top_k":20,"max_tokens":512,"reasoning_effort":"low"}
	// legacy timeout without recovery: 5m0s
}

func ExampleCodec_Encode_unsupported() {
	numCtx := 32768
	_, err := omlx.New().Encode(&chat.Request{
		Model:    "Qwen3-8B-4bit",
		Messages: []chat.Message{{Role: chat.User, Content: "Hi"}},
		Options:  chat.Options{ContextLength: &numCtx},
	})
	var ue *codec.UnsupportedError
	if errors.As(err, &ue) {
		fmt.Println(ue.Control)
		fmt.Println(err)
	}
	// Output:
	// ContextLength
	// recourse: omlx does not support ContextLength
}

func ExampleWithLegacyTimeout() {
	c := omlx.New(omlx.WithLegacyTimeout(90 * time.Second))
	fmt.Println(c.LegacyTimeout())
	// Output: 1m30s
}
