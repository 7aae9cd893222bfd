package main

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"net/url"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/recourse-dev/recourse/event"
	"github.com/recourse-dev/recourse/layer"
	"github.com/recourse-dev/recourse/layers/retry"
	"github.com/recourse-dev/recourse/recoursetest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// harness is one test's server, client, events and recorded sleeps (the
// policy's Sleep returns at once: no test waits for a backoff).
type harness struct {
	srv    *recoursetest.Server
	client *openai.Client
	events []event.Type
	sleeps []time.Duration
	call   *layer.Call
}

func newHarness(t *testing.T, script ...recoursetest.Step) *harness {
	t.Helper()
	h := &harness{srv: recoursetest.NewServer(script...), call: &layer.Call{}}
	t.Cleanup(h.srv.Close)
	var err error
	h.client, err = newClient(h.srv.URL+"/v1", "sk-test-key", retry.Policy{
		MaxAttempts: 3,
		Jitter:      func() float64 { return 0 },
		Sleep: func(_ context.Context, d time.Duration) error {
			h.sleeps = append(h.sleeps, d)
			return nil
		},
		OnEvent: func(ev event.Event) error { h.events = append(h.events, ev.Type); return nil },
	})
	require.NoError(t, err)
	return h
}

func (h *harness) ctx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(layer.WithCall(context.Background(), h.call), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

var request = openai.ChatCompletionRequest{
	Model:    "gpt-4o-mini",
	Messages: []openai.ChatCompletionMessage{{Role: openai.ChatMessageRoleUser, Content: "hello"}},
}

func (h *harness) complete(t *testing.T) (openai.ChatCompletionResponse, error) {
	return h.client.CreateChatCompletion(h.ctx(t), request)
}

func (h *harness) stream(t *testing.T) (string, error) {
	return stream(h.ctx(t), h.client, request)
}

// assertPOSTs checks n POSTs to the chat endpoint with byte-identical bodies.
func (h *harness) assertPOSTs(t *testing.T, n int) {
	t.Helper()
	reqs := h.srv.Requests()
	require.Len(t, reqs, n, "POSTs that reached the server")
	for i, r := range reqs {
		assert.Equal(t, "/v1/chat/completions", r.Path, "request %d path", i)
		assert.True(t, bytes.Equal(reqs[0].Body, r.Body), "request %d body differs", i)
	}
}

func overloaded(kv ...string) recoursetest.Step {
	return recoursetest.JSON(http.StatusServiceUnavailable, recoursetest.OpenAIError("server_error", "server_error", "overloaded"), kv...)
}

func rateLimited() recoursetest.Step {
	return recoursetest.JSON(http.StatusTooManyRequests, recoursetest.OpenAIError("requests", "rate_limit_exceeded", "Rate limit reached"), "Retry-After", "2")
}

func TestUnary503Then200(t *testing.T) {
	h := newHarness(t, overloaded(), recoursetest.JSON(200, recoursetest.OpenAIChat("scripted hello")))
	resp, err := h.complete(t)
	require.NoError(t, err)
	require.Len(t, resp.Choices, 1)
	assert.Equal(t, "scripted hello", resp.Choices[0].Message.Content)
	h.assertPOSTs(t, 2)
}

func TestUnary429RetryAfter(t *testing.T) {
	h := newHarness(t, rateLimited(), recoursetest.JSON(200, recoursetest.OpenAIChat("scripted hello")))
	resp, err := h.complete(t)
	require.NoError(t, err)
	assert.Equal(t, "scripted hello", resp.Choices[0].Message.Content)
	assert.Equal(t, []time.Duration{2 * time.Second}, h.sleeps, "Retry-After is honoured (R5.5)")
	h.assertPOSTs(t, 2)
}

// Cut before any response byte (the connection drops): nothing reached
// the caller, so the call is resent; one answer, 2 POSTs.
func TestUnaryCutBeforeContentIsRecovered(t *testing.T) {
	h := newHarness(t, recoursetest.Reset(), recoursetest.JSON(200, recoursetest.OpenAIChat("scripted hello")))
	resp, err := h.complete(t)
	require.NoError(t, err)
	assert.Equal(t, "scripted hello", resp.Choices[0].Message.Content)
	h.assertPOSTs(t, 2)
}

// Cut in the middle of a 200 body: the provider ran the inference, so it
// is not resent (partial_response); an error that unwraps to the typed
// error, never a success.
func TestUnaryCutAfterContentIsAnError(t *testing.T) {
	body := recoursetest.OpenAIChat("scripted hello")
	cut := recoursetest.JSON(200, body).Cut(len(body) / 2)
	h := newHarness(t, cut, recoursetest.JSON(200, body))
	_, err := h.complete(t)
	var rerr *layer.RecoveryError
	require.True(t, errors.As(err, &rerr), "errors.As(*layer.RecoveryError) on %T: %v", err, err)
	assert.Equal(t, event.OutcomeInterrupted, rerr.Outcome)
	h.assertPOSTs(t, 1)
}

// A 200 whose body is an error object: plain go-openai would return a
// success with no choices; through recourse it is an error that unwraps to
// the typed error, after one POST.
func TestUnary200WithErrorBodyFailsClosed(t *testing.T) {
	h := newHarness(t, recoursetest.JSON(200, recoursetest.OpenAIError("server_error", "server_error", "The model crashed.")))
	_, err := h.complete(t)
	var rerr *layer.RecoveryError
	require.True(t, errors.As(err, &rerr), "errors.As(*layer.RecoveryError) on %T: %v", err, err)
	assert.Equal(t, event.OutcomeInterrupted, rerr.Outcome)
	assert.Equal(t, event.CategoryProviderResponse, rerr.Failure.Category)
	h.assertPOSTs(t, 1)
}

// Exhausted: go-openai's own *openai.APIError for the final 503 (status,
// code, message) and the typed outcome and history in the call's Result.
func TestUnaryExhausted(t *testing.T) {
	h := newHarness(t, overloaded(), overloaded(), overloaded(), recoursetest.JSON(200, recoursetest.OpenAIChat("never")))
	_, err := h.complete(t)
	var aerr *openai.APIError
	require.True(t, errors.As(err, &aerr), "errors.As(*openai.APIError) on %T: %v", err, err)
	assert.Equal(t, http.StatusServiceUnavailable, aerr.HTTPStatusCode)
	assert.Equal(t, "server_error", aerr.Code)
	assert.Equal(t, "overloaded", aerr.Message)
	require.NotNil(t, h.call.Result.Err)
	assert.Equal(t, event.OutcomeExhausted, h.call.Result.Err.Outcome)
	assert.Len(t, h.call.Result.Err.History, 3)
	h.assertPOSTs(t, 3)
}

// A redirect is never followed (R2.2): an error that unwraps to the typed
// error, the target never contacted.
func TestUnaryRedirectIsRefused(t *testing.T) {
	target := recoursetest.NewServer(recoursetest.JSON(200, recoursetest.OpenAIChat("must not be reached")))
	t.Cleanup(target.Close)
	h := newHarness(t, recoursetest.Redirect(http.StatusTemporaryRedirect, target.URL+"/v1/chat/completions"))
	_, err := h.complete(t)
	var rerr *layer.RecoveryError
	require.True(t, errors.As(err, &rerr), "errors.As(*layer.RecoveryError) on %T: %v", err, err)
	assert.Equal(t, http.StatusTemporaryRedirect, rerr.Failure.HTTPStatus)
	var uerr *url.Error
	assert.True(t, errors.As(err, &uerr))
	assert.Zero(t, target.Count(), "the redirect target was contacted")
	h.assertPOSTs(t, 1)
}

func TestStream503Then200(t *testing.T) {
	h := newHarness(t, overloaded(), recoursetest.SSE(recoursetest.OpenAIStream("Hel", "lo")...))
	text, err := h.stream(t)
	require.NoError(t, err)
	assert.Equal(t, "Hello", text)
	h.assertPOSTs(t, 2)
}

func TestStream429RetryAfter(t *testing.T) {
	h := newHarness(t, rateLimited(), recoursetest.SSE(recoursetest.OpenAIStream("Hel", "lo")...))
	text, err := h.stream(t)
	require.NoError(t, err)
	assert.Equal(t, "Hello", text)
	assert.Equal(t, []time.Duration{2 * time.Second}, h.sleeps)
	h.assertPOSTs(t, 2)
}

// Cut after the role chunk, before any content: resumed from a new attempt,
// the text exactly once.
func TestStreamCutBeforeContentIsRecovered(t *testing.T) {
	events := recoursetest.OpenAIStream("Hel", "lo")
	h := newHarness(t, recoursetest.SSE(events[0]).CutEvents(1), recoursetest.SSE(events...))
	text, err := h.stream(t)
	require.NoError(t, err)
	assert.Equal(t, "Hello", text, "no duplicated text")
	h.assertPOSTs(t, 2)
}

// Cut after content: never a success. go-openai reads the chain's in-band
// error event and returns it as its own *openai.APIError carrying the
// typed error's safe text; the typed error is in the call's Result.
func TestStreamCutAfterContentIsAnError(t *testing.T) {
	events := recoursetest.OpenAIStream("Hel", "lo")
	h := newHarness(t, recoursetest.SSE(events[:2]...).CutEvents(2), recoursetest.SSE(events...))
	text, err := h.stream(t)
	require.Error(t, err)
	assert.Equal(t, "Hel", text)
	rerr := h.call.Result.Err
	require.NotNil(t, rerr)
	assert.Equal(t, event.OutcomeInterrupted, rerr.Outcome)
	var aerr *openai.APIError
	require.True(t, errors.As(err, &aerr), "errors.As(*openai.APIError) on %T: %v", err, err)
	assert.Equal(t, "recourse_error", aerr.Type)
	assert.Equal(t, rerr.Error(), aerr.Message, "only the safe text")
	h.assertPOSTs(t, 1)
}

// A 200 stream whose only event is an error object: go-openai reports the
// provider's own error (the event is handed over), never a success.
func TestStream200WithErrorEventIsAnError(t *testing.T) {
	h := newHarness(t, recoursetest.SSE("data: "+recoursetest.OpenAIError("server_error", "server_error", "The model crashed.")+"\n\n"))
	_, err := h.stream(t)
	var aerr *openai.APIError
	require.True(t, errors.As(err, &aerr), "errors.As(*openai.APIError) on %T: %v", err, err)
	assert.Equal(t, "The model crashed.", aerr.Message)
	require.NotNil(t, h.call.Result.Err)
	h.assertPOSTs(t, 1)
}

// A 200 stream answered with a JSON error body (not SSE): an error.
func TestStream200WithErrorBodyIsAnError(t *testing.T) {
	h := newHarness(t, recoursetest.JSON(200, recoursetest.OpenAIError("server_error", "server_error", "The model crashed.")))
	_, err := h.stream(t)
	require.Error(t, err)
	require.NotNil(t, h.call.Result.Err)
}

func TestStreamExhausted(t *testing.T) {
	h := newHarness(t, overloaded(), overloaded(), overloaded())
	_, err := h.stream(t)
	var aerr *openai.APIError
	require.True(t, errors.As(err, &aerr), "errors.As(*openai.APIError) on %T: %v", err, err)
	assert.Equal(t, http.StatusServiceUnavailable, aerr.HTTPStatusCode)
	assert.Equal(t, "overloaded", aerr.Message)
	require.NotNil(t, h.call.Result.Err)
	assert.Equal(t, event.OutcomeExhausted, h.call.Result.Err.Outcome)
	h.assertPOSTs(t, 3)
}

func TestStreamRedirectIsRefused(t *testing.T) {
	target := recoursetest.NewServer(recoursetest.SSE(recoursetest.OpenAIStream("never")...))
	t.Cleanup(target.Close)
	h := newHarness(t, recoursetest.Redirect(http.StatusTemporaryRedirect, target.URL+"/v1/chat/completions"))
	_, err := h.stream(t)
	var rerr *layer.RecoveryError
	require.True(t, errors.As(err, &rerr), "errors.As(*layer.RecoveryError) on %T: %v", err, err)
	assert.Zero(t, target.Count())
	h.assertPOSTs(t, 1)
}

func TestRunOffline(t *testing.T) {
	t.Setenv("OPENAI_BASE_URL", "")
	var out bytes.Buffer
	require.NoError(t, run(&out))
	assert.Contains(t, out.String(), "answer: Hello from the scripted server.")
	assert.Contains(t, out.String(), "streamed: Hello again.")
	assert.NotContains(t, out.String(), "sk-offline-demo")
}

// R9.1: cancelling the caller's context in the middle of go-openai's
// stream makes Recv return the context's error, as without recourse, not
// an *openai.APIError built from an in-band frame; errors.As still finds
// the *layer.RecoveryError.
func TestR9_1_GoOpenAIStreamCancelledByTheCaller(t *testing.T) {
	h := newHarness(t, recoursetest.SSE(recoursetest.OpenAIStream("Hel", "lo")[:2]...).Held())
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	st, err := h.client.CreateChatCompletionStream(ctx, request)
	require.NoError(t, err)
	defer st.Close()
	for {
		r, rerr := st.Recv()
		if rerr != nil {
			err = rerr
			break
		}
		if len(r.Choices) > 0 && r.Choices[0].Delta.Content != "" {
			cancel()
		}
	}
	assert.ErrorIs(t, err, context.Canceled)
	var aerr *openai.APIError
	assert.False(t, errors.As(err, &aerr), "no in-band frame: %v", err)
	var re *layer.RecoveryError
	require.ErrorAs(t, err, &re)
	assert.Equal(t, event.OutcomeCancelled, re.Outcome)
}
