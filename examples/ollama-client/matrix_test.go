package main

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/ollama/ollama/api"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/recourse-dev/recourse/chain"
	"github.com/recourse-dev/recourse/codecs/ollama"
	"github.com/recourse-dev/recourse/event"
	"github.com/recourse-dev/recourse/layer"
	"github.com/recourse-dev/recourse/layers/retry"
	"github.com/recourse-dev/recourse/recoursetest"
)

// The drop-in matrix for the Ollama client: every scenario in both modes,
// and the test that covers it (this file or client_test.go / stream_test.go).
// Every resend needs the admission hook (R8.3); these tests allow it.
//
//	scenario              unary                                  stream
//	503 → 200             TestOllama503Then200WithAllowingHook   TestMatrixStream503Then200
//	429 + Retry-After     TestMatrixUnary429RetryAfter           TestMatrixStream429RetryAfter
//	cut before content    TestMatrixUnaryCutBeforeContent        TestStreamEmptyChunkThenAbortIsResumed, TestStreamHeadersThenAbortIsResumed
//	cut after content     TestMatrixUnaryCutAfterContent         TestStreamContentThenAbortIsInterrupted
//	200 with error body   TestMatrixUnary200WithErrorBody        TestMatrixStream200WithErrorLine, TestStreamMidStreamErrorLine
//	exhausted             TestOllamaExhausted                    TestMatrixStreamExhausted
//	redirect              TestMatrixUnaryRedirectIsRefused       TestMatrixStreamRedirectIsRefused
//
// A unary "cut after content" is a 200 whose body is cut part-way: never
// resent (the inference ran). A stream that fails after its headers ends,
// for the Ollama client, with the in-band error line's text as a plain
// error (it drops body read errors); the typed error is in the layer.Call.

// matrix is one test's server, client, layer.Call and recorded sleeps: the
// policy's Sleep returns at once, so no test waits for a backoff.
type matrix struct {
	srv    *recoursetest.Server
	client *api.Client
	sleeps []time.Duration
	call   *layer.Call
}

func newMatrix(t *testing.T, script ...recoursetest.Step) *matrix {
	t.Helper()
	m := &matrix{srv: start(t, script...), call: &layer.Call{}}
	ch, err := chain.Default(ollama.New(), chain.WithPolicy(retry.Policy{
		MaxAttempts: 3,
		Admit:       allow().hook,
		Jitter:      func() float64 { return 0 },
		Sleep: func(_ context.Context, d time.Duration) error {
			m.sleeps = append(m.sleeps, d)
			return nil
		},
	}))
	require.NoError(t, err)
	base, err := url.Parse(m.srv.URL)
	require.NoError(t, err)
	m.client = api.NewClient(base, &http.Client{Transport: ch})
	return m
}

// chat runs one Chat: unary ("stream":false) or streaming (stream nil).
func (m *matrix) chat(t *testing.T, streaming bool) (streamed, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(layer.WithCall(context.Background(), m.call), 10*time.Second)
	defer cancel()
	req := chatRequest("llama3.2", "hello")
	if streaming {
		req = streamRequest(nil)
	}
	var s streamed
	err := m.client.Chat(ctx, req, s.collect)
	return s, err
}

func rateLimited() recoursetest.Step {
	return recoursetest.JSON(http.StatusTooManyRequests, recoursetest.OllamaError("too many requests"), "Retry-After", "2")
}

func TestMatrixUnary429RetryAfter(t *testing.T) {
	m := newMatrix(t, rateLimited(), recoursetest.JSON(http.StatusOK, recoursetest.OllamaChat("scripted hello")))
	got, err := m.chat(t, false)
	require.NoError(t, err)
	assert.Equal(t, "scripted hello", got.content)
	assert.Equal(t, 1, got.calls)
	assert.Equal(t, []time.Duration{2 * time.Second}, m.sleeps, "Retry-After is honoured (R5.5)")
	assertPOSTs(t, m.srv, 2)
}

// The connection drops before any response byte: resent (the hook allows
// it); one answer, 2 POSTs.
func TestMatrixUnaryCutBeforeContent(t *testing.T) {
	m := newMatrix(t, recoursetest.Reset(), recoursetest.JSON(http.StatusOK, recoursetest.OllamaChat("scripted hello")))
	got, err := m.chat(t, false)
	require.NoError(t, err)
	assert.Equal(t, "scripted hello", got.content)
	assert.Equal(t, 1, got.calls)
	assertPOSTs(t, m.srv, 2)
}

// A 200 body cut part-way: never resent, an error (never a success) that
// unwraps to the typed error (outcome interrupted), the Call's too.
func TestMatrixUnaryCutAfterContent(t *testing.T) {
	body := recoursetest.OllamaChat("scripted hello")
	cut := recoursetest.JSON(200, body).Cut(len(body) / 2)
	m := newMatrix(t, cut, recoursetest.JSON(http.StatusOK, body))
	got, err := m.chat(t, false)
	require.Error(t, err)
	assert.Zero(t, got.calls)
	var rerr *layer.RecoveryError
	require.True(t, errors.As(err, &rerr), "errors.As(*layer.RecoveryError) on %T: %v", err, err)
	assert.Equal(t, event.OutcomeInterrupted, rerr.Outcome)
	assert.Same(t, m.call.Result.Err, rerr)
	assertPOSTs(t, m.srv, 1)
}

