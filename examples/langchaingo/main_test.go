package main

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tmc/langchaingo/llms"
	"github.com/tmc/langchaingo/llms/openai"
	"go.uber.org/goleak"

	"github.com/recourse-dev/recourse/event"
	"github.com/recourse-dev/recourse/examples/internal/demo"
	"github.com/recourse-dev/recourse/layer"
	"github.com/recourse-dev/recourse/recoursetest"
)

// TestMain fails the package if a test leaves a goroutine behind. No
// library goroutine needs to be ignored: langchaingo's stream reader
// goroutine ends with the stream, and the loopback servers close their
// connections.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

type recorder struct{ events []event.Event }

func (r *recorder) onEvent(ev event.Event) error {
	r.events = append(r.events, ev)
	return nil
}

func (r *recorder) types() []event.Type {
	var out []event.Type
	for _, ev := range r.events {
		out = append(out, ev.Type)
	}
	return out
}

func start(t *testing.T, script ...recoursetest.Step) *recoursetest.Server {
	t.Helper()
	srv := recoursetest.NewServer(script...)
	t.Cleanup(srv.Close)
	return srv
}

// result is what one GenerateContent call gave the caller.
type result struct {
	resp     *llms.ContentResponse
	streamed string // what the streaming function received, concatenated
	calls    int    // streaming function calls
	err      error
}

// generate runs one GenerateContent call with llm; streaming adds
// llms.WithStreamingFunc. ctx may carry a *layer.Call.
func generate(ctx context.Context, t *testing.T, llm *openai.LLM, streaming bool) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	var r result
	var opts []llms.CallOption
	if streaming {
		opts = append(opts, llms.WithStreamingFunc(func(_ context.Context, chunk []byte) error {
			r.calls++
			r.streamed += string(chunk)
			return nil
		}))
	}
	r.resp, r.err = llm.GenerateContent(ctx, prompt("hello"), opts...)
	return r
}

// throughChain runs one call through the program's LLM (newLLM: the
// default chain, MaxAttempts 3).
func throughChain(t *testing.T, srv *recoursetest.Server, streaming bool) (result, *recorder) {
	t.Helper()
	rec := &recorder{}
	llm, err := newLLM(srv.URL+"/v1", "sk-test-key", "gpt-4o-mini", rec.onEvent)
	require.NoError(t, err)
	return generate(context.Background(), t, llm, streaming), rec
}

// plain runs the same call through langchaingo with a plain http.Client,
// for comparison.
func plain(t *testing.T, srv *recoursetest.Server, streaming bool) result {
	t.Helper()
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	llm, err := openai.New(
		openai.WithHTTPClient(&http.Client{Transport: tr}),
		openai.WithBaseURL(srv.URL+"/v1"),
		openai.WithToken("sk-test-key"),
		openai.WithModel("gpt-4o-mini"),
	)
	require.NoError(t, err)
	return generate(context.Background(), t, llm, streaming)
}

// assertPOSTs checks that srv received exactly n POSTs to the chat
// endpoint, all with the byte-identical body and credential (R2.3).
func assertPOSTs(t *testing.T, srv *recoursetest.Server, n int, streaming bool) {
	t.Helper()
	reqs := srv.Requests()
	require.Len(t, reqs, n, "POSTs that reached the server")
	for i, r := range reqs {
		assert.Equal(t, http.MethodPost, r.Method, "request %d method", i)
		assert.Equal(t, "/v1/chat/completions", r.Path, "request %d path", i)
		assert.Equal(t, "Bearer sk-test-key", r.Header.Get("Authorization"), "request %d credential", i)
		assert.True(t, bytes.Equal(reqs[0].Body, r.Body), "request %d body differs from the first", i)
		assert.Equal(t, streaming, strings.Contains(string(r.Body), `"stream":true`), "request %d body", i)
	}
}

// requireInterrupted checks that err wraps our typed error with outcome
// interrupted and returns it. langchaingo wraps a stream read error as
// "error reading streaming response: %w".
func requireInterrupted(t *testing.T, err error) *layer.RecoveryError {
	t.Helper()
	var rerr *layer.RecoveryError
	require.True(t, errors.As(err, &rerr), "errors.As(*layer.RecoveryError) on %T: %v", err, err)
	assert.Equal(t, event.OutcomeInterrupted, rerr.Outcome)
	assert.Equal(t, event.ReasonSemanticOutput, rerr.Failure.Classification.Reason)
	assert.Equal(t, http.StatusOK, rerr.Failure.HTTPStatus)
	assert.True(t, strings.HasPrefix(err.Error(), "error reading streaming response: recourse: recovery interrupted"), err.Error())
	return rerr
}

