package retry_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/recourse-dev/recourse/codec"
	"github.com/recourse-dev/recourse/event"
	"github.com/recourse-dev/recourse/internal/attempt"
	"github.com/recourse-dev/recourse/layer"
	"github.com/recourse-dev/recourse/layers/retry"
)

// The engine tests in engine_test.go drive the engine alone: retry.New over
// wire, an in-process scripted provider that plays the stages below the
// engine (it begins and claims each attempt as the sender does, and counts
// the body as the progress stage does). Nothing touches a socket, so every
// test runs inside a synctest bubble with the policy's clocks left nil: the
// real time package, faked by the bubble, drives backoff, Retry-After,
// budget, deadline and admission waits, and a test asserts the exact
// virtual instant each attempt started at.

// wireStep is one scripted answer: a transport error, or a response whose
// body is read back byte by byte and may be cut or stall.
type wireStep struct {
	// after is how long the provider takes before it answers (virtual time).
	after time.Duration
	// err, when set, is returned instead of a response; connected says
	// whether a connection was obtained first (acceptance unknown rather
	// than no).
	err       error
	connected bool
	status    int
	header    http.Header
	body      string
	// cutAt, with cutErr, ends the body with cutErr after cutAt bytes.
	cutAt  int
	cutErr error
	// stallAt, when stall is set, blocks the body's read after stallAt
	// bytes until the request's context is done or the body is closed.
	stallAt int
	stall   bool
}

// answer returns a step answering status with body and header pairs.
func answer(status int, body string, kv ...string) wireStep {
	h := http.Header{"Content-Type": {"application/json"}}
	for i := 0; i+1 < len(kv); i += 2 {
		h.Add(kv[i], kv[i+1])
	}
	return wireStep{status: status, header: h, body: body}
}

// events returns a step answering 200 with an SSE stream of events.
func events(evs ...string) wireStep {
	s := answer(200, "")
	s.header.Set("Content-Type", "text/event-stream")
	for _, e := range evs {
		s.body += e
	}
	return s
}

// cut returns s with its body ended by err after n bytes.
func (s wireStep) cut(n int, err error) wireStep {
	s.cutAt, s.cutErr = n, err
	return s
}

// stalled returns s with its body blocked after n bytes.
func (s wireStep) stalled(n int) wireStep {
	s.stallAt, s.stall = n, true
	return s
}

// taking returns s answered d after the request arrived.
func (s wireStep) taking(d time.Duration) wireStep {
	s.after = d
	return s
}

// refused is a transport failure before any connection: nothing was sent.
func refused() wireStep {
	return wireStep{err: errors.New("dial tcp: connection refused")}
}

// wireRequest is what the scripted provider received.
type wireRequest struct {
	at        time.Duration // virtual time since the wire was made
	method    string
	url       string
	body      []byte
	header    http.Header
	attemptID string
	wire      int
}

// wire is the scripted provider. It is safe for concurrent use.
type wire struct {
	start time.Time
	mu    sync.Mutex
	steps []wireStep
	reqs  []wireRequest
	// abandoned holds the virtual instant at which each request whose
	// context ended while the provider took its time was given up.
	abandoned []time.Duration
}

// newWire returns a provider answering steps in order; its clock starts
// now (inside the bubble, the bubble's now).
func newWire(steps ...wireStep) *wire { return &wire{start: time.Now(), steps: steps} }

// errScriptEnded answers a request the script has no step for.
var errScriptEnded = errors.New("wire: no step left in the script")

