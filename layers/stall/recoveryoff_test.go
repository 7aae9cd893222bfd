package stall_test

// R7.4: a stall limit works the same way with recovery off. A chain whose
// engine passes a call through (chain.WithoutRecovery, or a nil per-call
// policy) still counts the call's semantic progress for the first-output
// limit; a chain where nothing could decode the body refuses the limit at
// construction.

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/recourse-dev/recourse/chain"
	"github.com/recourse-dev/recourse/codec"
	"github.com/recourse-dev/recourse/codecs/ollama"
	"github.com/recourse-dev/recourse/codecs/openai"
	"github.com/recourse-dev/recourse/event"
	"github.com/recourse-dev/recourse/layer"
	"github.com/recourse-dev/recourse/layers/retry"
	"github.com/recourse-dev/recourse/layers/stall"
)

// offMode is one way of turning recovery off.
type offMode struct {
	name string
	opts []chain.Option
	ctx  func(context.Context) context.Context
}

func offModes() []offMode {
	return []offMode{
		{"without_recovery", []chain.Option{chain.WithoutRecovery()}, func(ctx context.Context) context.Context { return ctx }},
		// The chain recovers, but this call's context turns it off; the
		// chain's policy would record any event.
		{"nil_call_policy", nil, func(ctx context.Context) context.Context { return retry.WithPolicy(ctx, nil) }},
	}
}

// newOffRig is newRig with recovery off as m says; make it inside a
// testing/synctest bubble.
func newOffRig(t *testing.T, cdc codec.Codec, lim stall.Limits, m offMode) (*rig, *chain.Chain) {
	t.Helper()
	r, ch := newRigWith(t, cdc, lim, retry.Policy{}, m.opts...)
	r.ctx = m.ctx(r.ctx)
	return r, ch
}

// offStream is one streaming provider row: its codec, the Content-Type of
// its stream, a keepalive, and a chunk that carries no output.
type offStream struct {
	name        string
	codec       func() codec.Codec
	contentType string
	keepalive   string
	empty       string
}

func offStreams() []offStream {
	return []offStream{
		{"openai", func() codec.Codec { return openai.New() }, "text/event-stream", keepalive, hello[0]},
		{"ollama", func() codec.Codec { return ollama.New() }, "application/x-ndjson", "\n",
			`{"model":"m","created_at":"2024-01-01T00:00:00Z","message":{"role":"assistant","content":""},"done":false}` + "\n"},
	}
}

// TestR7_4_FirstOutputLimitFiresWithRecoveryOff: with recovery off, a
// stream that keeps itself alive with keepalives and never produces output
// is cut by the first-output limit exactly at its value, as with recovery
// on, while the idle limit never fires; the call stays a plain POST (R1.1):
// the stall error itself, no lifecycle events, one request.
func TestR7_4_FirstOutputLimitFiresWithRecoveryOff(t *testing.T) {
	for _, p := range offStreams() {
		for _, m := range offModes() {
			t.Run(p.name+"/"+m.name, func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) { testFirstOutputLimitFiresWithRecoveryOff(t, p, m) })
			})
		}
	}
}

func testFirstOutputLimitFiresWithRecoveryOff(t *testing.T, p offStream, m offMode) {
	r, _ := newOffRig(t, p.codec(), stall.Limits{Idle: 30 * time.Second, FirstOutput: 60 * time.Second}, m)
	s := r.p.answer(&script{header: http.Header{"Content-Type": {p.contentType}}})
	done := r.stream(r.ctx)
	r.feed(s, p.empty) // bytes, no output
	for range 5 {
		time.Sleep(10 * time.Second)
		r.feed(s, p.keepalive)
	}
	// 10 s of the first-output limit are left; the idle limit
	// would fire 30 s after the last keepalive.
	err := await(t, done).err
	assert.Equal(t, 60*time.Second, r.since(), "the first-output limit, counted from the headers")
	var se *layer.StallError
	require.ErrorAs(t, err, &se)
	assert.Equal(t, event.StallFirstOutput, se.Limit)
	assert.Equal(t, 60*time.Second, se.After)
	var re *layer.RecoveryError
	assert.False(t, errors.As(err, &re), "R1.1: recovery is off, no *RecoveryError")
	assert.Empty(t, r.Events(), "R1.1: no lifecycle events")
	assert.Equal(t, 1, r.p.Count())
}