// A 200 whose body is {"error":…} fails closed: an error, never a success,
// that unwraps to the typed error (provider_response).
func TestMatrixUnary200WithErrorBody(t *testing.T) {
	m := newMatrix(t, recoursetest.JSON(http.StatusOK, recoursetest.OllamaError("an error was encountered while running the model")))
	got, err := m.chat(t, false)
	require.Error(t, err)
	assert.Zero(t, got.calls)
	var rerr *layer.RecoveryError
	require.True(t, errors.As(err, &rerr), "errors.As(*layer.RecoveryError) on %T: %v", err, err)
	assert.Equal(t, event.OutcomeInterrupted, rerr.Outcome)
	assert.Equal(t, event.CategoryProviderResponse, rerr.Failure.Category)
	assertPOSTs(t, m.srv, 1)
}

// A redirect is never followed (R2.2): the Ollama client returns
// http.Client's *url.Error around the typed error; the target is never
// contacted.
func TestMatrixUnaryRedirectIsRefused(t *testing.T) {
	target := start(t, recoursetest.JSON(http.StatusOK, recoursetest.OllamaChat("must not be reached")))
	m := newMatrix(t, recoursetest.Redirect(http.StatusTemporaryRedirect, target.URL+"/api/chat"))
	_, err := m.chat(t, false)
	var rerr *layer.RecoveryError
	require.True(t, errors.As(err, &rerr), "errors.As(*layer.RecoveryError) on %T: %v", err, err)
	assert.Equal(t, http.StatusTemporaryRedirect, rerr.Failure.HTTPStatus)
	var uerr *url.Error
	assert.True(t, errors.As(err, &uerr))
	assert.Zero(t, target.Count(), "the redirect target was contacted")
	assertPOSTs(t, m.srv, 1)
}

func TestMatrixStream503Then200(t *testing.T) {
	m := newMatrix(t, busy(), recoursetest.NDJSON(recoursetest.OllamaStream("Hel", "lo")...))
	got, err := m.chat(t, true)
	require.NoError(t, err)
	assert.Equal(t, "Hello", got.content)
	assert.Equal(t, 3, got.calls)
	assert.True(t, got.done)
	assertStreamPOSTs(t, m.srv, 2)
}

func TestMatrixStream429RetryAfter(t *testing.T) {
	m := newMatrix(t, rateLimited(), recoursetest.NDJSON(recoursetest.OllamaStream("Hel", "lo")...))
	got, err := m.chat(t, true)
	require.NoError(t, err)
	assert.Equal(t, "Hello", got.content)
	assert.Equal(t, []time.Duration{2 * time.Second}, m.sleeps)
	assertStreamPOSTs(t, m.srv, 2)
}

// A 200 stream whose only line is {"error":…}: the client reports the
// provider's own message, never a success; the typed error is in the Call.
func TestMatrixStream200WithErrorLine(t *testing.T) {
	m := newMatrix(t, recoursetest.NDJSON(recoursetest.OllamaError("an error was encountered while running the model")+"\n"))
	got, err := m.chat(t, true)
	require.Error(t, err)
	assert.Equal(t, "an error was encountered while running the model", err.Error())
	assert.Zero(t, got.calls)
	require.NotNil(t, m.call.Result.Err)
	assert.Equal(t, event.CategoryProviderResponse, m.call.Result.Err.Failure.Category)
	assertStreamPOSTs(t, m.srv, 1)
}

// Exhausted before the stream starts: the client's own api.StatusError for
// the final, passed-through 503 and the typed outcome in the Call.
func TestMatrixStreamExhausted(t *testing.T) {
	m := newMatrix(t, busy(), busy(), busy(), recoursetest.NDJSON(recoursetest.OllamaStream("never")...))
	_, err := m.chat(t, true)
	rerr := requireBusy(t, err, m.call, event.OutcomeExhausted)
	assert.Len(t, rerr.History, 3)
	assertStreamPOSTs(t, m.srv, 3)
}

func TestMatrixStreamRedirectIsRefused(t *testing.T) {
	target := start(t, recoursetest.NDJSON(recoursetest.OllamaStream("must not be reached")...))
	m := newMatrix(t, recoursetest.Redirect(http.StatusTemporaryRedirect, target.URL+"/api/chat"))
	got, err := m.chat(t, true)
	var rerr *layer.RecoveryError
	require.True(t, errors.As(err, &rerr), "errors.As(*layer.RecoveryError) on %T: %v", err, err)
	assert.Equal(t, http.StatusTemporaryRedirect, rerr.Failure.HTTPStatus)
	assert.Zero(t, got.calls)
	assert.Zero(t, target.Count(), "the redirect target was contacted")
	assertStreamPOSTs(t, m.srv, 1)
}
