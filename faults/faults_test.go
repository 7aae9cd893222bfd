package faults_test

import (
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/recourse-dev/recourse/event"
	"github.com/recourse-dev/recourse/layers/retry"
	"github.com/recourse-dev/recourse/layers/stall"
	"github.com/recourse-dev/recourse/recoursetest"
)

// The limits of the suite: short, real time.
const (
	short = 300 * time.Millisecond
	long  = 3 * time.Second
)

var hello = recoursetest.OpenAIStream("Hel", "lo")

// Latency within the limits: every byte is late, nothing is cut.
func TestLatencyWithinTheLimitsSucceeds(t *testing.T) {
	s := newSuite(t, stall.Limits{Header: long, FirstOutput: long, Idle: long}, retry.Policy{MaxAttempts: 2})
	s.toxic(`{"name":"late","type":"latency","stream":"downstream","attributes":{"latency":100,"jitter":0}}`)
	s.answer(sse(0, hello...))
	text, err := s.stream(nil)
	require.NoError(t, err)
	assert.Equal(t, "Hello", text)
	assert.Empty(t, s.failures())
	assert.Equal(t, 1, s.Requests())
}

// Latency beyond the header limit: every attempt's headers come too late.
func TestLatencyBeyondTheHeaderLimitFiresTheHeaderTimeout(t *testing.T) {
	s := newSuite(t, stall.Limits{Header: short, Idle: long}, retry.Policy{MaxAttempts: 2})
	s.toxic(`{"name":"late","type":"latency","stream":"downstream","attributes":{"latency":1500,"jitter":0}}`)
	s.answer(sse(0, hello...), sse(0, hello...))
	_, err := s.stream(nil)
	re := recoveryError(t, err)
	assert.Equal(t, event.OutcomeExhausted, re.Outcome)
	require.Len(t, re.History, 2)
	for _, f := range re.History {
		assert.Equal(t, event.StallHeader, f.Stall)
		assert.Equal(t, event.CategoryTransport, f.Category)
		assert.True(t, f.Classification.Eligible)
	}
}

// A bandwidth limit trickles the stream (Toxiproxy releases it in bursts
// up to about half a second apart at 8 KB/s): bytes keep coming within the
// idle limit, so no limit cuts a stream that produces output, and the
// content arrives whole.
func TestBandwidthLimitTricklesWithoutFiring(t *testing.T) {
	s := newSuite(t, stall.Limits{Header: long, FirstOutput: long, Idle: long}, retry.Policy{})
	s.toxic(`{"name":"slow","type":"bandwidth","stream":"downstream","attributes":{"rate":8}}`)
	parts := make([]string, 40)
	for i := range parts {
		parts[i] = "word "
	}
	s.answer(sse(0, recoursetest.OpenAIStream(parts...)...))
	text, err := s.stream(nil)
	require.NoError(t, err)
	assert.Equal(t, strings.Repeat("word ", 40), text)
	assert.Empty(t, s.failures())
}

// The slicer cuts every byte stream into packets of a few bytes: the SSE
// framer must reassemble lines and events across reads, keepalives too.
func TestSlicerTinyPacketsTheFramerHolds(t *testing.T) {
	s := newSuite(t, stall.Limits{Header: long, FirstOutput: long, Idle: long}, retry.Policy{})
	s.toxic(`{"name":"slices","type":"slicer","stream":"downstream","attributes":{"average_size":7,"size_variation":3,"delay":200}}`)
	events := append([]string{keepalive}, recoursetest.OpenAIStream("é🙂 ", "sliced ", "stream")...)
	events = append(events[:3], append([]string{keepalive}, events[3:]...)...)
	s.answer(sse(0, events...))
	text, err := s.stream(nil)
	require.NoError(t, err)
	assert.Equal(t, "é🙂 sliced stream", text)
	assert.Empty(t, s.failures())
}

// reset_peer before any output: the connection is reset as the answer
// starts; the attempt is a transport failure, eligible, and the resend
// (after the toxic is gone) answers.
func TestResetPeerBeforeOutputIsRetried(t *testing.T) {
	s := newSuite(t, stall.Limits{Header: long, Idle: long}, retry.Policy{MaxAttempts: 2})
	s.toxic(`{"name":"reset","type":"reset_peer","stream":"downstream","attributes":{"timeout":0}}`)
	var once sync.Once
	s.setOnFailed(func(event.Failure) { once.Do(func() { s.removeToxic("reset") }) })
	s.answer(sse(0, hello...), sse(0, hello...))
	text, err := s.stream(nil)
	require.NoError(t, err)
	assert.Equal(t, "Hello", text)
	require.Len(t, s.failures(), 1)
	f := s.failures()[0]
	assert.Equal(t, event.CategoryTransport, f.Category)
	assert.Empty(t, f.Stall, "a reset is not a stall")
	assert.False(t, f.Progress.Observed.Any())
	assert.True(t, f.Classification.Eligible)
}

