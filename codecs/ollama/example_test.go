package ollama_test

import (
	"errors"
	"fmt"

	"github.com/recourse-dev/recourse/chat"
	"github.com/recourse-dev/recourse/codec"
	"github.com/recourse-dev/recourse/codecs/ollama"
)

func ExampleNew() {
	c := ollama.New()
	temperature, numCtx := 0.2, 8192
	body, err := c.Encode(&chat.Request{
		Model: "llama3.2",
		Messages: []chat.Message{
			{Role: chat.System, Content: "Answer briefly."},
			{Role: chat.User, Content: "Why is the sky blue?"},
		},
		Options: chat.Options{Temperature: &temperature, ContextLength: &numCtx, KeepAlive: "5m"},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	info, _ := c.Describe(body)
	fmt.Println("POST", c.Path())
	fmt.Println(string(body))
	fmt.Println(info.Operation)
	// Output:
	// POST /api/chat
	// {"model":"llama3.2","messages":[{"role":"system","content":"Answer briefly."},{"role":"user","content":"Why is the sky blue?"}],"stream":false,"options":{"temperature":0.2,"num_ctx":8192},"keep_alive":"5m"}
	// ordinary
}

func ExampleCodec_Encode_unsupported() {
	_, err := ollama.New().Encode(&chat.Request{
		Model:    "llama3.2",
		Messages: []chat.Message{{Role: chat.User, Content: "Hi"}},
		Options:  chat.Options{ReasoningEffort: "high"},
	})
	var ue *codec.UnsupportedError
	if errors.As(err, &ue) {
		fmt.Println(ue.Control)
		fmt.Println(err)
	}
	// Output:
	// ReasoningEffort
	// recourse: ollama does not support ReasoningEffort
}

// ErrorDocument writes Ollama's error body; Ollama's errors have no code.
func ExampleCodec_ErrorDocument() {
	fmt.Print(string(ollama.New().ErrorDocument("request_too_large", "the body is too large")))
	// Output:
	// {"error":"the body is too large"}
}
