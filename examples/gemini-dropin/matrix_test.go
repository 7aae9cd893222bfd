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
	"go.uber.org/goleak"
	"google.golang.org/genai"

	"github.com/recourse-dev/recourse/event"
	"github.com/recourse-dev/recourse/layers/retry"
	"github.com/recourse-dev/recourse/recoursetest"
)

// The drop-in matrix for google.golang.org/genai (R23): each scenario, the
// SDK's outcome and the upstream request count.
//
//	scenario                              unary                          stream
//	503 → 200                             TestGenAI503Then200            TestGenAIStream503Then200
//	429, retryDelay in the body           TestGenAI429RetryDelayInBody   -
//	per-day 429 (not retried)             TestGenAIPerDay429             -
//	in-band error before output           -                              TestGenAIStreamInBandErrorBeforeOutput
//	in-band error after output            -                              TestGenAIStreamInBandErrorAfterOutput
//	cut after output                      -                              TestGenAIStreamCutAfterOutput
//	400, 403                              TestGenAIPermanentStatuses     -
//	exhausted                             TestGenAIExhausted             -
//	redirect                              TestGenAIRedirectIsRefused     -

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const (
	model     = "gemini-2.5-flash"
	perMinute = "GenerateRequestsPerMinutePerProjectPerModel-FreeTier"
	perDay    = "GenerateRequestsPerDayPerProjectPerModel-FreeTier"
	apiKey    = "AIzaSy-CANARY-gemini-key"
)

type harness struct {
	srv    *recoursetest.Server
	client *genai.Client
	sleeps []time.Duration
	events []event.Event
}

func newHarness(t *testing.T, steps ...recoursetest.Step) *harness {
	t.Helper()
	h := &harness{srv: recoursetest.NewServer(steps...)}
	t.Cleanup(h.srv.Close)
	c, err := newClient(t.Context(), h.srv.URL, apiKey, retry.Policy{
		MaxAttempts: 3,
		Jitter:      func() float64 { return 0 },
		Sleep: func(_ context.Context, d time.Duration) error {
			h.sleeps = append(h.sleeps, d)
			return nil
		},
		OnEvent: func(ev event.Event) error { h.events = append(h.events, ev); return nil },
	})
	require.NoError(t, err)
	h.client = c
	return h
}

func (h *harness) generate(t *testing.T) (*genai.GenerateContentResponse, error) {
	return h.client.Models.GenerateContent(t.Context(), model, genai.Text("hello"), nil)
}

func (h *harness) stream(t *testing.T) (string, error) {
	var text strings.Builder
	for resp, err := range h.client.Models.GenerateContentStream(t.Context(), model, genai.Text("hello"), nil) {
		if err != nil {
			return text.String(), err
		}
		text.WriteString(resp.Text())
	}
	return text.String(), nil
}

// noKey checks that the API key is in no event.
func (h *harness) noKey(t *testing.T) {
	t.Helper()
	for _, ev := range h.events {
		assert.NotContains(t, ev.Model, apiKey)
		if ev.Failure != nil {
			assert.NotContains(t, ev.Failure.Text(), apiKey)
		}
	}
}

func unavailable() recoursetest.Step {
	return recoursetest.JSON(http.StatusServiceUnavailable, recoursetest.GeminiError(503, "UNAVAILABLE", "The model is overloaded."))
}

func apiError(t *testing.T, err error) genai.APIError {
	t.Helper()
	var ae genai.APIError
	require.True(t, errors.As(err, &ae), "error %T: %v", err, err)
	return ae
}

func TestGenAI503Then200(t *testing.T) {
	h := newHarness(t, unavailable(), recoursetest.JSON(200, recoursetest.GeminiChat("hi there")))
	resp, err := h.generate(t)
	require.NoError(t, err)
	assert.Equal(t, "hi there", resp.Text())
	assert.Equal(t, 2, h.srv.Count())
	assert.Equal(t, "/v1beta/models/"+model+":generateContent", h.srv.Requests()[1].Path)
	assert.Equal(t, apiKey, h.srv.Requests()[1].Header.Get("X-Goog-Api-Key"))
	h.noKey(t)
}

// R23.2: the wait is in the body; the SDK sees only the success.
func TestGenAI429RetryDelayInBody(t *testing.T) {
	h := newHarness(t, recoursetest.GeminiRateLimit("7s", perMinute), recoursetest.JSON(200, recoursetest.GeminiChat("after the wait")))
	resp, err := h.generate(t)
	require.NoError(t, err)
	assert.Equal(t, "after the wait", resp.Text())
	assert.Equal(t, 2, h.srv.Count())
	assert.Equal(t, []time.Duration{7 * time.Second}, h.sleeps)
}

