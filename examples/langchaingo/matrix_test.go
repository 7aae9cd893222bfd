package main

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tmc/langchaingo/llms/openai"

	"github.com/recourse-dev/recourse/chain"
	openaicodec "github.com/recourse-dev/recourse/codecs/openai"
	"github.com/recourse-dev/recourse/event"
	"github.com/recourse-dev/recourse/layer"
	"github.com/recourse-dev/recourse/layers/retry"
	"github.com/recourse-dev/recourse/recoursetest"
)

// The drop-in matrix for langchaingo: every scenario in both modes, and the
// test that covers it (this file or main_test.go).
//
//	scenario              unary                                  stream
//	503 → 200             TestGenerate503Then200                 TestMatrixStream503Then200
//	429 + Retry-After     TestMatrixUnary429RetryAfter           TestMatrixStream429RetryAfter
//	cut before content    TestMatrixUnaryCutBeforeContent        TestStreamKeepaliveThenAbortIsResumed
//	cut after content     TestMatrixUnaryCutAfterContent         TestMatrixStreamCutAfterContent, TestStreamWithoutDoneIsAnError
//	200 with error body   TestMatrixUnary200WithErrorBody        TestMatrixStream200WithErrorBody, TestStreamMidStreamErrorIsAnError
//	exhausted             TestExhaustedKeepsTheProviderMessage   TestMatrixStreamExhausted
//	redirect              TestMatrixUnaryRedirectIsRefused       TestMatrixStreamRedirectIsRefused
//
// langchaingo hides the type in two places, so those tests assert what it
// does give and read the typed error from the layer.Call:
//   - it replaces every transport error that is a net.Error (http.Client's
//     *url.Error is one) with the fixed "network error: failed to reach API
//     server": a refused redirect, a unary body cut part-way, a unary 200
//     with an error body;
//   - it has no error type for a non-2xx answer: an exhausted 503 passes
//     through and becomes the plain "API returned unexpected status code:
//     503: overloaded".
//
// A stream read error is wrapped with %w ("error reading streaming
// response: …"), so errors.As finds the typed error there.

// networkError is the fixed text langchaingo puts in place of a transport
// error.
const networkError = "network error: failed to reach API server"

// requireHidden checks that langchaingo returned its fixed network error,
// from which the typed error is not reachable, and that the Call holds the
// typed error; it returns that error.
func requireHidden(t *testing.T, m *matrix, got result) *layer.RecoveryError {
	t.Helper()
	require.Error(t, got.err)
	assert.Equal(t, networkError, got.err.Error())
	var rerr *layer.RecoveryError
	assert.False(t, errors.As(got.err, &rerr), "langchaingo replaces the transport error")
	assert.Nil(t, got.resp)
	require.NotNil(t, m.call.Result.Err, "the typed error is in the call's Result")
	return m.call.Result.Err
}

// matrix is one test's server, LLM, layer.Call and recorded sleeps: the
// policy's Sleep returns at once, so no test waits for a backoff.
type matrix struct {
	srv    *recoursetest.Server
	llm    *openai.LLM
	sleeps []time.Duration
	call   *layer.Call
}

func newMatrix(t *testing.T, script ...recoursetest.Step) *matrix {
	t.Helper()
	m := &matrix{srv: start(t, script...), call: &layer.Call{}}
	ch, err := chain.Default(openaicodec.New(), chain.WithPolicy(retry.Policy{
		MaxAttempts: 3,
		Jitter:      func() float64 { return 0 },
		Sleep: func(_ context.Context, d time.Duration) error {
			m.sleeps = append(m.sleeps, d)
			return nil
		},
	}))
	require.NoError(t, err)
	m.llm, err = openai.New(
		openai.WithHTTPClient(&http.Client{Transport: ch}),
		openai.WithBaseURL(m.srv.URL+"/v1"),
		openai.WithToken("sk-test-key"),
		openai.WithModel("gpt-4o-mini"),
	)
	require.NoError(t, err)
	return m
}

func (m *matrix) generate(t *testing.T, streaming bool) result {
	t.Helper()
	return generate(layer.WithCall(context.Background(), m.call), t, m.llm, streaming)
}

