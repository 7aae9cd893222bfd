//go:build !race

package chain_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/recourse-dev/recourse/chain"
	"github.com/recourse-dev/recourse/chat"
	"github.com/recourse-dev/recourse/client"
	"github.com/recourse-dev/recourse/codecs/openai"
	"github.com/recourse-dev/recourse/event"
	"github.com/recourse-dev/recourse/internal/rigtest"
	"github.com/recourse-dev/recourse/layer"
	"github.com/recourse-dev/recourse/layers/retry"
	"github.com/recourse-dev/recourse/layers/stall"
	"github.com/recourse-dev/recourse/recoursetest"
)

// answering is a base transport that answers every request in memory with
// a fresh 200 carrying answer, after reading the request's body, and
// records whether the request it got could be replayed (GetBody).
type answering struct {
	answer     []byte
	header     http.Header
	replayable bool
	lastHeader http.Header // the last request's header
}

func (a *answering) RoundTrip(req *http.Request) (*http.Response, error) {
	a.replayable, a.lastHeader = req.GetBody != nil, req.Header
	if req.Body != nil {
		_, _ = io.Copy(io.Discard, req.Body)
		req.Body.Close()
	}
	return &http.Response{StatusCode: http.StatusOK, Header: a.header, Body: io.NopCloser(bytes.NewReader(a.answer)),
		ContentLength: int64(len(a.answer)), Request: req}, nil
}

