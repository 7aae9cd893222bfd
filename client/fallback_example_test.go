package client_test

import (
	"context"
	"fmt"

	"github.com/recourse-dev/recourse/chain"
	"github.com/recourse-dev/recourse/chat"
	"github.com/recourse-dev/recourse/client"
	"github.com/recourse-dev/recourse/codecs/ollama"
	"github.com/recourse-dev/recourse/codecs/openai"
	"github.com/recourse-dev/recourse/layers/fallback"
	"github.com/recourse-dev/recourse/recoursetest"
)

// WithFallback gives the native client targets of any codec: here a
// hosted OpenAI model that is overloaded, then a local Ollama model. The
// neutral request is encoded anew for Ollama.
func ExampleWithFallback() {
	hosted := recoursetest.NewServer(recoursetest.JSON(503, recoursetest.OpenAIError("server_error", "", "overloaded")))
	defer hosted.Close()
	local := recoursetest.NewServer(recoursetest.JSON(200, recoursetest.OllamaChat("hello from llama")))
	defer local.Close()
	lch, _ := chain.Default(ollama.New())
	llama, _ := client.New(local.URL, lch)
	och, _ := chain.Default(openai.New())
	cl, _ := client.New(hosted.URL, och, client.WithAPIKey("sk-…"),
		client.WithFallback(fallback.Rules{}, client.FallbackTarget{Client: llama, Model: "llama3.2"}))
	comp, err := cl.Complete(context.Background(), &chat.Request{Model: "gpt-4o",
		Messages: []chat.Message{{Role: chat.User, Content: "hi"}}})
	fmt.Println(comp.Message.Content, err)
	fmt.Println(local.Requests()[0].Path)
	// Output:
	// hello from llama <nil>
	// /api/chat
}
