package main

import (
	"bytes"
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/recourse-dev/recourse/event"
	"github.com/recourse-dev/recourse/layer"
	"github.com/recourse-dev/recourse/layers/retry"
	"github.com/recourse-dev/recourse/recoursetest"
)

// TestMain fails the package if a test leaves a goroutine behind.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// The drop-in matrix for anthropic-sdk-go v2 (R22), each scenario with
// the number of POSTs the upstream must count — the attempts recourse
// chose, the SDK's own retries being off:
//
//	scenario                          test                                          POSTs
//	529 → 200 (unary, stream)         TestR22_1_SDK529Then200                       2
//	429 + retry-after                 TestR22_6_SDK429RetryAfterIsAMinimum          2
//	in-band overload before content   TestR22_2_SDKInBandOverloadIsRecovered        2
//	cut after content                 TestR22_2_SDKCutAfterContentIsAnError         1
//	400, 401                          TestR22_5_SDKKeepsItsErrorTypes               1
//	exhausted (3 × 529)               TestR22_1_SDKExhausted                        3
//	redirect                          TestR22_1_SDKRedirectIsRefused                1

// matrix is one test's server, client, layer.Call and recorded sleeps: the
// policy's Sleep returns at once, so no test waits for a backoff.
type matrix struct {
	srv    *recoursetest.Server
	client anthropic.Client
	sleeps []time.Duration
	call   *layer.Call
}

func newMatrix(t *testing.T, script ...recoursetest.Step) *matrix {
	t.Helper()
	m := &matrix{srv: recoursetest.NewServer(script...), call: &layer.Call{}}
	t.Cleanup(m.srv.Close)
	var err error
	m.client, err = newClient(m.srv.URL, "sk-ant-test-key", retry.Policy{
		MaxAttempts: 3,
		Jitter:      func() float64 { return 0 },
		Sleep: func(_ context.Context, d time.Duration) error {
			m.sleeps = append(m.sleeps, d)
			return nil
		},
	})
	require.NoError(t, err)
	return m
}

func (m *matrix) ctx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(layer.WithCall(context.Background(), m.call), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func params() anthropic.MessageNewParams {
	return anthropic.MessageNewParams{
		Model:     recoursetest.AnthropicModel,
		MaxTokens: 64,
		Messages:  []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("hello"))},
	}
}

func (m *matrix) complete(t *testing.T) (*anthropic.Message, error) {
	return m.client.Messages.New(m.ctx(t), params())
}

func (m *matrix) stream(t *testing.T) (string, error) { return stream(m.ctx(t), m.client, "hello") }

func TestRunRecoversTheOverloadedStream(t *testing.T) {
	var out bytes.Buffer
	require.NoError(t, run(&out))
	assert.Contains(t, out.String(), "answer: "+strings.Join(answer, "")+"\n")
	assert.Contains(t, out.String(), "attempt_failed    attempt 1/3  HTTP 529 overloaded_error (transient)")
	assert.NotContains(t, out.String(), "sk-ant-offline-demo")
}

func TestR22_1_SDK529Then200(t *testing.T) {
	t.Run("unary", func(t *testing.T) {
		m := newMatrix(t, recoursetest.AnthropicOverloaded(), recoursetest.JSON(200, recoursetest.AnthropicMessage("Hello.")))
		msg, err := m.complete(t)
		require.NoError(t, err)
		assert.Equal(t, "Hello.", msg.Content[0].Text)
		assert.Equal(t, 2, m.srv.Count())
		reqs := m.srv.Requests()
		assert.Equal(t, reqs[0].Body, reqs[1].Body, "byte-identical resend")
		assert.Equal(t, "Bearer sk-ant-test-key", reqs[1].Header.Get("Authorization"), "the credential passes through untouched")
	})
	t.Run("stream", func(t *testing.T) {
		m := newMatrix(t, recoursetest.AnthropicOverloaded(), recoursetest.AnthropicStream(recoursetest.AnthropicEvents("Hel", "lo")...))
		text, err := m.stream(t)
		require.NoError(t, err)
		assert.Equal(t, "Hello", text)
		assert.Equal(t, 2, m.srv.Count())
	})
}

