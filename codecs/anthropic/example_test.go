package anthropic_test

import (
	"errors"
	"fmt"

	"github.com/recourse-dev/recourse/chat"
	"github.com/recourse-dev/recourse/codec"
	"github.com/recourse-dev/recourse/codecs/anthropic"
)

func ExampleNew() {
	c := anthropic.New(anthropic.WithDefaultMaxTokens(1024))
	body, err := c.Encode(&chat.Request{
		Model:    "claude-sonnet-4-5",
		Messages: []chat.Message{{Role: chat.System, Content: "Be brief."}, {Role: chat.User, Content: "Hi"}},
	})
	fmt.Println(string(body), err)
	fmt.Println(c.Path(), c.Facts().OverloadStatus)
	// Output:
	// {"model":"claude-sonnet-4-5","max_tokens":1024,"system":[{"type":"text","text":"Be brief."}],"messages":[{"role":"user","content":[{"type":"text","text":"Hi"}]}]} <nil>
	// /v1/messages 529
}

func ExampleNewStreamDecoder() {
	d := anthropic.NewStreamDecoder(codec.RequestInfo{Model: "claude-sonnet-4-5", Operation: codec.Streaming})
	d.Write([]byte("event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"model\":\"claude-sonnet-4-5\",\"usage\":{\"input_tokens\":12}}}\n\n"))
	fmt.Println("after message_start, output:", d.Observed().Any())
	d.Write([]byte("event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n"))
	for f, ok := d.Next(); ok; f, ok = d.Next() {
		var pe *codec.ProviderError
		if errors.As(f.Err, &pe) {
			fmt.Println("in-band", pe.Code, "stands for", pe.Status)
		}
	}
	// Output:
	// after message_start, output: false
	// in-band overloaded_error stands for 529
}
