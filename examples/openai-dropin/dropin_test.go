package main

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/recourse-dev/recourse/chain"
	openaicodec "github.com/recourse-dev/recourse/codecs/openai"
	"github.com/recourse-dev/recourse/event"
	"github.com/recourse-dev/recourse/layer"
	"github.com/recourse-dev/recourse/layers/retry"
	"github.com/recourse-dev/recourse/recoursetest"
)

// TestMain fails the package if a test leaves a goroutine behind. No
// library goroutine needs to be ignored: the loopback servers close their
// connections, which ends the transport's keep-alive goroutines.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// recorder collects the lifecycle events of one test. OnEvent is called
// synchronously on the caller's goroutine, so no lock is needed.
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

// start starts a scripted loopback server that is closed when the test ends.
func start(t *testing.T, script ...recoursetest.Step) *recoursetest.Server {
	t.Helper()
	srv := recoursetest.NewServer(script...)
	t.Cleanup(srv.Close)
	return srv
}

// callOnce builds the program's client (newClient) for srv and runs exactly
// one Chat.Completions.New call.
func callOnce(t *testing.T, srv *recoursetest.Server) (*openai.ChatCompletion, *recorder, error) {
	t.Helper()
	rec := &recorder{}
	client, err := newClient(srv.URL+"/v1/", "sk-test-key", rec.onEvent)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	comp, err := client.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{
		Model:    "gpt-4o-mini",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hello")},
	})
	return comp, rec, err
}

// assertPOSTs checks that srv received exactly n POSTs to the chat endpoint,
// all with the byte-identical body and credential (R2.3).
func assertPOSTs(t *testing.T, srv *recoursetest.Server, n int) {
	t.Helper()
	reqs := srv.Requests()
	require.Len(t, reqs, n, "POSTs that reached the server")
	for i, r := range reqs {
		assert.Equal(t, http.MethodPost, r.Method, "request %d method", i)
		assert.Equal(t, "/v1/chat/completions", r.Path, "request %d path", i)
		assert.Equal(t, "Bearer sk-test-key", r.Header.Get("Authorization"), "request %d credential", i)
		assert.True(t, bytes.Equal(reqs[0].Body, r.Body), "request %d body differs from the first", i)
	}
}

// A 503 then a 200: the SDK sees one successful call, the server two POSTs
// (R2.1, R2.5), and the events tell the story in order (R6.2, R11).
func TestDropIn503Then200(t *testing.T) {
	srv := start(t,
		recoursetest.JSON(http.StatusServiceUnavailable, recoursetest.OpenAIError("server_error", "server_error", "overloaded")),
		recoursetest.JSON(http.StatusOK, recoursetest.OpenAIChat("scripted hello")),
	)

	comp, rec, err := callOnce(t, srv)

	require.NoError(t, err)
	require.Len(t, comp.Choices, 1)
	assert.Equal(t, "scripted hello", comp.Choices[0].Message.Content)
	assert.Equal(t, "stop", comp.Choices[0].FinishReason)
	assert.Equal(t, "gpt-4o-mini-2024-07-18", comp.Model)
	assertPOSTs(t, srv, 2)

	assert.Equal(t, []event.Type{
		event.AttemptStarted, event.AttemptFailed, event.DelayScheduled,
		event.RetryStarted, event.AttemptStarted, event.AttemptSucceeded,
	}, rec.types())
	failed := rec.events[1]
	require.NotNil(t, failed.Failure)
	assert.Equal(t, 503, failed.Failure.HTTPStatus)
	assert.Equal(t, event.CategoryHTTP, failed.Failure.Category)
	assert.True(t, failed.Failure.Classification.Eligible)
	assert.Equal(t, "server_error", failed.Failure.ProviderCode)
	assert.Equal(t, 2, rec.events[2].NextAttempt, "delay_scheduled is about attempt 2")
	// One logical request, two wire attempts with their own attempt IDs.
	first, second := rec.events[0], rec.events[4]
	assert.Equal(t, first.LogicalID, rec.events[5].LogicalID)
	assert.Equal(t, first.LogicalID, second.LogicalID)
	assert.NotEqual(t, first.AttemptID, second.AttemptID)
	assert.Equal(t, []int{1, 2}, []int{first.WireAttempt, second.WireAttempt})
}