func TestR22_6_SDK429RetryAfterIsAMinimum(t *testing.T) {
	limited := recoursetest.JSON(429, recoursetest.AnthropicError("rate_limit_error", "slow down"), "retry-after", "2")
	m := newMatrix(t, limited, recoursetest.JSON(200, recoursetest.AnthropicMessage("ok")))
	_, err := m.complete(t)
	require.NoError(t, err)
	assert.Equal(t, []time.Duration{2 * time.Second}, m.sleeps)
	assert.Equal(t, 2, m.srv.Count())
}

func TestR22_2_SDKInBandOverloadIsRecovered(t *testing.T) {
	overloaded := append(recoursetest.AnthropicStart(), recoursetest.AnthropicErrorEvent("overloaded_error", "Overloaded"))
	m := newMatrix(t, recoursetest.AnthropicStream(overloaded...), recoursetest.AnthropicStream(recoursetest.AnthropicEvents("Hel", "lo")...))
	text, err := m.stream(t)
	require.NoError(t, err, "the SDK never sees the resent attempt's error event")
	assert.Equal(t, "Hello", text)
	assert.Equal(t, 2, m.srv.Count())
}

// A stream cut after content must reach the SDK as an error, never as its
// silent success with a partial text: the codec's in-band error event
// does it.
func TestR22_2_SDKCutAfterContentIsAnError(t *testing.T) {
	evs := recoursetest.AnthropicEvents("Hel", "lo")
	m := newMatrix(t, recoursetest.AnthropicStream(evs...).CutEvents(4), recoursetest.AnthropicStream(evs...))
	text, err := m.stream(t)
	require.Error(t, err)
	assert.Empty(t, text)
	assert.Equal(t, 1, m.srv.Count(), "content was delivered: never resent")
	var aerr *anthropic.Error
	require.ErrorAs(t, err, &aerr, "the SDK's own error type, from the in-band error event")
	assert.Contains(t, aerr.RawJSON(), `"type":"recourse_error"`)
	assert.Contains(t, aerr.RawJSON(), "semantic_output")
	var re *layer.RecoveryError
	require.ErrorAs(t, m.call.Result.Err, &re)
	assert.Equal(t, event.OutcomeInterrupted, re.Outcome)
	assert.NotContains(t, err.Error(), "sk-ant-test-key")
}

func TestR22_5_SDKKeepsItsErrorTypes(t *testing.T) {
	for _, tc := range []struct {
		status int
		typ    string
	}{{400, "invalid_request_error"}, {401, "authentication_error"}} {
		m := newMatrix(t, recoursetest.JSON(tc.status, recoursetest.AnthropicError(tc.typ, "no")), recoursetest.JSON(200, recoursetest.AnthropicMessage("ok")))
		_, err := m.complete(t)
		var aerr *anthropic.Error
		require.ErrorAs(t, err, &aerr)
		assert.Equal(t, tc.status, aerr.StatusCode)
		assert.Equal(t, 1, m.srv.Count())
	}
}

func TestR22_1_SDKExhausted(t *testing.T) {
	m := newMatrix(t, recoursetest.AnthropicOverloaded(), recoursetest.AnthropicOverloaded(), recoursetest.AnthropicOverloaded())
	_, err := m.complete(t)
	var aerr *anthropic.Error
	require.ErrorAs(t, err, &aerr)
	assert.Equal(t, 529, aerr.StatusCode)
	assert.Equal(t, 3, m.srv.Count())
	assert.Equal(t, "false", aerr.Response.Header.Get("X-Should-Retry"))
	var re *layer.RecoveryError
	require.ErrorAs(t, m.call.Result.Err, &re)
	assert.Equal(t, event.OutcomeExhausted, re.Outcome)
}

func TestR22_1_SDKRedirectIsRefused(t *testing.T) {
	m := newMatrix(t, recoursetest.Redirect(http.StatusTemporaryRedirect, "http://127.0.0.1:1/elsewhere"), recoursetest.JSON(200, recoursetest.AnthropicMessage("ok")))
	_, err := m.complete(t)
	require.Error(t, err)
	assert.Equal(t, 1, m.srv.Count())
}
