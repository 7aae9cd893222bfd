package stall_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/recourse-dev/recourse/chat"
	"github.com/recourse-dev/recourse/client"
	"github.com/recourse-dev/recourse/codecs/ollama"
	"github.com/recourse-dev/recourse/codecs/openai"
	"github.com/recourse-dev/recourse/event"
	"github.com/recourse-dev/recourse/layer"
	"github.com/recourse-dev/recourse/layers/retry"
	"github.com/recourse-dev/recourse/layers/stall"
	"github.com/recourse-dev/recourse/recoursetest"
)

const keepalive = ": keep-alive\n\n"

// reasoning is an OpenAI-compatible chunk carrying reasoning text
// (reasoning_content, as DeepSeek-style and vLLM servers send it).
const reasoning = `data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"reasoning_content":"thinking"}}]}` + "\n\n"

// stream events of an answer "Hello": role chunk, "Hel", "lo", finish,
// usage, [DONE].
var hello = recoursetest.OpenAIStream("Hel", "lo")

func sendAll(s *script, events ...string) {
	for _, e := range events {
		s.body <- e
	}
	close(s.body)
}

func TestHeaderTimeoutFiresAndTheAttemptIsRetried(t *testing.T) {
	synctest.Test(t, testHeaderTimeoutFiresAndTheAttemptIsRetried)
}

func testHeaderTimeoutFiresAndTheAttemptIsRetried(t *testing.T) {
	r := newRig(t, openai.New(), stall.Limits{Header: 5 * time.Second}, retry.Policy{MaxAttempts: 2})
	r.p.answer(&script{headers: make(chan struct{})}) // never answers
	sendAll(r.p.answer(&script{}), hello...)
	res := await(t, r.stream(context.Background()))
	require.NoError(t, res.err)
	assert.Equal(t, "Hello", res.text)
	assert.Equal(t, 2, r.p.Count())
	assert.Equal(t, []time.Duration{5 * time.Second}, r.eventsAt(event.AttemptFailed), "the limit fires when it has elapsed, not before")
	assert.Equal(t, []string{"attempt_started", "attempt_failed", "delay_scheduled", "retry_started", "attempt_started", "attempt_succeeded"}, r.types())
	f := r.failures()[0]
	assert.Equal(t, event.StallHeader, f.Stall)
	assert.Equal(t, event.CategoryTransport, f.Category)
	assert.Equal(t, event.PhaseAwaitingHeaders, f.Phase)
	assert.False(t, f.Progress.HeadersReceived)
	assert.Equal(t, event.Classification{Eligible: true, Reason: event.ReasonTransient}, f.Classification)
}

func TestHeaderTimeoutDoesNotFireWhenHeadersArriveInTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t, openai.New(), stall.Limits{Header: 5 * time.Second}, retry.Policy{MaxAttempts: 2})
		s := r.p.answer(&script{headers: make(chan struct{})})
		done := r.stream(context.Background())
		time.Sleep(5*time.Second - time.Nanosecond)
		close(s.headers)
		sendAll(s, hello...)
		res := await(t, done)
		require.NoError(t, res.err)
		assert.Equal(t, "Hello", res.text)
		assert.Equal(t, 1, r.p.Count())
		time.Sleep(time.Hour) // a stopped limit never fires later
		assert.Empty(t, r.failures())
	})
}

func TestIdleTimeoutFiresAfterAKeepaliveAndSilence(t *testing.T) {
	synctest.Test(t, testIdleTimeoutFiresAfterAKeepaliveAndSilence)
}

