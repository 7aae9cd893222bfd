package main

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/ssestream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/recourse-dev/recourse/event"
	"github.com/recourse-dev/recourse/examples/internal/demo"
	"github.com/recourse-dev/recourse/layer"
	"github.com/recourse-dev/recourse/recoursetest"
)

// Streaming through openai-go v3 with the chain as its transport (SPEC R13).
// openai-go asks for a stream by adding "stream": true to the body, so the
// chain hands the SDK a recovering body: a stream that fails before any
// content, reasoning or tool fragment is resumed from a new attempt behind
// the SDK's back (the SDK reads one body, no byte twice); a stream that fails
// after content, or ends without its terminal frame, ends with an in-band
// OpenAI error event carrying the *layer.RecoveryError's safe text, then a
// read error that is that RecoveryError. openai-go turns the error event
// into its own *ssestream.StreamError (it stops there, before the read
// error), so the typed error is reached through a *layer.Call placed in the
// request context.

// streamResult is what one streamed completion gave the caller.
type streamResult struct {
	chunks  int    // chunk events the SDK yielded
	content string // the concatenated content deltas
	err     error  // stream.Err()
	call    *layer.Call
}

// streamOnce runs one Chat.Completions.NewStreaming call with client and
// reads the stream to its end.
func streamOnce(t *testing.T, client openai.Client) streamResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var r streamResult
	r.call = &layer.Call{}
	ctx = layer.WithCall(ctx, r.call)
	st := client.Chat.Completions.NewStreaming(ctx, openai.ChatCompletionNewParams{
		Model:    "gpt-4o-mini",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hello")},
	})
	defer st.Close()
	var b strings.Builder
	for st.Next() {
		r.chunks++
		for _, c := range st.Current().Choices {
			b.WriteString(c.Delta.Content)
		}
	}
	r.content, r.err = b.String(), st.Err()
	return r
}

// streamThroughChain runs one streamed completion through the program's
// client (newClient: the default chain, MaxAttempts 3, SDK retries off).
func streamThroughChain(t *testing.T, srv *recoursetest.Server) (streamResult, *recorder) {
	t.Helper()
	rec := &recorder{}
	client, err := newClient(srv.URL+"/v1/", "sk-test-key", rec.onEvent)
	require.NoError(t, err)
	return streamOnce(t, client), rec
}

// streamPlain runs the same call through openai-go with a plain
// http.Client, for comparison.
func streamPlain(t *testing.T, srv *recoursetest.Server) streamResult {
	t.Helper()
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	return streamOnce(t, openai.NewClient(
		option.WithBaseURL(srv.URL+"/v1/"),
		option.WithAPIKey("sk-test-key"),
		option.WithHTTPClient(&http.Client{Transport: tr}),
		option.WithMaxRetries(0),
	))
}

// assertStreamPOSTs is assertPOSTs for streamed requests: every body asks
// for a stream.
func assertStreamPOSTs(t *testing.T, srv *recoursetest.Server, n int) {
	t.Helper()
	assertPOSTs(t, srv, n)
	for i, r := range srv.Requests() {
		assert.Contains(t, string(r.Body), `"stream":true`, "request %d body", i)
	}
}

// requireInterrupted checks that the SDK failed with its StreamError built
// from the in-band error event, and that the call's typed error has outcome
// interrupted after content was delivered; it returns that error.
func requireInterrupted(t *testing.T, got streamResult) *layer.RecoveryError {
	t.Helper()
	err := got.err
	var serr *ssestream.StreamError
	require.True(t, errors.As(err, &serr), "the in-band error event fails the SDK: errors.As(*ssestream.StreamError) on %T: %v", err, err)
	rerr := got.call.Result.Err
	require.NotNil(t, rerr, "the call's Result holds the typed error")
	assert.Contains(t, serr.Message, rerr.Error(), "the event carries the safe text")
	assert.Equal(t, event.OutcomeInterrupted, rerr.Outcome)
	assert.Equal(t, event.ReasonSemanticOutput, rerr.Failure.Classification.Reason)
	assert.False(t, rerr.Failure.Classification.Eligible)
	assert.True(t, rerr.Failure.Progress.Observed.Any(), "content was observed")
	assert.Equal(t, http.StatusOK, rerr.Failure.HTTPStatus)
	require.Len(t, rerr.History, 1)
	var uerr *url.Error
	assert.False(t, errors.As(err, &uerr), "a body read error is not a *url.Error")
	return rerr
}