func overloaded() recoursetest.Step {
	return recoursetest.JSON(http.StatusServiceUnavailable, recoursetest.OpenAIError("server_error", "server_error", "overloaded"))
}

func rateLimited() recoursetest.Step {
	return recoursetest.JSON(http.StatusTooManyRequests, recoursetest.OpenAIError("requests", "rate_limit_exceeded", "Rate limit reached"), "Retry-After", "2")
}

func TestMatrixUnary429RetryAfter(t *testing.T) {
	m := newMatrix(t, rateLimited(), recoursetest.JSON(http.StatusOK, recoursetest.OpenAIChat("scripted hello")))
	got := m.generate(t, false)
	require.NoError(t, got.err)
	assert.Equal(t, "scripted hello", got.resp.Choices[0].Content)
	assert.Equal(t, []time.Duration{2 * time.Second}, m.sleeps, "Retry-After is honoured (R5.5)")
	assertPOSTs(t, m.srv, 2, false)
}

// The connection drops before any response byte: resent; one answer, 2 POSTs.
func TestMatrixUnaryCutBeforeContent(t *testing.T) {
	m := newMatrix(t, recoursetest.Reset(), recoursetest.JSON(http.StatusOK, recoursetest.OpenAIChat("scripted hello")))
	got := m.generate(t, false)
	require.NoError(t, got.err)
	assert.Equal(t, "scripted hello", got.resp.Choices[0].Content)
	assertPOSTs(t, m.srv, 2, false)
}

// A 200 body cut part-way: never resent (the inference ran), an error,
// never a success. langchaingo hides the type (the fixed network error);
// the Call holds the typed error, outcome interrupted.
func TestMatrixUnaryCutAfterContent(t *testing.T) {
	body := recoursetest.OpenAIChat("scripted hello")
	cut := recoursetest.JSON(200, body).Cut(len(body) / 2)
	m := newMatrix(t, cut, recoursetest.JSON(http.StatusOK, body))
	got := m.generate(t, false)
	rerr := requireHidden(t, m, got)
	assert.Equal(t, event.OutcomeInterrupted, rerr.Outcome)
	assert.Equal(t, http.StatusOK, rerr.Failure.HTTPStatus)
	assertPOSTs(t, m.srv, 1, false)
}

// A 200 whose body is an error object fails closed: an error, never the
// empty success plain langchaingo would make of it. langchaingo hides the
// type (the fixed network error); the Call holds the typed error.
func TestMatrixUnary200WithErrorBody(t *testing.T) {
	m := newMatrix(t, recoursetest.JSON(http.StatusOK, recoursetest.OpenAIError("server_error", "server_error", "The model crashed.")))
	got := m.generate(t, false)
	rerr := requireHidden(t, m, got)
	assert.Equal(t, event.OutcomeInterrupted, rerr.Outcome)
	assert.Equal(t, event.CategoryProviderResponse, rerr.Failure.Category)
	assertPOSTs(t, m.srv, 1, false)
}

// A redirect is never followed (R2.2): langchaingo's fixed network error,
// the typed error in the Call, the target never contacted.
func TestMatrixUnaryRedirectIsRefused(t *testing.T) {
	target := start(t, recoursetest.JSON(http.StatusOK, recoursetest.OpenAIChat("must not be reached")))
	m := newMatrix(t, recoursetest.Redirect(http.StatusTemporaryRedirect, target.URL+"/v1/chat/completions"))
	got := m.generate(t, false)
	rerr := requireHidden(t, m, got)
	assert.Equal(t, http.StatusTemporaryRedirect, rerr.Failure.HTTPStatus)
	assert.Zero(t, target.Count(), "the redirect target was contacted")
	assertPOSTs(t, m.srv, 1, false)
}

func TestMatrixStream503Then200(t *testing.T) {
	m := newMatrix(t, overloaded(), recoursetest.SSE(recoursetest.OpenAIStream("Hel", "lo")...))
	got := m.generate(t, true)
	require.NoError(t, got.err)
	assert.Equal(t, "Hello", got.streamed)
	assert.Equal(t, "Hello", got.resp.Choices[0].Content)
	assertPOSTs(t, m.srv, 2, true)
}