func testIdleTimeoutFiresAfterAKeepaliveAndSilence(t *testing.T) {
	r := newRig(t, openai.New(), stall.Limits{Idle: 30 * time.Second}, retry.Policy{})
	s := r.p.answer(&script{})
	done := r.stream(context.Background())
	time.Sleep(20 * time.Second)
	r.feed(s, keepalive) // the wait starts again
	re := recoveryError(t, await(t, done).err)
	assert.Equal(t, 50*time.Second, r.since(), "30 s after the keepalive")
	assert.Equal(t, event.OutcomeExhausted, re.Outcome)
	assert.Equal(t, event.StallIdle, re.Failure.Stall)
	assert.Equal(t, event.CategoryTransport, re.Failure.Category)
	assert.Equal(t, event.Classification{Eligible: true, Reason: event.ReasonTransient}, re.Failure.Classification, "keepalives alone never block a resend (R4.8)")
	assert.Equal(t, int64(len(keepalive)), re.Failure.Progress.RawBytes)
	assert.Contains(t, re.Error(), "idle_timeout")
	var se *layer.StallError
	require.ErrorAs(t, event.Inspect(&re.Failure).Cause, &se)
	assert.Equal(t, 30*time.Second, se.After)
}

// R7.2: the idle limit counts every received byte, keepalives included:
// a keepalive within the limit restarts the wait.
func TestR7_2_KeepalivesKeepTheIdleLimitFromFiring(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t, openai.New(), stall.Limits{Idle: 30 * time.Second}, retry.Policy{})
		s := r.p.answer(&script{})
		done := r.stream(context.Background())
		for range 6 {
			time.Sleep(30*time.Second - time.Millisecond)
			r.feed(s, keepalive)
		}
		for _, e := range hello[:3] {
			time.Sleep(30*time.Second - time.Millisecond)
			r.feed(s, e)
		}
		sendAll(s, hello[3:]...)
		res := await(t, done)
		require.NoError(t, res.err)
		assert.Equal(t, "Hello", res.text)
		assert.Empty(t, r.failures())
		assert.Equal(t, 9*(30*time.Second-time.Millisecond), r.since(), "far longer than the limit, with no wait as long")
	})
}

func TestIdleTimeoutAfterOutputIsInterrupted(t *testing.T) {
	synctest.Test(t, testIdleTimeoutAfterOutputIsInterrupted)
}

func testIdleTimeoutAfterOutputIsInterrupted(t *testing.T) {
	r := newRig(t, openai.New(), stall.Limits{Idle: 30 * time.Second}, retry.Policy{MaxAttempts: 3})
	s := r.p.answer(&script{})
	done := r.stream(context.Background())
	r.feed(s, hello[0])
	time.Sleep(10 * time.Second)
	r.feed(s, hello[1])
	res := await(t, done)
	assert.Equal(t, 40*time.Second, r.since())
	re := recoveryError(t, res.err)
	assert.Equal(t, "Hel", res.text)
	assert.Equal(t, event.OutcomeInterrupted, re.Outcome)
	assert.Equal(t, event.ReasonSemanticOutput, re.Failure.Classification.Reason)
	assert.Equal(t, event.StallIdle, re.Failure.Stall)
	assert.Equal(t, 1, r.p.Count(), "never resent after output (R13.1)")
}

// A reasoning model that thinks for a long time behind keepalives: the idle
// limit never fires while keepalives flow, and the first-output limit fires
// exactly at its value counted from the headers.
func TestFirstOutputTimeoutFiresAtItsLimitWhileKeepalivesFlow(t *testing.T) {
	synctest.Test(t, testFirstOutputTimeoutFiresAtItsLimitWhileKeepalivesFlow)
}

func testFirstOutputTimeoutFiresAtItsLimitWhileKeepalivesFlow(t *testing.T) {
	r := newRig(t, openai.New(), stall.Limits{Idle: 30 * time.Second, FirstOutput: 60 * time.Second}, retry.Policy{})
	s := r.p.answer(&script{})
	done := r.stream(context.Background())
	r.feed(s, hello[0]) // the role chunk: bytes, no output
	for range 5 {
		time.Sleep(10 * time.Second)
		r.feed(s, keepalive)
	}
	// 50 s after the headers: 10 s of the first-output limit are left,
	// and the idle limit would fire only 30 s after the last keepalive.
	re := recoveryError(t, await(t, done).err)
	assert.Equal(t, 60*time.Second, r.since(), "the first-output limit, counted from the headers")
	assert.Equal(t, event.StallFirstOutput, re.Failure.Stall)
	assert.Equal(t, event.Classification{Eligible: true, Reason: event.ReasonTransient}, re.Failure.Classification)
	assert.False(t, re.Failure.Progress.Observed.Any())
	var se *layer.StallError
	require.ErrorAs(t, event.Inspect(&re.Failure).Cause, &se)
	assert.Equal(t, 60*time.Second, se.After)
}