// reset_peer after output: the stream breaks after content was delivered;
// it is interrupted, never resent.
func TestResetPeerAfterOutputIsInterrupted(t *testing.T) {
	s := newSuite(t, stall.Limits{Header: long, Idle: long}, retry.Policy{MaxAttempts: 3})
	gate := make(chan struct{})
	s.answer(gated(hello[:2], gate, hello[2:]), sse(0, hello...))
	var once sync.Once
	text, err := s.stream(func(string) {
		once.Do(func() {
			s.toxic(`{"name":"reset","type":"reset_peer","stream":"downstream","attributes":{"timeout":0}}`)
			close(gate)
		})
	})
	re := recoveryError(t, err)
	assert.Equal(t, "Hel", text)
	assert.Equal(t, event.OutcomeInterrupted, re.Outcome)
	assert.Equal(t, event.ReasonSemanticOutput, re.Failure.Classification.Reason)
	assert.Equal(t, event.CategoryTransport, re.Failure.Category)
	assert.Empty(t, re.Failure.Stall)
	assert.Equal(t, 1, s.Requests())
}

// timeout from the start: the connection accepts the request and never
// answers; the header limit ends each attempt.
func TestTimeoutBeforeHeadersFiresTheHeaderTimeout(t *testing.T) {
	s := newSuite(t, stall.Limits{Header: short, FirstOutput: long, Idle: long}, retry.Policy{})
	s.toxic(`{"name":"silent","type":"timeout","stream":"downstream","attributes":{"timeout":0}}`)
	s.answer(sse(0, hello...))
	_, err := s.stream(nil)
	re := recoveryError(t, err)
	assert.Equal(t, event.OutcomeExhausted, re.Outcome)
	assert.Equal(t, event.StallHeader, re.Failure.Stall)
	assert.False(t, re.Failure.Progress.HeadersReceived)
}

// timeout after a keepalive: the connection stops answering before any
// output; the idle limit ends the attempt, which is eligible, and the
// resend (after the toxic is gone) answers.
func TestTimeoutAfterAKeepaliveFiresTheIdleTimeoutAndIsRetried(t *testing.T) {
	s := newSuite(t, stall.Limits{Header: long, FirstOutput: long, Idle: short}, retry.Policy{MaxAttempts: 2})
	gate := make(chan struct{})
	s.answer(gated([]string{keepalive, hello[0]}, gate, hello[1:]), sse(0, hello...))
	s.afterFirstBytes(func() {
		s.toxic(`{"name":"silent","type":"timeout","stream":"downstream","attributes":{"timeout":0}}`)
		close(gate)
	})
	var once sync.Once
	s.setOnFailed(func(event.Failure) { once.Do(func() { s.removeToxic("silent") }) })
	text, err := s.stream(nil)
	require.NoError(t, err)
	assert.Equal(t, "Hello", text)
	require.Len(t, s.failures(), 1)
	f := s.failures()[0]
	assert.Equal(t, event.StallIdle, f.Stall)
	assert.True(t, f.Classification.Eligible)
	assert.False(t, f.Progress.Observed.Any())
	assert.Equal(t, 2, s.Requests())
}

// timeout after output: the connection stops answering mid-answer; the
// idle limit ends the attempt, and the call is interrupted.
func TestTimeoutAfterOutputFiresTheIdleTimeoutAndIsInterrupted(t *testing.T) {
	s := newSuite(t, stall.Limits{Header: long, FirstOutput: long, Idle: short}, retry.Policy{MaxAttempts: 3})
	gate := make(chan struct{})
	s.answer(gated(hello[:2], gate, hello[2:]), sse(0, hello...))
	var once sync.Once
	text, err := s.stream(func(string) {
		once.Do(func() {
			s.toxic(`{"name":"silent","type":"timeout","stream":"downstream","attributes":{"timeout":0}}`)
			close(gate)
		})
	})
	re := recoveryError(t, err)
	assert.Equal(t, "Hel", text)
	assert.Equal(t, event.OutcomeInterrupted, re.Outcome)
	assert.Equal(t, event.StallIdle, re.Failure.Stall)
	assert.Equal(t, event.ReasonSemanticOutput, re.Failure.Classification.Reason)
	assert.Equal(t, 1, s.Requests())
}

// A model that thinks forever behind keepalives: the idle limit never
// fires while they flow, the first-output limit does.
func TestKeepalivesForeverFireTheFirstOutputTimeout(t *testing.T) {
	// Keepalives every 50 ms against a 600 ms idle limit: a wide margin
	// for a loaded machine; the first-output limit is 1.2 s.
	s := newSuite(t, stall.Limits{Header: long, FirstOutput: 4 * short, Idle: 2 * short}, retry.Policy{})
	s.toxic(`{"name":"late","type":"latency","stream":"downstream","attributes":{"latency":10,"jitter":0}}`)
	s.answer(keepalives(short / 6))
	_, err := s.stream(nil)
	re := recoveryError(t, err)
	assert.Equal(t, event.OutcomeExhausted, re.Outcome)
	assert.Equal(t, event.StallFirstOutput, re.Failure.Stall)
	assert.True(t, re.Failure.Classification.Eligible)
	assert.Greater(t, re.Failure.Progress.RawBytes, int64(0), "keepalives arrived")
}
