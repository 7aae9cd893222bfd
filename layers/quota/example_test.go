package quota_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/recourse-dev/recourse/chain"
	"github.com/recourse-dev/recourse/chat"
	"github.com/recourse-dev/recourse/client"
	"github.com/recourse-dev/recourse/codecs/openai"
	"github.com/recourse-dev/recourse/layer"
	"github.com/recourse-dev/recourse/layers/quota"
	"github.com/recourse-dev/recourse/layers/retry"
	"github.com/recourse-dev/recourse/recoursetest"
)

// New builds the quota layer; chain.WithPerCall places it in the default
// chain. Here the quota allows one resend per window: the first call's
// resend succeeds (and is refunded), the second call's resend fails (and
// stays counted), so the third call is not retried at all: its error says
// which quota refused.
func ExampleNew() {
	srv := recoursetest.NewServer(
		recoursetest.JSON(503, recoursetest.OpenAIError("server_error", "", "busy")),
		recoursetest.JSON(200, recoursetest.OpenAIChat("hello")),
		recoursetest.JSON(503, recoursetest.OpenAIError("server_error", "", "busy")),
		recoursetest.JSON(503, recoursetest.OpenAIError("server_error", "", "busy")),
		recoursetest.JSON(503, recoursetest.OpenAIError("server_error", "", "busy")),
	)
	defer srv.Close()
	q, err := quota.New(quota.WithFloor(1), quota.WithRatio(0))
	if err != nil {
		panic(err)
	}
	p := retry.Recommended() // four attempts
	p.BaseDelay = new(time.Duration(0))
	ch, _ := chain.Default(openai.New(), chain.WithPolicy(p), chain.WithPerCall(q))
	fmt.Println(ch.Order())
	cl, _ := client.New(srv.URL, ch)
	req := &chat.Request{Model: "gpt-4o-mini", Messages: []chat.Message{{Role: chat.User, Content: "hi"}}}
	for range 3 {
		_, err := cl.Complete(context.Background(), req)
		var re *layer.RecoveryError
		if errors.As(err, &re) {
			fmt.Println(re.Outcome, strings.ReplaceAll(re.Error(), strings.TrimPrefix(srv.URL, "http://"), "HOST"))
			continue
		}
		fmt.Println("ok", err)
	}
	fmt.Println("requests:", srv.Count())
	// Output:
	// quota > retry > capture > progress > redirectguard > sender
	// ok <nil>
	// quota_exhausted recourse: not retried: retry quota for HOST exhausted: 1 resend in the last 60 s; outcome quota_exhausted (HTTP 503, wire attempt 2)
	// quota_exhausted recourse: not retried: retry quota for HOST exhausted: 1 resend in the last 60 s; outcome quota_exhausted (HTTP 503, wire attempt 1)
	// requests: 5
}