// R23.2: a per-day quota is not retried; the SDK gets the 429 as its
// APIError.
func TestGenAIPerDay429(t *testing.T) {
	h := newHarness(t, recoursetest.GeminiRateLimit("30s", perDay), recoursetest.JSON(200, recoursetest.GeminiChat("never")))
	_, err := h.generate(t)
	ae := apiError(t, err)
	assert.Equal(t, 429, ae.Code)
	assert.Equal(t, "RESOURCE_EXHAUSTED", ae.Status)
	assert.Equal(t, 1, h.srv.Count())
	assert.Empty(t, h.sleeps)
}

func TestGenAIPermanentStatuses(t *testing.T) {
	for _, tc := range []struct {
		code   int
		status string
	}{{400, "INVALID_ARGUMENT"}, {403, "PERMISSION_DENIED"}} {
		h := newHarness(t, recoursetest.JSON(tc.code, recoursetest.GeminiError(tc.code, tc.status, "no")), recoursetest.JSON(200, recoursetest.GeminiChat("never")))
		_, err := h.generate(t)
		ae := apiError(t, err)
		assert.Equal(t, tc.code, ae.Code)
		assert.Equal(t, tc.status, ae.Status)
		assert.Equal(t, 1, h.srv.Count())
	}
}

func TestGenAIExhausted(t *testing.T) {
	h := newHarness(t, unavailable(), unavailable(), unavailable(), recoursetest.JSON(200, recoursetest.GeminiChat("never")))
	_, err := h.generate(t)
	ae := apiError(t, err)
	assert.Equal(t, 503, ae.Code)
	assert.Equal(t, 3, h.srv.Count())
}

func TestGenAIRedirectIsRefused(t *testing.T) {
	target := recoursetest.NewServer(recoursetest.JSON(200, recoursetest.GeminiChat("must not be reached")))
	t.Cleanup(target.Close)
	h := newHarness(t, recoursetest.Redirect(http.StatusTemporaryRedirect, target.URL+"/v1beta/models/"+model+":generateContent"))
	_, err := h.generate(t)
	require.Error(t, err)
	assert.Equal(t, 1, h.srv.Count())
	assert.Equal(t, 0, target.Count())
}

func TestGenAIStream503Then200(t *testing.T) {
	h := newHarness(t, unavailable(), recoursetest.SSE(recoursetest.GeminiStream("Hel", "lo")...))
	text, err := h.stream(t)
	require.NoError(t, err)
	assert.Equal(t, "Hello", text)
	assert.Equal(t, 2, h.srv.Count())
	assert.Equal(t, "alt=sse", h.srv.Requests()[1].RawQuery)
}

// R23.3: an in-band 503 before output is resent; the SDK reads one clean
// stream.
func TestGenAIStreamInBandErrorBeforeOutput(t *testing.T) {
	h := newHarness(t,
		recoursetest.SSE(recoursetest.GeminiEvent(recoursetest.GeminiError(503, "UNAVAILABLE", "The model is overloaded."))),
		recoursetest.SSE(recoursetest.GeminiStream("Hel", "lo")...))
	text, err := h.stream(t)
	require.NoError(t, err)
	assert.Equal(t, "Hello", text)
	assert.Equal(t, 2, h.srv.Count())
}

// firstChunk is a stream's first event without its finish reason.
func firstChunk(content string) string {
	return strings.Replace(recoursetest.GeminiStream(content)[0], `,"finishReason":"STOP"`, "", 1)
}

// R23.3: after output an in-band error is never resent: the SDK reads the
// output, then an error.
func TestGenAIStreamInBandErrorAfterOutput(t *testing.T) {
	h := newHarness(t,
		recoursetest.SSE(firstChunk("Hel"), recoursetest.GeminiEvent(recoursetest.GeminiError(503, "UNAVAILABLE", "The model is overloaded."))),
		recoursetest.SSE(recoursetest.GeminiStream("never")...))
	text, err := h.stream(t)
	require.Error(t, err)
	assert.Equal(t, "Hel", text)
	assert.Equal(t, 1, h.srv.Count())
}

// A stream cut after output is not resent: the SDK gets an error after the
// output it read.
func TestGenAIStreamCutAfterOutput(t *testing.T) {
	first := firstChunk("Hel")
	h := newHarness(t,
		recoursetest.SSE(first, recoursetest.GeminiStream("lo")[0]).Cut(len(first)+5),
		recoursetest.SSE(recoursetest.GeminiStream("never")...))
	text, err := h.stream(t)
	require.Error(t, err)
	assert.Equal(t, "Hel", text)
	assert.Equal(t, 1, h.srv.Count())
}

func TestRunOffline(t *testing.T) {
	t.Setenv("GEMINI_API_KEY", "")
	var slept []time.Duration
	sleep = func(_ context.Context, d time.Duration) error { slept = append(slept, d); return nil }
	t.Cleanup(func() { sleep = nil })
	var out bytes.Buffer
	require.NoError(t, run(&out))
	assert.Contains(t, out.String(), "answer: Hello from the scripted server.")
	assert.Contains(t, out.String(), "delay 1s")
	assert.Equal(t, []time.Duration{time.Second}, slept, "the wait the body named")
}