// (a) The first attempt sends only an SSE keep-alive comment, then the
// connection drops. Nothing semantic was seen (R13.1), so recourse resends
// on its own (OpenAI needs no admission hook, R8.3) and the SDK reads the
// keep-alive followed by the second attempt's stream: every chunk once,
// Err() nil, 2 POSTs.
func TestStreamKeepaliveThenAbortIsResumed(t *testing.T) {
	srv := start(t,
		recoursetest.SSE(demo.SSEKeepalive).CutEvents(1),
		recoursetest.SSE(recoursetest.OpenAIStream("Hel", "lo")...),
	)

	got, rec := streamThroughChain(t, srv)

	require.NoError(t, got.err)
	assert.Equal(t, "Hello", got.content)
	assert.Equal(t, 5, got.chunks, "role, two content chunks, finish, usage: each once")
	assertStreamPOSTs(t, srv, 2)
	assert.Equal(t, []event.Type{
		event.AttemptStarted, event.AttemptFailed, event.DelayScheduled,
		event.RetryStarted, event.AttemptStarted, event.AttemptSucceeded,
	}, rec.types())
	failed := rec.events[1].Failure
	require.NotNil(t, failed)
	assert.Equal(t, event.CategoryTransport, failed.Category)
	assert.True(t, failed.Classification.Eligible)
	assert.True(t, failed.Progress.HeadersReceived)
	assert.False(t, failed.Progress.Observed.Any(), "only a keep-alive was seen")
}

// The first attempt is cut inside its first content event. recourse hands
// over whole events only, so none of the cut event's bytes reach the SDK:
// the content is seen exactly once, from the second attempt.
func TestStreamCutInsideFirstEventIsResumed(t *testing.T) {
	first := recoursetest.OpenAIStream("Hel")[1]
	srv := start(t,
		recoursetest.SSE(first[:len(first)/2]).CutEvents(1),
		recoursetest.SSE(recoursetest.OpenAIStream("Hel", "lo")...),
	)

	got, rec := streamThroughChain(t, srv)

	require.NoError(t, got.err)
	assert.Equal(t, "Hello", got.content)
	assert.Equal(t, 5, got.chunks, "role, two content chunks, finish, usage")
	assertStreamPOSTs(t, srv, 2)
	assert.Equal(t, event.AttemptSucceeded, rec.types()[len(rec.events)-1])
}

// (b) Content, then the connection drops. The content was delivered, so the
// attempt cannot be replaced (R13.1): the stream ends with our typed error,
// outcome interrupted, after 1 POST; the content was seen once.
func TestStreamContentThenAbortIsInterrupted(t *testing.T) {
	events := recoursetest.OpenAIStream("Hel", "lo")
	srv := start(t,
		recoursetest.SSE(events[:2]...).CutEvents(2), // role chunk, "Hel"
		recoursetest.SSE(events...),                  // must not be fetched
	)

	got, rec := streamThroughChain(t, srv)

	rerr := requireInterrupted(t, got)
	assert.Equal(t, event.CategoryTransport, rerr.Failure.Category)
	assert.Equal(t, "Hel", got.content)
	assert.Equal(t, 2, got.chunks)
	assertStreamPOSTs(t, srv, 1)
	assert.Equal(t, []event.Type{
		event.AttemptStarted, event.AttemptFailed, event.Interrupted,
	}, rec.types())
}