func TestReasoningIsOutputForTheFirstOutputLimit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t, openai.New(), stall.Limits{Idle: 30 * time.Second, FirstOutput: 60 * time.Second}, retry.Policy{})
		s := r.p.answer(&script{})
		done := r.stream(context.Background())
		time.Sleep(25 * time.Second)
		r.feed(s, keepalive)
		time.Sleep(25 * time.Second)
		r.feed(s, reasoning)         // after output only the idle limit is armed
		time.Sleep(29 * time.Second) // 79 s after the headers
		r.feed(s, keepalive)
		time.Sleep(29 * time.Second)
		sendAll(s, hello...)
		res := await(t, done)
		require.NoError(t, res.err)
		assert.Equal(t, "Hello", res.text)
		assert.Empty(t, r.failures())
		assert.Equal(t, 108*time.Second, r.since())
	})
}

func TestCancellationWinsOverAPendingLimit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t, openai.New(), stall.Limits{Idle: 30 * time.Second}, retry.Policy{MaxAttempts: 2})
		r.p.answer(&script{})
		ctx, cancel := context.WithCancel(context.Background())
		done := r.stream(ctx)
		time.Sleep(20 * time.Second)
		cancel()
		re := recoveryError(t, await(t, done).err)
		assert.Equal(t, event.OutcomeCancelled, re.Outcome)
		assert.Empty(t, re.Failure.Stall)
		assert.Equal(t, 20*time.Second, r.since())
		time.Sleep(time.Hour)
		for _, f := range r.failures() {
			assert.Empty(t, f.Stall)
		}
		assert.Equal(t, 1, r.p.Count())
	})
}

func TestStallOfALocalProviderNeedsAdmission(t *testing.T) {
	synctest.Test(t, testStallOfALocalProviderNeedsAdmission)
}

func testStallOfALocalProviderNeedsAdmission(t *testing.T) {
	r := newRig(t, ollama.New(), stall.Limits{Idle: 30 * time.Second}, retry.Policy{MaxAttempts: 2})
	r.p.answer(&script{header: http.Header{"Content-Type": {"application/x-ndjson"}}})
	re := recoveryError(t, await(t, r.stream(context.Background())).err)
	assert.Equal(t, 30*time.Second, r.since())
	assert.Equal(t, event.OutcomeAdmissionRequired, re.Outcome, "an eligible Ollama stall is an ambiguous local execution (R8.3)")
	assert.Equal(t, event.StallIdle, re.Failure.Stall)
	assert.True(t, re.Failure.Classification.Eligible)
	assert.Equal(t, 1, r.p.Count())
}

func TestOrdinaryHeaderTimeoutIsRetried(t *testing.T) {
	synctest.Test(t, testOrdinaryHeaderTimeoutIsRetried)
}

func testOrdinaryHeaderTimeoutIsRetried(t *testing.T) {
	r := newRig(t, openai.New(), stall.Limits{Header: 5 * time.Second, Idle: 5 * time.Second}, retry.Policy{MaxAttempts: 2})
	r.p.answer(&script{headers: make(chan struct{})})
	body := recoursetest.OpenAIChat("hi")
	sendAll(r.p.answer(&script{header: http.Header{"Content-Type": {"application/json"}}}), body)
	res := await(t, r.complete(context.Background()))
	assert.Equal(t, []time.Duration{0, 5 * time.Second}, r.eventsAt(event.AttemptStarted))
	require.NoError(t, res.err)
	assert.Equal(t, "hi", res.text)
	require.Len(t, r.failures(), 1)
	assert.Equal(t, event.StallHeader, r.failures()[0].Stall)
}

// A body whose Content-Length promises bytes that never come, on a
// connection held open: the idle limit ends it, and an ordinary 2xx body
// that was cut fails closed (R4.6).
func TestOrdinaryBodyThatNeverComesFailsClosed(t *testing.T) {
	synctest.Test(t, testOrdinaryBodyThatNeverComesFailsClosed)
}