// A 307 is a failure that nothing follows (R2.2): the SDK gets an error that
// wraps our *layer.RecoveryError (outcome interrupted, status 307) and the
// Location is never contacted.
func TestDropInRedirectIsRefused(t *testing.T) {
	target := start(t, recoursetest.JSON(http.StatusOK, recoursetest.OpenAIChat("must not be reached")))
	srv := start(t, recoursetest.Redirect(http.StatusTemporaryRedirect, target.URL+"/v1/chat/completions"))

	comp, rec, err := callOnce(t, srv)

	require.Error(t, err)
	assert.Nil(t, comp)
	var rerr *layer.RecoveryError
	require.True(t, errors.As(err, &rerr), "errors.As(*layer.RecoveryError) on %T: %v", err, err)
	assert.Equal(t, event.OutcomeInterrupted, rerr.Outcome)
	assert.Equal(t, http.StatusTemporaryRedirect, rerr.Failure.HTTPStatus)
	assert.Equal(t, event.CategoryHTTP, rerr.Failure.Category)
	assert.False(t, rerr.Failure.Classification.Eligible)
	assert.Len(t, rerr.History, 1)
	// openai-go returns the transport error as it got it from http.Client: a
	// *url.Error around the chain's error.
	var uerr *url.Error
	assert.True(t, errors.As(err, &uerr), "a *url.Error, got %T", err)
	assert.NotContains(t, err.Error(), target.URL, "the safe error text names no Location")

	assertPOSTs(t, srv, 1)
	assert.Equal(t, 0, target.Count(), "the redirect target was contacted")
	assert.Equal(t, []event.Type{event.AttemptStarted, event.AttemptFailed, event.Interrupted}, rec.types())
}

// A 400 is permanent (R4.2): the complete response passes through the chain
// unchanged, so the SDK builds its own *openai.Error from it, after exactly
// one POST.
func TestDropInBadRequestPassesThrough(t *testing.T) {
	srv := start(t, recoursetest.JSON(http.StatusBadRequest,
		recoursetest.OpenAIError("invalid_request_error", "invalid_value", "bad 'messages'")))

	comp, rec, err := callOnce(t, srv)

	require.Error(t, err)
	assert.Nil(t, comp)
	var aerr *openai.Error
	require.True(t, errors.As(err, &aerr), "errors.As(*openai.Error) on %T: %v", err, err)
	assert.Equal(t, http.StatusBadRequest, aerr.StatusCode)
	assert.Equal(t, "invalid_request_error", aerr.Type)
	assert.Equal(t, "invalid_value", aerr.Code)
	assert.Equal(t, "bad 'messages'", aerr.Message)
	var rerr *layer.RecoveryError
	assert.False(t, errors.As(err, &rerr), "a passed-through 400 is not a RecoveryError")

	assertPOSTs(t, srv, 1)
	assert.Equal(t, []event.Type{event.AttemptStarted, event.AttemptFailed, event.Interrupted}, rec.types())
	require.NotNil(t, rec.events[1].Failure)
	assert.Equal(t, event.ReasonPermanent, rec.events[1].Failure.Classification.Reason)
}

// The program itself runs offline by default and recovers the scripted 503.
func TestRunOffline(t *testing.T) {
	t.Setenv("OPENAI_BASE_URL", "")
	var out bytes.Buffer
	require.NoError(t, run(&out))
	s := out.String()
	assert.Contains(t, s, "event attempt_failed    attempt 1/3  http 503 (transient)")
	assert.Contains(t, s, "event attempt_succeeded attempt 2/3")
	assert.Contains(t, s, "answer (gpt-4o-mini-2024-07-18, finish stop): Hello from the scripted server.")
	assert.NotContains(t, s, "sk-offline-demo", "the key never appears in the output")
}

// Cancelling the caller's context during the backoff ends recovery at once
// with outcome cancelled (R9.1), after one POST. openai-go checks the
// context itself after the transport returns and then returns ctx.Err()
// instead of the transport's error: the caller sees context.Canceled and
// cannot reach the *layer.RecoveryError (the events still tell the story).
func TestDropInCancelDuringBackoff(t *testing.T) {
	srv := start(t,
		recoursetest.JSON(http.StatusServiceUnavailable, recoursetest.OpenAIError("server_error", "server_error", "overloaded"), "Retry-After", "10"),
		recoursetest.JSON(http.StatusOK, recoursetest.OpenAIChat("must not be fetched")),
	)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	rec := &recorder{}
	client, err := newClient(srv.URL+"/v1/", "sk-test-key", func(ev event.Event) error {
		if ev.Type == event.DelayScheduled {
			cancel() // the caller gives up while recourse waits 10 s
		}
		return rec.onEvent(ev)
	})
	require.NoError(t, err)

	began := time.Now()
	_, err = client.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{
		Model:    "gpt-4o-mini",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hello")},
	})

	assert.Less(t, time.Since(began), 5*time.Second, "cancellation did not wait for the backoff")
	require.ErrorIs(t, err, context.Canceled)
	var rerr *layer.RecoveryError
	assert.False(t, errors.As(err, &rerr), "openai-go returns ctx.Err(), not the transport error")
	assertPOSTs(t, srv, 1)
	assert.Equal(t, []event.Type{
		event.AttemptStarted, event.AttemptFailed, event.DelayScheduled, event.Cancelled,
	}, rec.types())
	assert.Equal(t, 10*time.Second, rec.events[2].Delay, "Retry-After is a minimum (R5.5)")
}