func TestMatrixStream429RetryAfter(t *testing.T) {
	m := newMatrix(t, rateLimited(), recoursetest.SSE(recoursetest.OpenAIStream("Hel", "lo")...))
	got := m.generate(t, true)
	require.NoError(t, got.err)
	assert.Equal(t, "Hello", got.streamed)
	assert.Equal(t, []time.Duration{2 * time.Second}, m.sleeps)
	assertPOSTs(t, m.srv, 2, true)
}

// Content, then the connection drops: never resent, never a success; the
// read error wraps the typed error (outcome interrupted); content once.
func TestMatrixStreamCutAfterContent(t *testing.T) {
	events := recoursetest.OpenAIStream("Hel", "lo")
	m := newMatrix(t, recoursetest.SSE(events[:2]...).CutEvents(2), recoursetest.SSE(events...))
	got := m.generate(t, true)
	rerr := requireInterrupted(t, got.err)
	assert.Equal(t, event.CategoryTransport, rerr.Failure.Category)
	assert.Same(t, m.call.Result.Err, rerr)
	assert.Nil(t, got.resp)
	assert.Equal(t, "Hel", got.streamed, "content once")
	assertPOSTs(t, m.srv, 1, true)
}

// A streamed request answered by a 200 JSON error body (not SSE) before any
// content: the provider refused the request (R4.7), so recourse never
// resends it; the stream read error wraps the typed error (interrupted,
// provider_response) and names the known provider code.
func TestMatrixStream200WithErrorBody(t *testing.T) {
	crashed := recoursetest.JSON(http.StatusOK, recoursetest.OpenAIError("server_error", "server_error", "The model crashed."))
	m := newMatrix(t, crashed, crashed, crashed)
	got := m.generate(t, true)
	var rerr *layer.RecoveryError
	require.True(t, errors.As(got.err, &rerr), "errors.As(*layer.RecoveryError) on %T: %v", got.err, got.err)
	assert.Equal(t, "error reading streaming response: recourse: the provider returned an error in HTTP 200 (server_error), a permanent failure: not retried (wire attempt 1)", got.err.Error())
	assert.Equal(t, event.OutcomeInterrupted, rerr.Outcome)
	assert.Equal(t, event.CategoryProviderResponse, rerr.Failure.Category, "an error document in place of the stream is the provider's refusal")
	assert.Nil(t, got.resp)
	assert.Empty(t, got.streamed)
	assertPOSTs(t, m.srv, 1, true)
}

// Exhausted before the stream starts: the final 503 passes through and
// langchaingo builds its own plain error with the provider's message (it
// has no error type for it); the typed outcome is in the Call.
func TestMatrixStreamExhausted(t *testing.T) {
	m := newMatrix(t, overloaded(), overloaded(), overloaded(), recoursetest.SSE(recoursetest.OpenAIStream("never")...))
	got := m.generate(t, true)
	require.Error(t, got.err)
	assert.Equal(t, "API returned unexpected status code: 503: overloaded", got.err.Error())
	rerr := m.call.Result.Err
	require.NotNil(t, rerr, "the typed error is in the call's Result")
	assert.Equal(t, event.OutcomeExhausted, rerr.Outcome)
	assert.Len(t, rerr.History, 3)
	assert.Empty(t, got.streamed)
	assertPOSTs(t, m.srv, 3, true)
}

// A redirect on a streamed request is never followed: as for unary, the
// fixed network error and the typed error in the Call.
func TestMatrixStreamRedirectIsRefused(t *testing.T) {
	target := start(t, recoursetest.SSE(recoursetest.OpenAIStream("must not be reached")...))
	m := newMatrix(t, recoursetest.Redirect(http.StatusTemporaryRedirect, target.URL+"/v1/chat/completions"))
	got := m.generate(t, true)
	rerr := requireHidden(t, m, got)
	assert.Equal(t, http.StatusTemporaryRedirect, rerr.Failure.HTTPStatus)
	assert.Empty(t, got.streamed)
	assert.Zero(t, target.Count(), "the redirect target was contacted")
	assertPOSTs(t, m.srv, 1, true)
}