func testOrdinaryBodyThatNeverComesFailsClosed(t *testing.T) {
	r := newRig(t, openai.New(), stall.Limits{Idle: 5 * time.Second}, retry.Policy{MaxAttempts: 2})
	r.p.answer(&script{header: http.Header{"Content-Type": {"application/json"}, "Content-Length": {"1000"}}})
	re := recoveryError(t, await(t, r.complete(context.Background())).err)
	assert.Equal(t, 5*time.Second, r.since())
	assert.Equal(t, event.OutcomeInterrupted, re.Outcome)
	assert.Equal(t, event.ReasonPartialResponse, re.Failure.Classification.Reason)
	assert.Equal(t, event.StallIdle, re.Failure.Stall)
	assert.Equal(t, 1, r.p.Count())
}

func TestNewRefusesInvalidLimits(t *testing.T) {
	for _, tc := range []struct {
		field string
		lim   stall.Limits
	}{
		{"Header", stall.Limits{Header: -1}},
		{"FirstOutput", stall.Limits{FirstOutput: -time.Second}},
		{"Idle", stall.Limits{Idle: layer.MaxDuration + 1}},
	} {
		l, err := stall.New(tc.lim)
		assert.Nil(t, l)
		var pe *layer.PolicyError
		require.ErrorAs(t, err, &pe, tc.field)
		assert.Equal(t, tc.field, pe.Field)
	}
	l, err := stall.New(stall.Limits{Idle: layer.MaxDuration})
	require.NoError(t, err)
	assert.Equal(t, layer.PerAttempt, l.Position())
	assert.Equal(t, "stall", l.Name())
}

func TestZeroLimitsPassThrough(t *testing.T) {
	l, err := stall.New(stall.Limits{})
	require.NoError(t, err)
	next := http.DefaultTransport
	assert.Equal(t, next, l.Wrap(next))
}

// Used on its own, outside any chain (no engine above it), the layer still
// bounds the headers and each wait for bytes; nothing decodes the body, so
// FirstOutput is not applied. In a chain R7.4 holds instead (see
// recoveryoff_test.go).
func TestOutsideAnEngine(t *testing.T) {
	synctest.Test(t, testOutsideAnEngine)
}

func testOutsideAnEngine(t *testing.T) {
	srv, base := recoursetest.ServeMemory(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow-headers" {
			<-r.Context().Done()
			return
		}
		w.WriteHeader(200)
		_, _ = w.Write([]byte(keepalive))
		_ = http.NewResponseController(w).Flush()
		<-r.Context().Done()
	}))
	defer func() {
		srv.CloseClientConnections()
		srv.Close()
		base.CloseIdleConnections()
	}()
	l, err := stall.New(stall.Limits{Header: time.Second, FirstOutput: time.Second, Idle: 2 * time.Second})
	require.NoError(t, err)
	client := &http.Client{Transport: l.Wrap(base)}

	start := time.Now()
	_, err = client.Get(srv.URL + "/slow-headers")
	var se *layer.StallError
	require.ErrorAs(t, err, &se)
	assert.Equal(t, event.StallHeader, se.Limit)
	assert.Equal(t, time.Second, time.Since(start))

	start = time.Now()
	resp, err := client.Get(srv.URL + "/body")
	require.NoError(t, err)
	defer resp.Body.Close()
	// The first read may return the keepalive at once; each wait arms
	// only the idle limit (2 s), never the first-output one (1 s).
	_, err = io.ReadAll(resp.Body)
	require.ErrorAs(t, err, &se)
	assert.Equal(t, event.StallIdle, se.Limit)
	assert.Equal(t, 2*time.Second, time.Since(start))
	assert.False(t, errors.Is(err, context.Canceled))
}

// The privacy canary (R10.5): a provider that echoes the key and the
// prompt before it stalls; no safe output of the stalled call (the error,
// its JSON, the events, the failures) holds either.
func TestStallSafeOutputsHoldNoCanary(t *testing.T) {
	synctest.Test(t, testStallSafeOutputsHoldNoCanary)
}