// Three 503s exhaust MaxAttempts: three POSTs, then the final 503 passes
// through (X-Should-Retry: false, X-Recourse-Outcome: exhausted), so the
// SDK builds its own *openai.Error (status, code, message) and does not
// retry on top; the typed error (outcome exhausted, the last failure and
// the full history) is in the layer.Call placed in the request context.
func TestDropInExhausted(t *testing.T) {
	overloaded := recoursetest.JSON(http.StatusServiceUnavailable, recoursetest.OpenAIError("server_error", "server_error", "overloaded"), "Retry-After", "0")
	srv := start(t, overloaded, overloaded, overloaded, recoursetest.JSON(http.StatusOK, recoursetest.OpenAIChat("must not be fetched")))
	rec := &recorder{}
	client, err := newClient(srv.URL+"/v1/", "sk-test-key", rec.onEvent)
	require.NoError(t, err)
	var lc layer.Call
	ctx, cancel := context.WithTimeout(layer.WithCall(context.Background(), &lc), 10*time.Second)
	defer cancel()

	_, err = client.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{
		Model:    "gpt-4o-mini",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hello")},
	})

	var aerr *openai.Error
	require.True(t, errors.As(err, &aerr), "errors.As(*openai.Error) on %T: %v", err, err)
	assert.Equal(t, 503, aerr.StatusCode)
	assert.Equal(t, "server_error", aerr.Code)
	assert.Equal(t, "overloaded", aerr.Message)
	assert.Equal(t, "exhausted", aerr.Response.Header.Get("X-Recourse-Outcome"))
	assert.Equal(t, "false", aerr.Response.Header.Get("X-Should-Retry"))
	rerr := lc.Result.Err
	require.NotNil(t, rerr, "the typed error is in the call's Result")
	assert.Equal(t, event.OutcomeExhausted, rerr.Outcome)
	assert.Equal(t, 503, rerr.Failure.HTTPStatus)
	assert.Equal(t, 3, rerr.Failure.WireAttempt)
	require.Len(t, rerr.History, 3)
	assert.Equal(t, rerr.Failure.AttemptID, rerr.History[2].AttemptID, "the final failure is the last history entry")
	assertPOSTs(t, srv, 3)
	assert.Equal(t, event.Exhausted, rec.types()[len(rec.events)-1])
}

// The SDK's own retry loop left on (its default, 2 retries): the
// passed-through final 503 carries X-Should-Retry: false, so openai-go does
// not retry on top of recourse. Three POSTs, not nine.
func TestDropInExhaustedSDKDoesNotRetryOnTop(t *testing.T) {
	overloaded := recoursetest.JSON(http.StatusServiceUnavailable, recoursetest.OpenAIError("server_error", "server_error", "overloaded"), "Retry-After", "0")
	srv := start(t, overloaded, overloaded, overloaded, overloaded, overloaded, overloaded)
	ch, err := chain.Default(openaicodec.New(), chain.WithPolicy(retry.Policy{MaxAttempts: 3, Jitter: func() float64 { return 0 }}))
	require.NoError(t, err)
	client := openai.NewClient(option.WithBaseURL(srv.URL+"/v1/"), option.WithAPIKey("sk-test-key"),
		option.WithHTTPClient(&http.Client{Transport: ch}))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	_, err = client.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{
		Model:    "gpt-4o-mini",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hello")},
	})

	var aerr *openai.Error
	require.True(t, errors.As(err, &aerr), "errors.As(*openai.Error) on %T: %v", err, err)
	assert.Equal(t, 3, srv.Count(), "the SDK honoured X-Should-Retry: false")
}
