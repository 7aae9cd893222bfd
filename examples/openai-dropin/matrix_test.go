package main

import (
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

	"github.com/recourse-dev/recourse/chain"
	openaicodec "github.com/recourse-dev/recourse/codecs/openai"
	"github.com/recourse-dev/recourse/event"
	"github.com/recourse-dev/recourse/layer"
	"github.com/recourse-dev/recourse/layers/retry"
	"github.com/recourse-dev/recourse/recoursetest"
)

// The drop-in matrix for openai-go: every scenario in both modes, and the
// test that covers it (this file or dropin_test.go / stream_test.go).
//
//	scenario              unary                                  stream
//	503 → 200             TestDropIn503Then200                   TestMatrixStream503Then200
//	429 + Retry-After     TestMatrixUnary429RetryAfter           TestStream429ThenStream, TestMatrixStream429RetryAfter
//	cut before content    TestMatrixUnaryCutBeforeContent        TestStreamKeepaliveThenAbortIsResumed, TestStreamCutInsideFirstEventIsResumed
//	cut after content     TestMatrixUnaryCutAfterContent         TestStreamContentThenAbortIsInterrupted
//	200 with error body   TestMatrixUnary200WithErrorBody        TestMatrixStream200WithErrorBody, TestStreamMidStreamErrorEvent
//	exhausted             TestDropInExhausted                    TestMatrixStreamExhausted
//	redirect              TestDropInRedirectIsRefused            TestMatrixStreamRedirectIsRefused
//
// A unary "cut after content" is a 200 whose body is cut part-way: the
// provider ran the inference, so it is never resent (partial_response).

// matrix is one test's server, client, layer.Call and recorded sleeps: the
// policy's Sleep returns at once, so no test waits for a backoff.
type matrix struct {
	srv    *recoursetest.Server
	client openai.Client
	rec    *recorder
	sleeps []time.Duration
	call   *layer.Call
}

func newMatrix(t *testing.T, script ...recoursetest.Step) *matrix {
	t.Helper()
	m := &matrix{srv: start(t, script...), rec: &recorder{}, call: &layer.Call{}}
	ch, err := chain.Default(openaicodec.New(), chain.WithPolicy(retry.Policy{
		MaxAttempts: 3,
		Jitter:      func() float64 { return 0 },
		Sleep: func(_ context.Context, d time.Duration) error {
			m.sleeps = append(m.sleeps, d)
			return nil
		},
		OnEvent: m.rec.onEvent,
	}))
	require.NoError(t, err)
	m.client = openai.NewClient(
		option.WithBaseURL(m.srv.URL+"/v1/"),
		option.WithAPIKey("sk-test-key"),
		option.WithHTTPClient(&http.Client{Transport: ch}),
		option.WithMaxRetries(0),
	)
	return m
}