func testStallSafeOutputsHoldNoCanary(t *testing.T) {
	const key, prompt = "sk-CANARYKEY-stall-0001", "PROMPT-CANARY-stall-secret"
	r := newRig(t, openai.New(), stall.Limits{Idle: 30 * time.Second}, retry.Policy{MaxAttempts: 2})
	s := r.p.answer(&script{header: http.Header{"X-Request-Id": {key}}})
	cl, err := client.New(r.p.srv.URL, r.client.Chain(), client.WithAPIKey(key))
	require.NoError(t, err)
	done := make(chan result, 1)
	go func() {
		var text string
		var err error
		req := &chat.Request{Model: "gpt-test", Messages: []chat.Message{{Role: chat.User, Content: prompt}}}
		for c, e := range cl.Stream(r.ctx, req) {
			if e != nil {
				err = e
				break
			}
			text += c.Content
		}
		done <- result{text, err}
	}()
	r.feed(s, ": "+key+" "+prompt+"\n\n")
	r.feed(s, recoursetest.OpenAIStream("You said " + prompt + " with " + key)[1])
	res := await(t, done)
	re := recoveryError(t, res.err)
	assert.Equal(t, event.StallIdle, re.Failure.Stall)
	var outs []string
	add := func(v any) {
		js, _ := json.Marshal(v)
		outs = append(outs, string(js), fmt.Sprintf("%v", v), fmt.Sprintf("%+v", v))
	}
	outs = append(outs, res.err.Error())
	add(re)
	for _, ev := range r.Events() {
		add(ev)
		if ev.Failure != nil {
			add(*ev.Failure)
		}
	}
	var se *layer.StallError
	require.ErrorAs(t, event.Inspect(&re.Failure).Cause, &se)
	outs = append(outs, se.Error())
	for _, o := range outs {
		assert.NotContains(t, o, key)
		assert.NotContains(t, o, prompt)
		assert.NotContains(t, o, "CANARY")
	}
}

// The limits bound attempts only: while the engine waits for admission and
// sleeps its backoff between two attempts no limit is armed, so any time
// may pass there.
func TestLimitsNeverBoundAdmissionOrBackoff(t *testing.T) {
	synctest.Test(t, testLimitsNeverBoundAdmissionOrBackoff)
}

func testLimitsNeverBoundAdmissionOrBackoff(t *testing.T) {
	admitting, allow := make(chan struct{}), make(chan struct{})
	sleeping, wake := make(chan struct{}), make(chan struct{})
	pol := retry.Policy{
		MaxAttempts: 2,
		Admit: func(ctx context.Context, _ layer.AdmissionRequest) (layer.Decision, error) {
			close(admitting)
			select {
			case <-allow:
				return layer.Allow, nil
			case <-ctx.Done():
				return "", ctx.Err()
			}
		},
		Sleep: func(ctx context.Context, _ time.Duration) error {
			close(sleeping)
			select {
			case <-wake:
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		},
	}
	r := newRig(t, ollama.New(), stall.Limits{Header: time.Minute, FirstOutput: time.Minute, Idle: 30 * time.Second}, pol)
	r.p.answer(&script{header: http.Header{"Content-Type": {"application/x-ndjson"}}})
	sendAll(r.p.answer(&script{header: http.Header{"Content-Type": {"application/x-ndjson"}}}), recoursetest.OllamaStream("Hi")...)
	done := r.stream(context.Background())
	<-admitting // the first attempt's idle limit fired at 30 s
	time.Sleep(time.Hour)
	close(allow)
	<-sleeping
	time.Sleep(time.Hour)
	close(wake)
	res := await(t, done)
	// Two hours between the attempts, far over every limit, ended
	// neither: the second attempt's limits started with it.
	assert.Equal(t, []time.Duration{0, 2*time.Hour + 30*time.Second}, r.eventsAt(event.AttemptStarted))
	require.NoError(t, res.err)
	assert.Equal(t, "Hi", res.text)
	require.Len(t, r.failures(), 1)
	assert.Equal(t, event.StallIdle, r.failures()[0].Stall)
	assert.Equal(t, 2, r.p.Count())
}