// dropInAllocs returns the allocations of one drop-in call through ch over
// base, minus those of the same call made directly on base (the request
// and the in-memory answer): what the chain itself allocates.
func dropInAllocs(t *testing.T, ch http.RoundTripper, base *answering, body []byte) float64 {
	t.Helper()
	call := func(rt http.RoundTripper) func() {
		return func() {
			req, err := http.NewRequestWithContext(context.Background(), http.MethodPost, "http://provider.test/v1/chat/completions", bytes.NewReader(body))
			if err != nil {
				t.Fatal(err)
			}
			req.Header = http.Header{"Content-Type": {"application/json"}}
			resp, err := rt.RoundTrip(req)
			if err != nil {
				t.Fatal(err)
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
	}
	direct := testing.AllocsPerRun(200, call(base))
	return testing.AllocsPerRun(200, call(ch)) - direct // base records the chain's request last
}

// TestR2_8_DirectChainSendsTheAttemptWithoutReplay pins what R2.8 saves: in
// a chain whose only stages below the engine are its own, with no OnWire
// hook, the attempt reaches the base transport without a replay function
// (GetBody), and the engine builds none and the sender makes no copy to
// drop it. The chain's own allocations per drop-in call are then at most
// 14: the header copy (3) and the body copy (1) of R2.3, the first body's
// reader (1), the attempt's request and context (2, R2.1), its trace (1,
// R9.2), the attempt, its observer and its begin callback (3), the
// response buffer (1, R4.6), the call (1) and its IDs (1, R10.1); with the
// replay function and the sender's copy it was 16. With a hook, or with a
// per-attempt layer, the attempt is still replayable (the race detector
// adds allocations of its own, so this file is built without it).
func TestR2_8_DirectChainSendsTheAttemptWithoutReplay(t *testing.T) {
	body := encoded(t, canaryRequest())
	newBase := func() *answering {
		return &answering{answer: []byte(recoursetest.OpenAIChat("ok")), header: http.Header{"Content-Type": {"application/json"}}}
	}

	base := newBase()
	direct, err := chain.Default(openai.New(), chain.WithTransport(base))
	require.NoError(t, err)
	allocs := dropInAllocs(t, direct, base, body)
	assert.False(t, base.replayable, "a direct chain's attempt carries no GetBody")
	assert.LessOrEqual(t, allocs, 14.0, "the chain's own allocations per drop-in call")

	hooked := newBase()
	pol := retry.Policy{OnWire: func(context.Context, layer.WireSnapshot) error { return nil }}
	withHook, err := chain.Default(openai.New(), chain.WithPolicy(pol), chain.WithTransport(hooked))
	require.NoError(t, err)
	_ = dropInAllocs(t, withHook, hooked, body)
	assert.False(t, hooked.replayable, "the sender still sends a non-replayable request (R2.1)")

	var seen bool
	layered := newBase()
	probe := layerFunc(func(req *http.Request, next http.RoundTripper) (*http.Response, error) {
		seen = req.GetBody != nil
		return next.RoundTrip(req)
	})
	withLayer, err := chain.Default(openai.New(), chain.WithPerAttempt(probe), chain.WithTransport(layered))
	require.NoError(t, err)
	_ = dropInAllocs(t, withLayer, layered, body)
	assert.True(t, seen, "a per-attempt layer gets a replayable attempt")
	assert.False(t, layered.replayable, "the sender still sends a non-replayable request (R2.1)")
}

// layerFunc is a per-attempt layer that runs f around its next.
type layerFunc func(req *http.Request, next http.RoundTripper) (*http.Response, error)

func (layerFunc) Name() string             { return "probe" }
func (layerFunc) Position() layer.Position { return layer.PerAttempt }
func (f layerFunc) Wrap(next http.RoundTripper) http.RoundTripper {
	return roundTripFunc(func(req *http.Request) (*http.Response, error) { return f(req, next) })
}

// TestR11_1_AttemptStartedCostsNoAllocationOfItsOwn pins the cost of the
// attempt_started notification: the engine's call is its attempts'
// notification target (attempt.NewFor), not a method value made for
// each call, so a drop-in call through a direct chain allocates at most
// 13 times in the chain (see TestR2_8_DirectChainSendsTheAttemptWithoutReplay
// for the others), and the event is still emitted once per attempt.
func TestR11_1_AttemptStartedCostsNoAllocationOfItsOwn(t *testing.T) {
	base := &answering{answer: []byte(recoursetest.OpenAIChat("ok")), header: http.Header{"Content-Type": {"application/json"}}}
	ch, err := chain.Default(openai.New(), chain.WithTransport(base))
	require.NoError(t, err)
	assert.LessOrEqual(t, dropInAllocs(t, ch, base, encoded(t, canaryRequest())), 13.0, "the chain's own allocations per drop-in call")

	var started int
	ctx := withObserver(context.Background(), func(e event.Event) {
		if e.Type == event.AttemptStarted {
			started++
		}
	})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://provider.test/v1/chat/completions", bytes.NewReader(encoded(t, canaryRequest())))
	require.NoError(t, err)
	resp, err := ch.RoundTrip(req)
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	assert.Equal(t, 1, started, "attempt_started once")
}

// TestR13_8_ClosedStreamGivesItsLineBufferBack streams a drop-in SSE
// answer, in memory, through a direct chain again and again, reading each
// to its end and closing it: the line buffer of a closed stream's decoder
// serves the next stream, as its read buffer does, so a stream in steady
// state allocates neither: a stream left open costs both (8 KiB) more. The
// bytes read are the stream's exact frames every time.
func TestR13_8_ClosedStreamGivesItsLineBufferBack(t *testing.T) {
	payload := strings.Join(recoursetest.OpenAIStream("Hello", " world"), "")
	base := &answering{answer: []byte(payload), header: http.Header{"Content-Type": {"text/event-stream"}}}
	ch, err := chain.Default(openai.New(), chain.WithTransport(base))
	require.NoError(t, err)
	body := encoded(t, &chat.Request{Model: "gpt-4o-mini", Stream: true, Messages: []chat.Message{{Role: chat.User, Content: "hi"}}})
	var got []byte
	stream := func() {
		req, err := http.NewRequestWithContext(context.Background(), http.MethodPost, "http://provider.test/v1/chat/completions", bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		resp, err := ch.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		got, err = io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	stream() // the first stream's buffer is new
	before := bufferBytes(t, stream)
	assert.Equal(t, payload, string(got), "the frames, exactly")

	// The same streams, without closing the body: each holds its buffer.
	open := func() {
		req, err := http.NewRequestWithContext(context.Background(), http.MethodPost, "http://provider.test/v1/chat/completions", bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		resp, err := ch.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		got, err = io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
	}
	held := bufferBytes(t, open)
	assert.Equal(t, payload, string(got))
	assert.GreaterOrEqual(t, held-before, 7168.0,
		"a stream left open keeps its read buffer and its line buffer (4 KiB each); a closed one gave both back")
}

// bufferBytes returns the bytes f allocates, averaged over 50 runs.
func bufferBytes(t *testing.T, f func()) float64 {
	t.Helper()
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	for range 50 {
		f()
	}
	runtime.ReadMemStats(&m1)
	return float64(m1.TotalAlloc-m0.TotalAlloc) / 50
}

// TestR2_3_KeepingLayerGetsTheAttemptUncopied puts the stall layer, which
// keeps the request it is given (layer.RequestKeeper), below the engine,
// with all three limits on and none firing: the chain then neither copies
// the header and URL for it (R2.3) nor gives the attempt a replay function
// (R2.8), so the layer costs a call only its own allocations, at most 6
// (its cancellable context and the Done channel net/http asks it for, the
// request carrying it, the watch, its timer); with the copies it was 13.
// The provider still gets the call's header and body.
func TestR2_3_KeepingLayerGetsTheAttemptUncopied(t *testing.T) {
	body := encoded(t, canaryRequest())
	newBase := func() *answering {
		return &answering{answer: []byte(recoursetest.OpenAIChat("ok")), header: http.Header{"Content-Type": {"application/json"}}}
	}
	plainBase := newBase()
	plain, err := chain.Default(openai.New(), chain.WithTransport(plainBase))
	require.NoError(t, err)
	stallBase := newBase()
	limits, err := stall.New(stall.Limits{Header: time.Minute, FirstOutput: time.Minute, Idle: time.Minute})
	require.NoError(t, err)
	withStall, err := chain.Default(openai.New(), chain.WithPerAttempt(limits), chain.WithTransport(stallBase))
	require.NoError(t, err)

	extra := dropInAllocs(t, withStall, stallBase, body) - dropInAllocs(t, plain, plainBase, body)
	assert.LessOrEqual(t, extra, 6.0, "the stall layer's allocations per call beyond the plain chain's")
	assert.False(t, stallBase.replayable, "no replay function reaches the base transport")

	var sent *http.Request
	probeBase := roundTripFunc(func(req *http.Request) (*http.Response, error) {
		sent = req
		b, err := io.ReadAll(req.Body)
		require.NoError(t, err)
		assert.Equal(t, body, b, "the call's body")
		return &http.Response{StatusCode: http.StatusOK, Header: http.Header{"Content-Type": {"application/json"}},
			Body: io.NopCloser(strings.NewReader(recoursetest.OpenAIChat("ok"))), Request: req}, nil
	})
	ch, err := chain.Default(openai.New(), chain.WithPerAttempt(limits), chain.WithTransport(probeBase))
	require.NoError(t, err)
	req, err := http.NewRequestWithContext(context.Background(), http.MethodPost, "http://provider.test/v1/chat/completions", bytes.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+rigtest.Key)
	resp, err := ch.RoundTrip(req)
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	require.NotNil(t, sent)
	assert.Equal(t, "Bearer "+rigtest.Key, sent.Header.Get("Authorization"), "the call's header")
}

// TestR2_3_NativeCallCopiesItsHeaderOnce pins what a native call allocates
// for its request's header and per-call value: the client's header (its
// credential included) is copied once per call into one map whose values
// share one backing array with the Content-Type and Accept the client adds
// (R2.3), and the call's per-call value and its request facts are one
// allocation. A whole native call over an in-memory transport then
// allocates at most 30 times; with Header.Clone and two Header.Set calls,
// and the facts apart from the call, it was 33.
func TestR2_3_NativeCallCopiesItsHeaderOnce(t *testing.T) {
	answer := []byte(recoursetest.OpenAIChat("hi"))
	base := &answering{answer: answer, header: http.Header{"Content-Type": {"application/json"}}}
	ch, err := chain.Default(openai.New(), chain.WithTransport(base))
	require.NoError(t, err)
	c, err := client.New("http://provider.test", ch, client.WithAPIKey("sk-test"), client.WithHeader("X-Team", "a"))
	require.NoError(t, err)
	req := &chat.Request{Model: "m", Messages: []chat.Message{{Role: chat.User, Content: "Say hi."}}}
	var got string
	allocs := testing.AllocsPerRun(200, func() {
		comp, err := c.Complete(context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		got = comp.Message.Content
	})
	assert.Equal(t, "hi", got)
	assert.Equal(t, "Bearer sk-test", base.lastHeader.Get("Authorization"))
	assert.Equal(t, []string{"a"}, base.lastHeader.Values("X-Team"))
	assert.Equal(t, "application/json", base.lastHeader.Get("Content-Type"))
	assert.Equal(t, "application/json", base.lastHeader.Get("Accept"))
	assert.LessOrEqual(t, allocs, 30.0, "allocations of one native call")
}

// TestR2_8_RecoveredNativeCallBuildsNoReplay pins what a native call
// saves in a direct chain: the engine keeps the bytes of its
// *layer.RequestBody and nothing else reads the request's body, so the
// request carries no replay function (GetBody) and the call allocates at
// most 30 times over an in-memory transport (31 with it). A layer above
// the engine still gets a replay function over the body's bytes, and a
// call without recovery, which the engine passes through, is still sent.
func TestR2_8_RecoveredNativeCallBuildsNoReplay(t *testing.T) {
	answer := []byte(recoursetest.OpenAIChat("hi"))
	req := &chat.Request{Model: "m", Messages: []chat.Message{{Role: chat.User, Content: "Say hi."}}}
	newClient := func(t *testing.T, opts ...chain.Option) (*client.Client, *answering) {
		base := &answering{answer: answer, header: http.Header{"Content-Type": {"application/json"}}}
		ch, err := chain.Default(openai.New(), append(opts, chain.WithTransport(base))...)
		require.NoError(t, err)
		c, err := client.New("http://provider.test", ch, client.WithAPIKey("sk-test"))
		require.NoError(t, err)
		return c, base
	}
	complete := func(t *testing.T, c *client.Client, ctx context.Context) {
		comp, err := c.Complete(ctx, req)
		require.NoError(t, err)
		require.Equal(t, "hi", comp.Message.Content)
	}

	c, _ := newClient(t)
	allocs := testing.AllocsPerRun(200, func() { complete(t, c, context.Background()) })
	assert.LessOrEqual(t, allocs, 30.0, "allocations of one recovered native call")

	var replay []byte
	probe := layer.NewPerCall("probe", func(next http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(r *http.Request) (*http.Response, error) {
			replay = nil
			if r.GetBody != nil {
				rc, err := r.GetBody()
				require.NoError(t, err)
				replay, _ = io.ReadAll(rc)
			}
			return next.RoundTrip(r)
		})
	})
	c, _ = newClient(t, chain.WithPerCall(probe))
	complete(t, c, context.Background())
	assert.Contains(t, string(replay), `"Say hi."`, "a layer above the engine can read the body again")

	c, base := newClient(t)
	complete(t, c, retry.WithPolicy(context.Background(), nil))
	assert.Equal(t, "Bearer sk-test", base.lastHeader.Get("Authorization"), "a call without recovery is sent")
}

// failingFirst answers its first request with a 503 and every later one
// as answering does.
type failingFirst struct {
	answering
	calls int
}

func (f *failingFirst) RoundTrip(req *http.Request) (*http.Response, error) {
	f.calls++
	if f.calls == 1 {
		_, _ = io.Copy(io.Discard, req.Body)
		req.Body.Close()
		return &http.Response{StatusCode: http.StatusServiceUnavailable, Header: http.Header{}, Body: io.NopCloser(strings.NewReader("busy")),
			ContentLength: 4, Request: req}, nil
	}
	return f.answering.RoundTrip(req)
}

// TestR2_1_FirstAttemptLivesInItsCall pins that the engine keeps a call's
// first attempt in the call itself (attempt.InitFor): a drop-in call
// through a direct chain allocates at most 12 times in the chain (13 with
// an attempt of its own). A call with a resend still gets a new attempt
// for its second wire attempt, with its own ID and its own progress, and
// the first attempt's progress is what its attempt_failed event reported.
func TestR2_1_FirstAttemptLivesInItsCall(t *testing.T) {
	base := &answering{answer: []byte(recoursetest.OpenAIChat("ok")), header: http.Header{"Content-Type": {"application/json"}}}
	ch, err := chain.Default(openai.New(), chain.WithTransport(base))
	require.NoError(t, err)
	assert.LessOrEqual(t, dropInAllocs(t, ch, base, encoded(t, canaryRequest())), 12.0, "the chain's own allocations per drop-in call")

	ff := &failingFirst{answering: answering{answer: []byte(recoursetest.OpenAIChat("ok")), header: http.Header{"Content-Type": {"application/json"}}}}
	ch, err = chain.Default(openai.New(), chain.WithPolicy(retry.Policy{MaxAttempts: 2, BaseDelay: new(time.Duration(0))}), chain.WithTransport(ff))
	require.NoError(t, err)
	var events []event.Event
	ctx := withObserver(context.Background(), func(e event.Event) { events = append(events, e) })
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://provider.test/v1/chat/completions", bytes.NewReader(encoded(t, canaryRequest())))
	require.NoError(t, err)
	resp, err := ch.RoundTrip(req)
	require.NoError(t, err)
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	assert.Contains(t, string(body), `"ok"`)
	require.Equal(t, 2, ff.calls)

	var started []event.Identity
	var failed *event.Event
	for i, e := range events {
		switch e.Type {
		case event.AttemptStarted:
			started = append(started, e.Identity)
		case event.AttemptFailed:
			failed = &events[i]
		}
	}
	require.Len(t, started, 2)
	assert.Equal(t, []int{1, 2}, []int{started[0].WireAttempt, started[1].WireAttempt})
	assert.NotEqual(t, started[0].AttemptID, started[1].AttemptID, "each attempt has its own ID")
	assert.Equal(t, started[0].LogicalID, started[1].LogicalID)
	require.NotNil(t, failed)
	assert.Equal(t, started[0].AttemptID, failed.AttemptID)
	assert.Equal(t, int64(4), failed.Progress.RawBytes, "the first attempt's own progress: its 503 body")
}