// TestR7_4_OutputSatisfiesTheFirstOutputLimitWithRecoveryOff: with
// recovery off, the first semantic byte (reasoning here) satisfies the
// first-output limit as it does with recovery on: afterwards only the idle
// limit is armed, and the stream completes.
func TestR7_4_OutputSatisfiesTheFirstOutputLimitWithRecoveryOff(t *testing.T) {
	for _, m := range offModes() {
		t.Run(m.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				r, _ := newOffRig(t, openai.New(), stall.Limits{Idle: 30 * time.Second, FirstOutput: 60 * time.Second}, m)
				s := r.p.answer(&script{})
				done := r.stream(r.ctx)
				time.Sleep(25 * time.Second)
				r.feed(s, keepalive)
				time.Sleep(25 * time.Second)
				r.feed(s, keepalive)         // no output yet: 10 s of the first-output limit left
				r.feed(s, reasoning)         // after output only the idle limit is armed
				time.Sleep(29 * time.Second) // 79 s after the headers
				r.feed(s, keepalive)
				time.Sleep(29 * time.Second)
				sendAll(s, hello...)
				res := await(t, done)
				require.NoError(t, res.err)
				assert.Equal(t, "Hello", res.text)
				assert.Empty(t, r.Events())
				assert.Equal(t, 108*time.Second, r.since())
			})
		})
	}
}

// TestR7_4_FirstOutputLimitFiresForADropInCallWithRecoveryOff: a drop-in
// caller (an http.Client over the chain, no facts from a native client)
// with recovery off gets the same limit: the chain describes the request
// body to decode the stream.
func TestR7_4_FirstOutputLimitFiresForADropInCallWithRecoveryOff(t *testing.T) {
	synctest.Test(t, testFirstOutputLimitFiresForADropInCallWithRecoveryOff)
}

func testFirstOutputLimitFiresForADropInCallWithRecoveryOff(t *testing.T) {
	r, ch := newOffRig(t, openai.New(), stall.Limits{FirstOutput: 60 * time.Second}, offModes()[0])
	s := r.p.answer(&script{})
	hc := &http.Client{Transport: ch}
	body := `{"model":"gpt-test","messages":[{"role":"user","content":"hello"}],"stream":true}`
	req, err := http.NewRequestWithContext(r.ctx, http.MethodPost, r.p.srv.URL+"/v1/chat/completions", strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	resp, err := hc.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	errc := make(chan error, 1)
	go func() {
		_, err := io.ReadAll(resp.Body)
		errc <- err
	}()
	time.Sleep(30 * time.Second)
	r.feed(s, keepalive) // not output: the limit keeps counting
	err = <-errc
	assert.Equal(t, 60*time.Second, r.since())
	var se *layer.StallError
	require.ErrorAs(t, err, &se)
	assert.Equal(t, event.StallFirstOutput, se.Limit)
	assert.Equal(t, 1, r.p.Count())
}

// TestR7_4_ChainRefusesAFirstOutputLimitNothingCanSee: without an engine
// with a codec nothing decodes the body, so a chain refuses a first-output
// limit with a *chain.CompositionError naming it, instead of a limit that
// silently does nothing. The header and idle limits need no decoding.
func TestR7_4_ChainRefusesAFirstOutputLimitNothingCanSee(t *testing.T) {
	first, err := stall.New(stall.Limits{FirstOutput: time.Minute, Idle: time.Minute})
	require.NoError(t, err)
	assert.Equal(t, "FirstOutput", first.ReadsProgress())
	blind, err := retry.New(nil, &retry.Policy{})
	require.NoError(t, err)
	for name, layers := range map[string][]layer.Layer{
		"no engine":               {first},
		"an engine with no codec": {blind, first},
	} {
		t.Run(name, func(t *testing.T) {
			ch, err := chain.New(layers...)
			assert.Nil(t, ch)
			var ce *chain.CompositionError
			require.ErrorAs(t, err, &ce)
			assert.Equal(t, "stall", ce.Name)
			assert.Equal(t, layer.PerAttempt, ce.Position)
			assert.Equal(t, len(layers)-1, ce.Index)
			assert.Contains(t, ce.Error(), "FirstOutput")
		})
	}

	others, err := stall.New(stall.Limits{Header: time.Minute, Idle: time.Minute})
	require.NoError(t, err)
	assert.Empty(t, others.ReadsProgress())
	_, err = chain.New(others)
	require.NoError(t, err, "header and idle limits need no decoding")
	engine, err := retry.New(openai.New(), nil)
	require.NoError(t, err)
	_, err = chain.New(engine, first)
	require.NoError(t, err, "an engine with a codec counts the progress, recovery on or off")
}