// (c) The handler returns cleanly without "data: [DONE]": a chunked body
// that ends at a clean EOF. Plain openai-go reports success (Err() nil, the
// truncation is silent); through recourse an EOF before the terminal frame
// is an incomplete stream (R13.3), so Err() is the typed interrupted error.
func TestStreamWithoutDoneIsAnError(t *testing.T) {
	events := recoursetest.OpenAIStream("Hel", "lo")
	noDone := recoursetest.SSE(events[:len(events)-1]...) // finish chunk, no [DONE]

	t.Run("plain openai-go", func(t *testing.T) {
		srv := start(t, noDone)
		got := streamPlain(t, srv)
		assert.NoError(t, got.err, "openai-go accepts a stream without [DONE]")
		assert.Equal(t, "Hello", got.content)
		assert.Equal(t, 1, srv.Count())
	})
	t.Run("through recourse", func(t *testing.T) {
		srv := start(t, noDone, recoursetest.SSE(events...))
		got, rec := streamThroughChain(t, srv)
		rerr := requireInterrupted(t, got)
		assert.Equal(t, event.CategoryTransport, rerr.Failure.Category, "an incomplete stream is a transport failure (R13.3)")
		assert.Equal(t, "Hello", got.content, "what arrived was delivered once")
		assertStreamPOSTs(t, srv, 1)
		assert.Equal(t, event.Interrupted, rec.types()[len(rec.events)-1])
	})
}

// (d) An error event in a 200 stream after content. Plain openai-go ends
// with its own *ssestream.StreamError. Through recourse the chain decodes
// the error event, never resends, and hands the event's bytes to the SDK
// before its typed error, so the SDK reports its own StreamError just as
// it would without recourse; the events end with interrupted.
func TestStreamMidStreamErrorEvent(t *testing.T) {
	events := recoursetest.OpenAIStream("Hel", "lo")
	midError := recoursetest.SSE(events[0], events[1],
		sseEvent(recoursetest.OpenAIError("server_error", "server_error", "The model crashed.")))

	t.Run("plain openai-go", func(t *testing.T) {
		srv := start(t, midError)
		got := streamPlain(t, srv)
		var serr *ssestream.StreamError
		require.True(t, errors.As(got.err, &serr), "got %T: %v", got.err, got.err)
		assert.Equal(t, "Hel", got.content)
	})
	t.Run("through recourse", func(t *testing.T) {
		srv := start(t, midError, recoursetest.SSE(events...))
		got, rec := streamThroughChain(t, srv)
		var serr *ssestream.StreamError
		require.True(t, errors.As(got.err, &serr), "the SDK reports the provider's error event itself; got %T: %v", got.err, got.err)
		assert.Equal(t, "Hel", got.content)
		f := rec.events[len(rec.events)-1].Failure
		require.NotNil(t, f)
		assert.Equal(t, event.CategoryProviderResponse, f.Category)
		assert.Equal(t, "server_error", f.ProviderCode)
		assertStreamPOSTs(t, srv, 1)
		assert.Equal(t, event.Interrupted, rec.types()[len(rec.events)-1])
	})
}

// (e) A 429 with Retry-After: 0 before the stream starts is an ordinary
// retry (R5.5): the SDK sees one successful stream, the server 2 POSTs.
func TestStream429ThenStream(t *testing.T) {
	srv := start(t,
		recoursetest.JSON(http.StatusTooManyRequests, recoursetest.OpenAIError("requests", "rate_limit_exceeded", "Rate limit reached"), "Retry-After", "0"),
		recoursetest.SSE(recoursetest.OpenAIStream("Hel", "lo")...),
	)

	got, rec := streamThroughChain(t, srv)

	require.NoError(t, got.err)
	assert.Equal(t, "Hello", got.content)
	assert.Equal(t, 5, got.chunks, "role, two content chunks, finish, usage")
	assertStreamPOSTs(t, srv, 2)
	assert.Equal(t, []event.Type{
		event.AttemptStarted, event.AttemptFailed, event.DelayScheduled,
		event.RetryStarted, event.AttemptStarted, event.AttemptSucceeded,
	}, rec.types())
	failed := rec.events[1].Failure
	require.NotNil(t, failed)
	assert.Equal(t, http.StatusTooManyRequests, failed.HTTPStatus)
	assert.Equal(t, event.RetryAfterSeconds, failed.RetryAfter.Kind)
}

// sseEvent returns one SSE event carrying data.
func sseEvent(data string) string { return "data: " + data + "\n\n" }