func (m *matrix) ctx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(layer.WithCall(context.Background(), m.call), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func (m *matrix) complete(t *testing.T) (*openai.ChatCompletion, error) {
	return m.client.Chat.Completions.New(m.ctx(t), openai.ChatCompletionNewParams{
		Model:    "gpt-4o-mini",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hello")},
	})
}

// stream reads one streamed completion to its end; the Call is m.call.
func (m *matrix) stream(t *testing.T) streamResult {
	t.Helper()
	got := streamOnce(t, m.client)
	m.call = got.call
	return got
}

func overloaded() recoursetest.Step {
	return recoursetest.JSON(http.StatusServiceUnavailable, recoursetest.OpenAIError("server_error", "server_error", "overloaded"))
}

func rateLimited() recoursetest.Step {
	return recoursetest.JSON(http.StatusTooManyRequests, recoursetest.OpenAIError("requests", "rate_limit_exceeded", "Rate limit reached"), "Retry-After", "2")
}

func TestMatrixUnary429RetryAfter(t *testing.T) {
	m := newMatrix(t, rateLimited(), recoursetest.JSON(http.StatusOK, recoursetest.OpenAIChat("scripted hello")))
	comp, err := m.complete(t)
	require.NoError(t, err)
	assert.Equal(t, "scripted hello", comp.Choices[0].Message.Content)
	assert.Equal(t, []time.Duration{2 * time.Second}, m.sleeps, "Retry-After is honoured (R5.5)")
	assertPOSTs(t, m.srv, 2)
}

// The connection drops before any response byte: nothing reached the SDK,
// so the call is resent; one answer, 2 POSTs.
func TestMatrixUnaryCutBeforeContent(t *testing.T) {
	m := newMatrix(t, recoursetest.Reset(), recoursetest.JSON(http.StatusOK, recoursetest.OpenAIChat("scripted hello")))
	comp, err := m.complete(t)
	require.NoError(t, err)
	assert.Equal(t, "scripted hello", comp.Choices[0].Message.Content)
	assertPOSTs(t, m.srv, 2)
}

// A 200 body cut part-way: never resent (the inference ran), an error that
// unwraps to the typed error (outcome interrupted), never a success.
func TestMatrixUnaryCutAfterContent(t *testing.T) {
	body := recoursetest.OpenAIChat("scripted hello")
	cut := recoursetest.JSON(200, body).Cut(len(body) / 2)
	m := newMatrix(t, cut, recoursetest.JSON(http.StatusOK, body))
	comp, err := m.complete(t)
	require.Error(t, err)
	assert.Nil(t, comp)
	var rerr *layer.RecoveryError
	require.True(t, errors.As(err, &rerr), "errors.As(*layer.RecoveryError) on %T: %v", err, err)
	assert.Equal(t, event.OutcomeInterrupted, rerr.Outcome)
	assertPOSTs(t, m.srv, 1)
}

// A 200 whose body is an error object fails closed: an error that unwraps
// to the typed error (provider_response), after one POST.
func TestMatrixUnary200WithErrorBody(t *testing.T) {
	m := newMatrix(t, recoursetest.JSON(http.StatusOK, recoursetest.OpenAIError("server_error", "server_error", "The model crashed.")))
	comp, err := m.complete(t)
	require.Error(t, err)
	assert.Nil(t, comp)
	var rerr *layer.RecoveryError
	require.True(t, errors.As(err, &rerr), "errors.As(*layer.RecoveryError) on %T: %v", err, err)
	assert.Equal(t, event.OutcomeInterrupted, rerr.Outcome)
	assert.Equal(t, event.CategoryProviderResponse, rerr.Failure.Category)
	assertPOSTs(t, m.srv, 1)
}

func TestMatrixStream503Then200(t *testing.T) {
	m := newMatrix(t, overloaded(), recoursetest.SSE(recoursetest.OpenAIStream("Hel", "lo")...))
	got := m.stream(t)
	require.NoError(t, got.err)
	assert.Equal(t, "Hello", got.content)
	assert.Equal(t, 5, got.chunks, "role, two content chunks, finish, usage")
	assertStreamPOSTs(t, m.srv, 2)
}

func TestMatrixStream429RetryAfter(t *testing.T) {
	m := newMatrix(t, rateLimited(), recoursetest.SSE(recoursetest.OpenAIStream("Hel", "lo")...))
	got := m.stream(t)
	require.NoError(t, got.err)
	assert.Equal(t, "Hello", got.content)
	assert.Equal(t, []time.Duration{2 * time.Second}, m.sleeps)
	assertStreamPOSTs(t, m.srv, 2)
}

// A streamed request answered by a 200 JSON error body (not SSE) before any
// content: the provider refused the request (R4.7), so recourse never
// resends it; the SDK gets an error, never a success, and the typed error
// (outcome interrupted, provider_response) is in the call's Result.
func TestMatrixStream200WithErrorBody(t *testing.T) {
	crashed := recoursetest.JSON(http.StatusOK, recoursetest.OpenAIError("server_error", "server_error", "The model crashed."))
	m := newMatrix(t, crashed, crashed, crashed)
	got := m.stream(t)
	require.Error(t, got.err)
	assert.Empty(t, got.content)
	rerr := m.call.Result.Err
	require.NotNil(t, rerr)
	assert.Equal(t, event.OutcomeInterrupted, rerr.Outcome)
	assert.Equal(t, event.CategoryProviderResponse, rerr.Failure.Category, "an error document in place of the stream is the provider's refusal (R4.7)")
	assert.Equal(t, "server_error", rerr.Failure.ProviderCode)
	assertStreamPOSTs(t, m.srv, 1)
}

// Exhausted before the stream starts: openai-go's own *openai.Error for the
// final, passed-through 503 and the typed outcome in the call's Result.
func TestMatrixStreamExhausted(t *testing.T) {
	m := newMatrix(t, overloaded(), overloaded(), overloaded(), recoursetest.SSE(recoursetest.OpenAIStream("never")...))
	got := m.stream(t)
	var aerr *openai.Error
	require.True(t, errors.As(got.err, &aerr), "errors.As(*openai.Error) on %T: %v", got.err, got.err)
	assert.Equal(t, http.StatusServiceUnavailable, aerr.StatusCode)
	assert.Equal(t, "overloaded", aerr.Message)
	assert.Equal(t, "exhausted", aerr.Response.Header.Get("X-Recourse-Outcome"))
	assert.Equal(t, "false", aerr.Response.Header.Get("X-Should-Retry"))
	rerr := m.call.Result.Err
	require.NotNil(t, rerr)
	assert.Equal(t, event.OutcomeExhausted, rerr.Outcome)
	assert.Len(t, rerr.History, 3)
	assertStreamPOSTs(t, m.srv, 3)
}

// A redirect on a streamed request is never followed (R2.2): an error that
// unwraps to the typed error, the target never contacted.
func TestMatrixStreamRedirectIsRefused(t *testing.T) {
	target := start(t, recoursetest.SSE(recoursetest.OpenAIStream("must not be reached")...))
	m := newMatrix(t, recoursetest.Redirect(http.StatusTemporaryRedirect, target.URL+"/v1/chat/completions"))
	got := m.stream(t)
	var rerr *layer.RecoveryError
	require.True(t, errors.As(got.err, &rerr), "errors.As(*layer.RecoveryError) on %T: %v", got.err, got.err)
	assert.Equal(t, http.StatusTemporaryRedirect, rerr.Failure.HTTPStatus)
	var uerr *url.Error
	assert.True(t, errors.As(got.err, &uerr))
	assert.Zero(t, target.Count(), "the redirect target was contacted")
	assertStreamPOSTs(t, m.srv, 1)
}
