package capture_test

import (
	"context"
	"fmt"

	"github.com/recourse-dev/recourse/chain"
	"github.com/recourse-dev/recourse/chat"
	"github.com/recourse-dev/recourse/client"
	"github.com/recourse-dev/recourse/codecs/openai"
	"github.com/recourse-dev/recourse/internal/stage/capture"
	"github.com/recourse-dev/recourse/layer"
	"github.com/recourse-dev/recourse/layers/retry"
	"github.com/recourse-dev/recourse/recoursetest"
)

// New is the sensitive tap: the policy's OnWire hook receives one request
// and one response snapshot per attempt of an ordinary call.
func ExampleNew() {
	srv := recoursetest.NewServer(recoursetest.JSON(200, recoursetest.OpenAIChat("hi")))
	defer srv.Close()
	onWire := func(_ context.Context, s layer.WireSnapshot) error {
		fmt.Println(s.Direction, s.WireAttempt, s.Status, s.Complete)
		return nil
	}
	rl, _ := retry.New(openai.New(), &retry.Policy{OnWire: onWire})
	ch, _ := chain.New(rl, capture.New())
	cl, _ := client.New(srv.URL, ch)
	_, err := cl.Complete(context.Background(), &chat.Request{Model: "m", Messages: []chat.Message{{Role: chat.User, Content: "hi"}}})
	fmt.Println(err)
	// Output:
	// request 1 0 true
	// response 1 200 true
	// <nil>
}
