package progress_test

import (
	"context"
	"fmt"

	"github.com/recourse-dev/recourse/chain"
	"github.com/recourse-dev/recourse/chat"
	"github.com/recourse-dev/recourse/client"
	"github.com/recourse-dev/recourse/codecs/openai"
	"github.com/recourse-dev/recourse/event"
	"github.com/recourse-dev/recourse/internal/stage/progress"
	"github.com/recourse-dev/recourse/layers/retry"
	"github.com/recourse-dev/recourse/recoursetest"
)

// New counts what each attempt received; events carry the counters.
func ExampleNew() {
	srv := recoursetest.NewServer(recoursetest.JSON(200, recoursetest.OpenAIChat("é🙂")))
	defer srv.Close()
	rl, _ := retry.New(openai.New(), &retry.Policy{OnEvent: func(e event.Event) error {
		if e.Type == event.AttemptSucceeded {
			fmt.Println("content bytes observed:", e.Progress.Observed.ContentBytes, "delivered:", e.Progress.Delivered.ContentBytes)
		}
		return nil
	}})
	ch, _ := chain.New(rl, progress.New())
	cl, _ := client.New(srv.URL, ch)
	_, err := cl.Complete(context.Background(), &chat.Request{Model: "m", Messages: []chat.Message{{Role: chat.User, Content: "hi"}}})
	fmt.Println(err)
	// Output:
	// content bytes observed: 6 delivered: 6
	// <nil>
}