// A 503 then a 200 for an ordinary completion: langchaingo sees one
// successful call, the server two POSTs.
func TestGenerate503Then200(t *testing.T) {
	srv := start(t,
		recoursetest.JSON(http.StatusServiceUnavailable, recoursetest.OpenAIError("server_error", "server_error", "overloaded")),
		recoursetest.JSON(http.StatusOK, recoursetest.OpenAIChat("scripted hello")),
	)

	got, rec := throughChain(t, srv, false)

	require.NoError(t, got.err)
	require.Len(t, got.resp.Choices, 1)
	assert.Equal(t, "scripted hello", got.resp.Choices[0].Content)
	assert.Equal(t, "stop", got.resp.Choices[0].StopReason)
	assertPOSTs(t, srv, 2, false)
	assert.Equal(t, []event.Type{
		event.AttemptStarted, event.AttemptFailed, event.DelayScheduled,
		event.RetryStarted, event.AttemptStarted, event.AttemptSucceeded,
	}, rec.types())
}

// A stream whose first attempt sends only a keep-alive and is then cut is
// resumed (R13.1; OpenAI needs no admission hook): the streaming function
// sees the content once, GenerateContent succeeds, 2 POSTs.
func TestStreamKeepaliveThenAbortIsResumed(t *testing.T) {
	srv := start(t,
		recoursetest.SSE(demo.SSEKeepalive).CutEvents(1),
		recoursetest.SSE(recoursetest.OpenAIStream("Hel", "lo")...),
	)

	got, rec := throughChain(t, srv, true)

	require.NoError(t, got.err)
	assert.Equal(t, "Hello", got.streamed)
	assert.Equal(t, "Hello", got.resp.Choices[0].Content)
	assert.Equal(t, "stop", got.resp.Choices[0].StopReason)
	assert.Equal(t, 4, got.calls, "role, two content chunks, finish: each once")
	assertPOSTs(t, srv, 2, true)
	assert.Equal(t, event.AttemptSucceeded, rec.types()[len(rec.events)-1])
}

// A stream that ends cleanly without "data: [DONE]". Plain langchaingo
// returns the truncated answer as a success; through recourse it is an
// incomplete stream (R13.3) and GenerateContent fails with an error that
// wraps the typed interrupted error. 1 POST.
func TestStreamWithoutDoneIsAnError(t *testing.T) {
	events := recoursetest.OpenAIStream("Hel", "lo")
	noDone := recoursetest.SSE(events[:len(events)-1]...)

	t.Run("plain langchaingo", func(t *testing.T) {
		srv := start(t, noDone)
		got := plain(t, srv, true)
		require.NoError(t, got.err, "langchaingo accepts a stream without [DONE]")
		assert.Equal(t, "Hello", got.resp.Choices[0].Content)
	})
	t.Run("through recourse", func(t *testing.T) {
		srv := start(t, noDone, recoursetest.SSE(events...))
		got, rec := throughChain(t, srv, true)
		rerr := requireInterrupted(t, got.err)
		assert.Equal(t, event.CategoryTransport, rerr.Failure.Category)
		assert.Nil(t, got.resp)
		assert.Equal(t, "Hello", got.streamed, "what arrived was streamed once")
		assertPOSTs(t, srv, 1, true)
		assert.Equal(t, event.Interrupted, rec.types()[len(rec.events)-1])
	})
}

// An error event after content in a 200 stream. Plain langchaingo decodes
// it as a chunk without choices, skips it and returns the partial answer
// as a success; through recourse GenerateContent fails with the typed
// interrupted error (category provider_response). 1 POST.
func TestStreamMidStreamErrorIsAnError(t *testing.T) {
	events := recoursetest.OpenAIStream("Hel", "lo")
	midError := recoursetest.SSE(events[0], events[1],
		sseEvent(recoursetest.OpenAIError("server_error", "server_error", "The model crashed.")), recoursetest.StreamDone)

	t.Run("plain langchaingo", func(t *testing.T) {
		srv := start(t, midError)
		got := plain(t, srv, true)
		require.NoError(t, got.err, "langchaingo swallows the error event")
		assert.Equal(t, "Hel", got.resp.Choices[0].Content)
	})
	t.Run("through recourse", func(t *testing.T) {
		srv := start(t, midError, recoursetest.SSE(events...))
		got, rec := throughChain(t, srv, true)
		rerr := requireInterrupted(t, got.err)
		assert.Equal(t, event.CategoryProviderResponse, rerr.Failure.Category)
		assert.Equal(t, "server_error", rerr.Failure.ProviderCode)
		assert.NotContains(t, got.err.Error(), "crashed", "the safe error text holds no body")
		assert.Equal(t, "Hel", got.streamed)
		assertPOSTs(t, srv, 1, true)
		assert.Equal(t, event.Interrupted, rec.types()[len(rec.events)-1])
	})
}