func (w *wire) RoundTrip(req *http.Request) (*http.Response, error) {
	a := attempt.From(req.Context())
	if a != nil {
		// As the sender does: attempt_started, then at most one send.
		if err := a.Begin(); err != nil {
			return nil, err
		}
		if !a.ClaimSend() {
			return nil, layer.ErrSecondSend
		}
	}
	var body []byte
	if req.Body != nil {
		body, _ = io.ReadAll(req.Body)
		req.Body.Close()
	}
	r := wireRequest{at: time.Since(w.start), method: req.Method, url: req.URL.String(), body: body, header: req.Header.Clone()}
	if a != nil {
		r.attemptID, r.wire = a.Identity().AttemptID, a.Identity().WireAttempt
	}
	w.mu.Lock()
	w.reqs = append(w.reqs, r)
	var st wireStep
	ok := len(w.steps) > 0
	if ok {
		st, w.steps = w.steps[0], w.steps[1:]
	}
	w.mu.Unlock()
	if !ok {
		return nil, errScriptEnded
	}
	if st.err == nil || st.connected {
		if a != nil {
			a.MarkConnected()
		}
	}
	if st.after > 0 {
		t := time.NewTimer(st.after)
		select {
		case <-req.Context().Done():
			t.Stop()
			w.mu.Lock()
			w.abandoned = append(w.abandoned, time.Since(w.start))
			w.mu.Unlock()
			return nil, req.Context().Err()
		case <-t.C:
		}
	}
	if st.err != nil {
		return nil, st.err
	}
	b := &wireBody{step: st, ctx: req.Context(), closed: make(chan struct{})}
	resp := &http.Response{StatusCode: st.status, Status: http.StatusText(st.status), Header: st.header.Clone(),
		Body: b, ContentLength: -1, Request: req, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1}
	if a != nil {
		// As the progress stage does.
		a.HeadersReceived()
		resp.Body = a.CountBody(resp.Body)
	}
	return resp, nil
}

// requests returns what the provider received, in order.
func (w *wire) requests() []wireRequest {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]wireRequest(nil), w.reqs...)
}

// gaveUp returns the instants recorded in abandoned.
func (w *wire) gaveUp() []time.Duration {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]time.Duration(nil), w.abandoned...)
}

// starts returns the virtual instant of every request.
func (w *wire) starts() []time.Duration {
	var out []time.Duration
	for _, r := range w.requests() {
		out = append(out, r.at)
	}
	return out
}

// wireBody plays a step's body one byte per Read.
type wireBody struct {
	step      wireStep
	ctx       context.Context
	off       int
	closed    chan struct{}
	closeOnce sync.Once
}

func (b *wireBody) Read(p []byte) (int, error) {
	select {
	case <-b.closed:
		return 0, errors.New("wire: read on a closed body")
	default:
	}
	s := b.step
	if s.stall && b.off == s.stallAt {
		select {
		case <-b.ctx.Done():
			return 0, b.ctx.Err()
		case <-b.closed:
			return 0, errors.New("wire: body closed while stalled")
		}
	}
	if s.cutErr != nil && b.off == s.cutAt {
		return 0, s.cutErr
	}
	if b.off >= len(s.body) {
		return 0, io.EOF
	}
	if len(p) == 0 {
		return 0, nil
	}
	p[0] = s.body[b.off]
	b.off++
	return 1, nil
}

func (b *wireBody) Close() error {
	b.closeOnce.Do(func() { close(b.closed) })
	return nil
}

// eventLog records a call's lifecycle events with the virtual instant of
// each. It is safe for concurrent use.
type eventLog struct {
	start time.Time
	mu    sync.Mutex
	evs   []event.Event
	at    []time.Duration
}

func newEventLog() *eventLog { return &eventLog{start: time.Now()} }

func (l *eventLog) OnEvent(ev event.Event) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.evs = append(l.evs, ev)
	l.at = append(l.at, time.Since(l.start))
	return nil
}

func (l *eventLog) types() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]string, len(l.evs))
	for i, e := range l.evs {
		out[i] = string(e.Type)
	}
	return out
}

func (l *eventLog) events() []event.Event {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]event.Event(nil), l.evs...)
}

// of returns the events of type typ with their instants.
func (l *eventLog) of(typ event.Type) (evs []event.Event, at []time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for i, e := range l.evs {
		if e.Type == typ {
			evs, at = append(evs, e), append(at, l.at[i])
		}
	}
	return evs, at
}

// The request bodies of the engine tests.
const (
	openAIBody       = `{"model":"gpt-4o-mini","messages":[{"role":"user","content":"engine canary"}]}`
	openAIStreamBody = `{"model":"gpt-4o-mini","stream":true,"messages":[{"role":"user","content":"engine canary"}]}`
	ollamaBody       = `{"model":"llama3.2","stream":false,"messages":[{"role":"user","content":"engine canary"}]}`
)

// engineRun is one call through the engine alone.
type engineRun struct {
	resp *http.Response
	err  error
	call *layer.Call
	// took is the virtual time from the call's start until RoundTrip
	// returned.
	took time.Duration
}

