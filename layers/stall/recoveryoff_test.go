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
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/recourse-dev/recourse/chain"
	"github.com/recourse-dev/recourse/codecs/ollama"
	"github.com/recourse-dev/recourse/codecs/openai"
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
		{"nil_call_policy", nil, func(ctx context.Context) context.Context { return chain.WithCallPolicy(ctx, nil) }},
	}
}

// newOffRig is newRig with recovery off as m says. Nothing captures, so
// the rig's sequence holds only the timers the attempt arms.
func newOffRig(t *testing.T, codec layer.Codec, lim stall.Limits, m offMode) (*rig, *chain.Chain) {
	t.Helper()
	seq := make(chan string, 1024)
	r := &rig{t: t, p: newProvider(t), seq: seq}
	r.clock = newFakeClock(seq)
	lim.Clock = r.clock
	st, err := stall.New(lim)
	require.NoError(t, err)
	pol := retry.Policy{OnEvent: func(ev layer.Event) error {
		r.mu.Lock()
		r.events = append(r.events, ev)
		r.mu.Unlock()
		return nil
	}}
	base := http.DefaultTransport.(*http.Transport).Clone()
	t.Cleanup(base.CloseIdleConnections)
	opts := append([]chain.Option{chain.WithPolicy(pol), chain.WithPerAttempt(st), chain.WithTransport(base)}, m.opts...)
	ch, err := chain.Default(codec, opts...)
	require.NoError(t, err)
	r.client, err = chain.NewClient(r.p.srv.URL, ch, chain.WithAPIKey("sk-test"))
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(m.ctx(context.Background()))
	r.ctx = ctx
	t.Cleanup(cancel)
	return r, ch
}

// offFeed writes chunk to the response and returns the timer the attempt
// arms for its next read: the chunk was then received and counted.
func (r *rig) offFeed(s *script, chunk string) string {
	r.t.Helper()
	s.body <- chunk
	return r.armed()
}

// offStream is one streaming provider row: its codec, the Content-Type of
// its stream, a keepalive, and a chunk that carries no output.
type offStream struct {
	name        string
	codec       func() layer.Codec
	contentType string
	keepalive   string
	empty       string
}

func offStreams() []offStream {
	return []offStream{
		{"openai", func() layer.Codec { return openai.New() }, "text/event-stream", keepalive, hello[0]},
		{"ollama", func() layer.Codec { return ollama.New() }, "application/x-ndjson", "\n",
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
				r, _ := newOffRig(t, p.codec(), stall.Limits{Idle: 30 * time.Second, FirstOutput: 60 * time.Second}, m)
				s := r.p.answer(&script{header: http.Header{"Content-Type": {p.contentType}}})
				done := r.stream(r.ctx)
				require.Equal(t, "arm 30s", r.armed(), "the idle limit is the nearer one")
				r.offFeed(s, p.empty) // bytes, no output
				var last string
				for range 5 {
					r.clock.Advance(10 * time.Second)
					last = r.offFeed(s, p.keepalive)
				}
				require.Equal(t, "arm 10s", last, "the first-output limit is now the nearer one")
				r.clock.Advance(9 * time.Second)
				pending(t, done)
				r.clock.Advance(time.Second)

				err := await(t, done).err
				var se *layer.StallError
				require.ErrorAs(t, err, &se)
				assert.Equal(t, layer.StallFirstOutput, se.Limit)
				assert.Equal(t, 60*time.Second, se.After)
				var re *layer.RecoveryError
				assert.False(t, errors.As(err, &re), "R1.1: recovery is off, no *RecoveryError")
				assert.Empty(t, r.Events(), "R1.1: no lifecycle events")
				assert.Equal(t, 1, r.p.Count())
			})
		}
	}
}

// TestR7_4_OutputSatisfiesTheFirstOutputLimitWithRecoveryOff: with
// recovery off, the first semantic byte (reasoning here) satisfies the
// first-output limit as it does with recovery on: afterwards only the idle
// limit is armed, and the stream completes.
func TestR7_4_OutputSatisfiesTheFirstOutputLimitWithRecoveryOff(t *testing.T) {
	for _, m := range offModes() {
		t.Run(m.name, func(t *testing.T) {
			r, _ := newOffRig(t, openai.New(), stall.Limits{Idle: 30 * time.Second, FirstOutput: 60 * time.Second}, m)
			s := r.p.answer(&script{})
			done := r.stream(r.ctx)
			r.armed()
			r.clock.Advance(25 * time.Second)
			r.offFeed(s, keepalive)
			r.clock.Advance(25 * time.Second)
			assert.Equal(t, "arm 10s", r.offFeed(s, keepalive), "no output yet: 10 s of the first-output limit left")
			assert.Equal(t, "arm 30s", r.offFeed(s, reasoning), "after output only the idle limit is armed")
			r.clock.Advance(29 * time.Second) // 79 s after the headers
			r.offFeed(s, keepalive)
			sendAll(s, hello...)
			res := await(t, done)
			require.NoError(t, res.err)
			assert.Equal(t, "Hello", res.text)
			assert.Empty(t, r.Events())
		})
	}
}

// TestR7_4_FirstOutputLimitFiresForADropInCallWithRecoveryOff: a drop-in
// caller (an http.Client over the chain, no facts from a native client)
// with recovery off gets the same limit: the chain describes the request
// body to decode the stream.
func TestR7_4_FirstOutputLimitFiresForADropInCallWithRecoveryOff(t *testing.T) {
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
	assert.Equal(t, "arm 1m0s", r.armed())
	r.clock.Advance(30 * time.Second)
	assert.Equal(t, "arm 30s", r.offFeed(s, keepalive))
	r.clock.Advance(30 * time.Second)
	var se *layer.StallError
	select {
	case err = <-errc:
	case <-time.After(wait):
		t.Fatal("the drop-in body was not cut")
	}
	require.ErrorAs(t, err, &se)
	assert.Equal(t, layer.StallFirstOutput, se.Limit)
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
