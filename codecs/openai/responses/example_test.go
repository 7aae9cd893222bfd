package responses_test

import (
	"fmt"

	"github.com/recourse-dev/recourse/chat"
	"github.com/recourse-dev/recourse/codecs/openai/responses"
)

func ExampleNew() {
	codec := responses.New()
	maxTokens := 256
	body, err := codec.Encode(&chat.Request{
		Model: "o4-mini",
		Messages: []chat.Message{
			{Role: chat.System, Content: "Answer in one word."},
			{Role: chat.User, Content: "Capital of Japan?"},
		},
		// A reasoning model takes reasoning.effort (R19.2).
		Options: chat.Options{MaxTokens: &maxTokens, ReasoningEffort: "low"},
		Stream:  true,
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(codec.Path())
	fmt.Println(string(body))
	// Output:
	// /v1/responses
	// {"model":"o4-mini","input":[{"type":"message","role":"system","content":"Answer in one word."},{"type":"message","role":"user","content":"Capital of Japan?"}],"reasoning":{"effort":"low"},"max_output_tokens":256,"stream":true}
}
