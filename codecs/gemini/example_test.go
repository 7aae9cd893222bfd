package gemini_test

import (
	"fmt"
	"net/url"

	"github.com/recourse-dev/recourse/chat"
	"github.com/recourse-dev/recourse/codec"
	"github.com/recourse-dev/recourse/codecs/gemini"
)

func ExampleNew() {
	c := gemini.New()
	temperature := 0.2
	body, err := c.Encode(&chat.Request{
		Model: "gemini-2.5-flash",
		Messages: []chat.Message{
			{Role: chat.System, Content: "Answer briefly."},
			{Role: chat.User, Content: "Why is the sky blue?"},
		},
		Options: chat.Options{Temperature: &temperature},
		Stream:  true,
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	path := c.RoutePath("gemini-2.5-flash", codec.Streaming)
	u, _ := url.Parse("https://generativelanguage.googleapis.com" + path)
	info, _ := codec.DescribeRequest(c, u, body)
	fmt.Println("POST", path)
	fmt.Println(string(body))
	fmt.Println(info.Model, info.Operation)
	// Output:
	// POST /v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse
	// {"contents":[{"role":"user","parts":[{"text":"Why is the sky blue?"}]}],"systemInstruction":{"parts":[{"text":"Answer briefly."}]},"generationConfig":{"temperature":0.2}}
	// gemini-2.5-flash streaming
}

// ErrorDocument writes a google.rpc.Status body, the error the Gemini
// clients parse.
func ExampleCodec_ErrorDocument() {
	fmt.Print(string(gemini.New().ErrorDocument("UNAVAILABLE", "recourse: retries exhausted")))
	// Output:
	// {"error":{"message":"recourse: retries exhausted","status":"UNAVAILABLE"}}
}

// BodyHints reads the wait a 429 carries in its body.
func ExampleCodec_BodyHints() {
	h := gemini.New().BodyHints([]byte(`{"error":{"code":429,"status":"RESOURCE_EXHAUSTED","details":[
		{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"58s"}]}}`))
	fmt.Println(h.RetryDelay, h.HasRetryDelay, h.QuotaExhausted)
	// Output:
	// 58s true false
}
