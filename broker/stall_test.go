package broker_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/recourse-dev/recourse/broker"
	"github.com/recourse-dev/recourse/chain"
	"github.com/recourse-dev/recourse/chat"
	"github.com/recourse-dev/recourse/codecs/openai"
	"github.com/recourse-dev/recourse/event"
	"github.com/recourse-dev/recourse/internal/rigtest"
	"github.com/recourse-dev/recourse/layer"
	"github.com/recourse-dev/recourse/layers/retry"
	"github.com/recourse-dev/recourse/recoursetest"
)

// stallAtCut is a per-attempt layer that stands in for a stall limit
// (package layers/stall, tested there with held connections) firing exactly
// where a scripted stream is cut: the read error there becomes the
// vocabulary's StallError, as the stall layer returns it.
func stallAtCut(limit event.StallLimit) chain.Option {
	return chain.WithPerAttempt(layer.NewPerAttempt("stall", func(next http.RoundTripper) http.RoundTripper {
		return layer.RoundTripperFunc(func(req *http.Request) (*http.Response, error) {
			resp, err := next.RoundTrip(req)
			if err != nil {
				return nil, err
			}
			resp.Body = &stallBody{ReadCloser: resp.Body, limit: limit}
			return resp, nil
		})
	}))
}

type stallBody struct {
	io.ReadCloser
	limit event.StallLimit
}

func (b *stallBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if errors.Is(err, io.ErrUnexpectedEOF) {
		err = &layer.StallError{Limit: b.limit, After: time.Minute}
	}
	return n, err
}

// R17.1, R17.2: a stall before any output is retried, and the retry notice
// names the limit.
func TestR17_2_RetryNoticeNamesTheStallLimit(t *testing.T) {
	r := rigtest.NewWith(t, openai.New(), retry.Policy{}, []chain.Option{stallAtCut(event.StallIdle)},
		broken(": keep-alive\n\n"), recoursetest.SSE(recoursetest.OpenAIStream("Hi.")...))
	ns := &notices{}
	b := broker.New(r.Client, broker.WithModel(model), broker.WithNotices(ns.add),
		broker.WithPolicy(wire(r, retry.Policy{MaxAttempts: 2, BaseDelay: new(time.Second), Jitter: jitter(1)})))
	h := user("q")
	text, err := drain(b.GenerateStream(context.Background(), &h))
	require.NoError(t, err)
	assert.Equal(t, "Hi.", text)
	require.Len(t, ns.retries(), 1)
	n := ns.retries()[0]
	assert.Equal(t, "idle timeout", n.Error)
	assert.Equal(t, "retrying LLM request after idle timeout (attempt 2/2 in 1.0s)", broker.FormatRetry(n))
	var s broker.Status
	s.Apply(broker.Notice{Event: broker.EventRetry, Retry: &n})
	line := s.Line()
	assert.Equal(t, "retrying LLM request after idle timeout (attempt 2/2 in 1.0s)", line)
}

// R17.3: a stall after output interrupts the stream; the broker's
// continuation commits the closed blocks and announces the limit.
func TestR17_3_ContinuationAfterAStallCommitsTheClosedBlocks(t *testing.T) {
	r := rigtest.NewWith(t, openai.New(), retry.Policy{}, []chain.Option{stallAtCut(event.StallIdle)},
		broken(textDelta("Let me look "), textDelta("that up. "), toolStart("call_1", "lookup"), toolArgs(`{"city":"Par`)),
		recoursetest.SSE(recoursetest.OpenAIStream("It is ", "sunny.")...))
	tl, ns := &toolLog{}, &notices{}
	b := broker.New(r.Client, broker.WithModel(model), broker.WithTools(lookup(tl)), broker.WithNotices(ns.add),
		broker.WithContinuation(broker.Continuation{Max: 3}),
		broker.WithPolicy(wire(r, retry.Policy{BaseDelay: new(100 * time.Millisecond), Jitter: jitter(1)})))
	h := user("Weather in Paris?")
	text, err := drain(b.GenerateStream(context.Background(), &h))
	require.NoError(t, err)
	assert.Equal(t, "Let me look that up. It is sunny.", text)
	assert.Empty(t, tl.runs())
	assert.Equal(t, []chat.Message{
		{Role: chat.User, Content: "Weather in Paris?"},
		{Role: chat.Assistant, Content: "Let me look that up. "},
		{Role: chat.Assistant, Content: "It is sunny."},
	}, h)
	require.Len(t, ns.continuations(), 1)
	assert.Equal(t, "LLM stream interrupted; continuing generation (1/3): idle timeout", broker.FormatContinuation(ns.continuations()[0]))
	interrupted := rigtest.EventsOf(r.Rec.Events(), event.Interrupted)
	require.Len(t, interrupted, 1)
	assert.Equal(t, event.StallIdle, interrupted[0].Failure.Stall)
	assert.Equal(t, event.ReasonSemanticOutput, interrupted[0].Failure.Classification.Reason)
}
