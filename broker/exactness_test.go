package broker_test

// Exactness of the broker's streams: a consumer that stops ranging ends
// the completion's lifecycle like a cancellation (R13.5, amended), and no
// incomplete assistant text is kept (R16.1, R16.2). Self-contained: the
// helpers start with "ex".

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/recourse-dev/recourse/broker"
	"github.com/recourse-dev/recourse/chat"
	"github.com/recourse-dev/recourse/codecs/openai"
	"github.com/recourse-dev/recourse/event"
	"github.com/recourse-dev/recourse/internal/rigtest"
	"github.com/recourse-dev/recourse/layers/retry"
	"github.com/recourse-dev/recourse/recoursetest"
)

// exDelta is one OpenAI chunk carrying content s.
func exDelta(s string) string {
	return `data: {"id":"chatcmpl-ex","object":"chat.completion.chunk","model":"gpt-4o-mini","choices":[{"index":0,"delta":{"content":` +
		quote(s) + `},"finish_reason":null}]}` + "\n\n"
}

// TestR13_5_BrokerConsumerStopEndsLifecycleCancelled: a consumer that
// stops ranging over Broker.GenerateStream or Session.SendStream after the
// first content ends that completion's lifecycle — attempt_failed, then
// exactly one cancelled event — closes the request, sends nothing more and
// keeps no partial assistant text (R13.5, R16.1, R16.2).
func TestR13_5_BrokerConsumerStopEndsLifecycleCancelled(t *testing.T) {
	for _, how := range []string{"generate_stream", "session_send_stream"} {
		t.Run(how, func(t *testing.T) {
			ignore := goleak.IgnoreCurrent()
			r := rigtest.New(t, openai.New(), retry.Policy{MaxAttempts: 3}, recoursetest.SSE(exDelta("Hi"), exDelta("there")).Held())
			b := broker.New(r.Client, broker.WithModel("gpt-4o-mini"), broker.WithContinuation(broker.Continuation{Max: 3}))
			var got []string
			var history []chat.Message
			switch how {
			case "generate_stream":
				history = []chat.Message{{Role: chat.User, Content: "Tell me"}}
				for s, err := range b.GenerateStream(context.Background(), &history) {
					require.NoError(t, err)
					got = append(got, s)
					break
				}
			case "session_send_stream":
				sess := broker.NewSession(b, "")
				for s, err := range sess.SendStream(context.Background(), "Tell me") {
					require.NoError(t, err)
					got = append(got, s)
					break
				}
				history = sess.Messages()
			}
			assert.Equal(t, []string{"Hi"}, got)
			assert.Equal(t, []chat.Message{{Role: chat.User, Content: "Tell me"}}, history, "no partial assistant text")
			select {
			case <-r.Server.Left():
			case <-time.After(10 * time.Second):
				t.Fatal("the server never saw the request close")
			}
			assert.Equal(t, []string{"attempt_started", "attempt_failed", "cancelled"}, r.Rec.Types(),
				"attempt_failed, then exactly one terminal cancelled event")
			evs := r.Rec.Events()
			require.Len(t, evs, 3)
			require.NotNil(t, evs[1].Failure)
			assert.Equal(t, event.CategoryCancellation, evs[1].Failure.Category)
			assert.Equal(t, int64(2), evs[1].Failure.Progress.Delivered.ContentBytes)
			assert.Equal(t, 1, r.Server.Count(), "nothing is resent or continued")
			r.Close()
			goleak.VerifyNone(t, ignore)
		})
	}
}