// recoveryErr returns the call's *layer.RecoveryError.
func (r engineRun) recoveryErr(t *testing.T) *layer.RecoveryError {
	t.Helper()
	var re *layer.RecoveryError
	require.ErrorAs(t, r.err, &re)
	return re
}

// roundTrip sends body to url through retry.New(codec, &p) over w, as a
// native call (typed errors) with the call's *layer.Call in ctx.
func roundTrip(t *testing.T, ctx context.Context, cdc codec.Codec, p retry.Policy, w *wire, url, body string) engineRun {
	t.Helper()
	return roundTripCall(t, ctx, cdc, p, w, url, body, &layer.Call{TypedErrors: true})
}

// roundTripCall is roundTrip with the call's own *layer.Call: a drop-in
// call (TypedErrors false) or one with a resend gate.
func roundTripCall(t *testing.T, ctx context.Context, cdc codec.Codec, p retry.Policy, w *wire, url, body string, lc *layer.Call) engineRun {
	t.Helper()
	eng, err := retry.New(cdc, &p)
	require.NoError(t, err)
	req, err := http.NewRequestWithContext(layer.WithCall(ctx, lc), http.MethodPost, url, bytes.NewReader([]byte(body)))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer sk-engine-test")
	start := time.Now()
	resp, err := eng.Wrap(w).RoundTrip(req)
	return engineRun{resp: resp, err: err, call: lc, took: time.Since(start)}
}

const (
	openAIURL = "https://api.openai.test/v1/chat/completions"
	ollamaURL = "http://127.0.0.1:11434/api/chat"
)

// jitterOf returns a custom jitter returning vs in turn (then 1), and a
// counter of its calls.
func jitterOf(vs ...float64) (func() float64, *int) {
	n := new(int)
	return func() float64 {
		*n++
		if *n <= len(vs) {
			return vs[*n-1]
		}
		return 1
	}, n
}

// ms is n milliseconds.
func ms(n int) time.Duration { return time.Duration(n) * time.Millisecond }

// scriptGate is a resend gate for the engine tests: a fixed local horizon,
// scripted Peek and Reserve verdicts, and a record of what the engine
// asked. It is safe for concurrent use.
type scriptGate struct {
	mu      sync.Mutex
	horizon time.Time
	// raiseOnPeek, when set, moves the local horizon to that long after
	// the first Peek, as a refresh of a shared store would.
	raiseOnPeek time.Duration
	peek        layer.GateVerdict
	reserve     layer.GateVerdict
	deposits    int
	peeks       int
	reserves    int
	settled     []bool // the refund flag of each settled reservation
	cooldowns   []time.Time
}

func (g *scriptGate) Bind(*url.URL, string, http.Header) layer.UpstreamGate { return g }

func (g *scriptGate) Deposit() { g.mu.Lock(); g.deposits++; g.mu.Unlock() }

func (g *scriptGate) Horizon() time.Time { g.mu.Lock(); defer g.mu.Unlock(); return g.horizon }

func (g *scriptGate) Peek(context.Context) layer.GateVerdict {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.peeks++
	if g.raiseOnPeek > 0 && g.peeks == 1 {
		g.horizon = time.Now().Add(g.raiseOnPeek)
	}
	return g.peek
}

func (g *scriptGate) Reserve(context.Context) (layer.Reservation, layer.GateVerdict) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.reserves++
	if g.reserve.Refusal != nil {
		return nil, g.reserve
	}
	return gateReservation{g}, g.reserve
}

func (g *scriptGate) Cooldown(_ context.Context, until time.Time) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.cooldowns = append(g.cooldowns, until)
	return false
}

// record returns a copy of what the engine asked of g.
func (g *scriptGate) record() (deposits, peeks, reserves int, settled []bool, cooldowns []time.Time) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.deposits, g.peeks, g.reserves, append([]bool(nil), g.settled...), append([]time.Time(nil), g.cooldowns...)
}

type gateReservation struct{ g *scriptGate }

func (r gateReservation) Settle(refund bool) {
	r.g.mu.Lock()
	r.g.settled = append(r.g.settled, refund)
	r.g.mu.Unlock()
}
