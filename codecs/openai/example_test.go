package openai_test

import (
	"fmt"

	"github.com/recourse-dev/recourse/chat"
	"github.com/recourse-dev/recourse/codecs/openai"
)

func ExampleNew() {
	codec := openai.New()
	maxTokens := 256
	body, err := codec.Encode(&chat.Request{
		Model: "o4-mini",
		Messages: []chat.Message{
			{Role: chat.System, Content: "Answer in one word."},
			{Role: chat.User, Content: "Capital of Japan?"},
		},
		// A reasoning model takes max_completion_tokens (R14.1).
		Options: chat.Options{MaxTokens: &maxTokens, ReasoningEffort: "low"},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(codec.Path())
	fmt.Println(string(body))
	// Output:
	// /v1/chat/completions
	// {"model":"o4-mini","messages":[{"role":"system","content":"Answer in one word."},{"role":"user","content":"Capital of Japan?"}],"reasoning_effort":"low","max_completion_tokens":256}
}

// ErrorDocument writes the error body OpenAI's SDKs parse into an API error.
func ExampleCodec_ErrorDocument() {
	fmt.Print(string(openai.New().ErrorDocument("request_too_large", `the body is "too" large`)))
	// Output:
	// {"error":{"message":"the body is \"too\" large","type":"recourse_error","param":null,"code":"request_too_large"}}
}
