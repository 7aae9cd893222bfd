package client_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/recourse-dev/recourse/chain"
	"github.com/recourse-dev/recourse/chat"
	"github.com/recourse-dev/recourse/client"
	"github.com/recourse-dev/recourse/codecs/openai"
	"github.com/recourse-dev/recourse/layer"
	"github.com/recourse-dev/recourse/layers/retry"
	"github.com/recourse-dev/recourse/recoursetest"
)

// New makes the native typed client: a permanent failure comes back as a
// *layer.RecoveryError with a safe message.
func ExampleNew() {
	srv := recoursetest.NewServer(recoursetest.JSON(400, recoursetest.OpenAIError("invalid_request_error", "invalid_request_error", "bad")))
	defer srv.Close()
	ch, _ := chain.Default(openai.New(), chain.WithPolicy(retry.Policy{MaxAttempts: 3}))
	cl, _ := client.New(srv.URL, ch, client.WithAPIKey("sk-example"))
	_, err := cl.Complete(context.Background(), &chat.Request{
		Model:    "gpt-4o-mini",
		Messages: []chat.Message{{Role: chat.User, Content: "hi"}},
	})
	var re *layer.RecoveryError
	if errors.As(err, &re) {
		fmt.Println(re.Outcome, re.Failure.HTTPStatus, re.Failure.Classification.Reason)
	}
	fmt.Println(err)
	// Output:
	// interrupted 400 permanent
	// recourse: the provider answered HTTP 400 (invalid_request_error), a permanent failure: not retried (wire attempt 1)
}