// When recovery gives up on a complete HTTP failure (here three 503s,
// outcome exhausted), the final 503 passes through the chain, so
// langchaingo builds its own plain error from it with the provider's
// message ("API returned unexpected status code: 503: overloaded"),
// instead of the fixed "network error: failed to reach API server" it
// puts in place of a transport error. langchaingo has no error type to
// inspect; the typed error (outcome and history) is in a *layer.Call placed
// in the call's context.
func TestExhaustedKeepsTheProviderMessage(t *testing.T) {
	overloaded := recoursetest.JSON(http.StatusServiceUnavailable, recoursetest.OpenAIError("server_error", "server_error", "overloaded"), "Retry-After", "0")
	srv := start(t, overloaded, overloaded, overloaded)
	llm, err := newLLM(srv.URL+"/v1", "sk-test-key", "gpt-4o-mini", nil)
	require.NoError(t, err)
	var lc layer.Call
	rep := &lc.Result

	got := generate(layer.WithCall(context.Background(), &lc), t, llm, false)

	require.Error(t, got.err)
	assert.Equal(t, "API returned unexpected status code: 503: overloaded", got.err.Error())
	require.NotNil(t, rep.Err, "the call's result holds the typed error")
	assert.Equal(t, event.OutcomeExhausted, rep.Err.Outcome)
	assert.Len(t, rep.Err.History, 3)
	assertPOSTs(t, srv, 3, false)
}

// A permanent 400 passes through the chain (R4.2); langchaingo builds its
// own plain error from the body ("API returned unexpected status code:
// 400: <message>"), with no type to inspect. 1 POST.
func TestBadRequestPassesThrough(t *testing.T) {
	srv := start(t, recoursetest.JSON(http.StatusBadRequest,
		recoursetest.OpenAIError("invalid_request_error", "invalid_value", "bad 'messages'")))

	got, rec := throughChain(t, srv, false)

	require.Error(t, got.err)
	assert.Equal(t, "API returned unexpected status code: 400: bad 'messages'", got.err.Error())
	var rerr *layer.RecoveryError
	assert.False(t, errors.As(got.err, &rerr))
	assertPOSTs(t, srv, 1, false)
	assert.Equal(t, []event.Type{event.AttemptStarted, event.AttemptFailed, event.Interrupted}, rec.types())
}

// Cancelling during the backoff ends recovery at once (R9.1), after one
// POST. langchaingo replaces an error for which errors.Is(err,
// context.Canceled) holds with a fixed "request cancelled": neither
// context.Canceled nor the typed error is reachable from it.
func TestCancelDuringBackoff(t *testing.T) {
	srv := start(t,
		recoursetest.JSON(http.StatusServiceUnavailable, recoursetest.OpenAIError("server_error", "server_error", "overloaded"), "Retry-After", "10"),
		recoursetest.JSON(http.StatusOK, recoursetest.OpenAIChat("must not be fetched")),
	)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	rec := &recorder{}
	llm, err := newLLM(srv.URL+"/v1", "sk-test-key", "gpt-4o-mini", func(ev event.Event) error {
		if ev.Type == event.DelayScheduled {
			cancel() // the caller gives up while recourse waits 10 s
		}
		return rec.onEvent(ev)
	})
	require.NoError(t, err)

	began := time.Now()
	got := generate(ctx, t, llm, false)

	assert.Less(t, time.Since(began), 5*time.Second, "cancellation did not wait for the backoff")
	require.Error(t, got.err)
	assert.Equal(t, "request cancelled", got.err.Error())
	assert.False(t, errors.Is(got.err, context.Canceled))
	assertPOSTs(t, srv, 1, false)
	assert.Equal(t, []event.Type{
		event.AttemptStarted, event.AttemptFailed, event.DelayScheduled, event.Cancelled,
	}, rec.types())
}

// The program itself runs offline by default: a recovered 503 and a
// resumed stream.
func TestRunOffline(t *testing.T) {
	t.Setenv("OPENAI_BASE_URL", "")
	var out bytes.Buffer
	require.NoError(t, run(&out))
	s := out.String()
	assert.Contains(t, s, "event attempt_failed    attempt 1/3  http 503 (transient)")
	assert.Contains(t, s, "answer (finish stop): Hello from the scripted server.")
	assert.Contains(t, s, "event attempt_failed    attempt 1/3  transport 200 (transient)")
	assert.Contains(t, s, "streamed (finish stop): Hello from a resumed stream.")
	assert.NotContains(t, s, "sk-offline-demo", "the key never appears in the output")
}

// sseEvent returns one SSE event carrying data.
func sseEvent(data string) string { return "data: " + data + "\n\n" }
