// Package stall bounds each wire attempt with three opt-in stall limits
// that know a keepalive from output:
//
//   - Header: from the moment the attempt's request is handed to the
//     transport (connecting and writing the request included) until the
//     response headers arrive. It protects against a provider or proxy that
//     accepts the connection and never answers, or trickles its headers.
//   - FirstOutput: from the response headers until the first semantic byte
//     — reasoning, content or a tool fragment, as the codec decodes it.
//     Keepalives (SSE comments, blank NDJSON lines, oMLX keepalive frames)
//     and empty role deltas are not output. It protects against a stream
//     that keeps itself alive forever and never produces anything.
//   - Idle: the longest the attempt waits for its next byte while it is
//     being read; any byte, keepalives included, starts the wait again. It
//     protects against a connection that went silent mid-stream, or a body
//     whose Content-Length promises bytes that never come.
//
// A limit that fires ends the attempt with a *layer.StallError naming it;
// the engine records the limit in the safe Failure (Failure.Stall), its
// events and its span. Before the first semantic byte the failure is a
// transport failure, eligible like any other (Ollama and oMLX still need
// admission, R8.3); after it the call is interrupted (R13.1), and the
// broker's continuation may continue from the closed blocks (R17.3).
//
// The limits bound one attempt each. They never bound the admission wait or
// the backoff between attempts (those belong to the policy's Budget and
// Deadline, R7), they never cut a stream that produces output within them,
// and the caller's cancellation always wins: a cancelled call ends as
// cancelled, never as a stall. A limit ends only the wait it bounds: one
// whose timer goes off just as the headers or the awaited bytes arrive,
// after the wait is over, does nothing, and once the consumer has closed
// the body no limit fires. Time a consumer spends not reading (a paused
// stream) is not idle time: the idle wait is measured only while a read is
// waiting for the provider. The first-output wait is measured on the clock
// from the headers.
//
// The layer sits at layer.PerAttempt, below the engine's progress stage,
// so it sees the raw bytes and reads the attempt's progress (layer.Attempt)
// to know whether semantic output has arrived. Every limit works the same
// with recovery off (R7.4): with a FirstOutput limit the layer is a
// layer.ProgressReader, and a chain counts the progress of a call that its
// engine passes through (chain.WithoutRecovery, or a nil per-call policy)
// for it; a chain without an engine with a codec, which alone decodes the
// body, refuses the layer (a *chain.CompositionError naming FirstOutput).
// Used on its own, outside any chain (no layer.Attempt in the request
// context), nothing decodes the body and FirstOutput is not applied;
// Header and Idle still are.
package stall

import (
	"context"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/recourse-dev/recourse/event"
	"github.com/recourse-dev/recourse/layer"
)

// Limits are the stall limits of one attempt. A zero limit is off; the zero
// Limits turns every limit off and the layer passes requests through.
type Limits struct {
	// Header bounds the wait for the response headers, from the moment the
	// request is handed to the transport; 0 means no limit.
	Header time.Duration
	// FirstOutput bounds the time from the response headers to the first
	// semantic byte (reasoning, content or a tool fragment) that the
	// attempt's reads spend waiting for the provider: a consumer's pause
	// between reads does not count, as for Idle, so output that arrived
	// while the consumer paused is never cut. Keepalives do not count as
	// output. 0 means no limit. Set it above the longest time
	// a reasoning model may think before its first token. It needs a chain
	// whose engine has a codec, also when recovery is off (R7.4).
	FirstOutput time.Duration
	// Idle bounds each wait for the next received byte, keepalives
	// included; 0 means no limit. Set it above the longest silence the
	// provider keeps while a model thinks.
	Idle time.Duration
}

// Layer is the stall-limit layer. It is safe for concurrent use. The
// limits run on the time package's clock: each attempt gets one timer that
// every wait for the provider re-arms, so a read allocates nothing. A test
// that needs a limit to elapse without waiting runs the call inside a
// testing/synctest bubble, whose clock the timers follow.
type Layer struct {
	lim Limits
	// afterFunc, when set (by the package's own tests only), replaces the
	// re-armed timer: it is called for every wait and returns what stops
	// that wait's timer. It lets a test run a timer's callback after the
	// wait it bounds is over, an interleaving no clock can produce on
	// demand.
	afterFunc func(d time.Duration, f func()) stopper
}

// stopper stops a pending timer callback; *time.Timer is one.
type stopper interface {
	// Stop prevents the call if it has not started and reports whether it
	// did so (like time.Timer.Stop).
	Stop() bool
}

// New returns a stall layer with the limits l. A negative limit, or one
// above layer.MaxDuration, is a *layer.PolicyError naming the field ("Header",
// "FirstOutput" or "Idle"), and New returns no layer.
func New(l Limits) (*Layer, error) {
	for _, f := range []struct {
		name string
		d    time.Duration
	}{{"Header", l.Header}, {"FirstOutput", l.FirstOutput}, {"Idle", l.Idle}} {
		if f.d < 0 || f.d > layer.MaxDuration {
			return nil, layer.NewPolicyError(f.name)
		}
	}
	return &Layer{lim: l}, nil
}

// Name returns "stall".
func (*Layer) Name() string { return "stall" }

// Position returns layer.PerAttempt: the limits bound each wire attempt.
func (*Layer) Position() layer.Position { return layer.PerAttempt }

// ReadsProgress returns "FirstOutput" when the layer has a first-output
// limit, which reads the attempt's semantic progress, and "" otherwise
// (layer.ProgressReader): a chain then counts that progress for it also
// with recovery off, or refuses it where nothing decodes the body (R7.4).
func (l *Layer) ReadsProgress() string {
	if l.lim.FirstOutput > 0 {
		return "FirstOutput"
	}
	return ""
}

// Limits returns the layer's limits, as given to New.
func (l *Layer) Limits() Limits { return l.lim }

// KeepsRequest returns true: the layer sends a shallow copy of the request
// it is given with a context of its own, and never reads or changes its
// header, URL or body (layer.RequestKeeper), so a chain hands it the
// attempt's request uncopied (R2.3, R2.8).
func (*Layer) KeepsRequest() bool { return true }

// Wrap returns a RoundTripper that applies the limits to every request it
// sends through next.
func (l *Layer) Wrap(next http.RoundTripper) http.RoundTripper {
	if l.lim.Header == 0 && l.lim.FirstOutput == 0 && l.lim.Idle == 0 {
		return next
	}
	return &transport{l: l, next: next}
}

type transport struct {
	l    *Layer
	next http.RoundTripper
}

// RoundTrip sends req through next under a context of its own, which a
// limit that fires cancels. The caller's request is not modified.
func (t *transport) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx, cancel := context.WithCancel(req.Context())
	w := &watch{lim: t.l.lim, afterFunc: t.l.afterFunc, cancel: cancel, a: layer.AttemptFrom(req.Context())}
	var timer stopper
	g := w.begin()
	if d := w.lim.Header; d > 0 {
		timer = w.arm(d, event.StallHeader, g)
	}
	resp, err := t.next.RoundTrip(req.WithContext(ctx))
	if timer != nil {
		timer.Stop()
	}
	if fired := w.end(); fired != "" {
		// The limit fired while the headers were awaited; a response that
		// raced it is abandoned, its context already cancelled.
		if resp != nil {
			resp.Body.Close()
		}
		cancel()
		return nil, w.stallError(fired)
	}
	if err != nil {
		cancel()
		return nil, err
	}
	if w.lim.FirstOutput == 0 && w.lim.Idle == 0 {
		resp.Body = &releasing{ReadCloser: resp.Body, cancel: cancel}
		return resp, nil
	}
	w.rc = resp.Body
	// A RoundTripper's response belongs to its caller: its body is wrapped
	// in place rather than copied.
	resp.Body = w
	return resp, nil
}

// releasing releases the attempt's context when the body is closed.
type releasing struct {
	io.ReadCloser
	cancel context.CancelFunc
}

func (r *releasing) Close() error {
	err := r.ReadCloser.Close()
	r.cancel()
	return err
}

// watch holds one attempt's limits and is its response body.
type watch struct {
	lim    Limits
	cancel context.CancelFunc
	a      layer.Attempt // nil outside an engine
	rc     io.ReadCloser

	// waited is how long the attempt's reads have waited for the provider
	// since the headers, before any semantic output: the time FirstOutput
	// bounds. A consumer's pause between reads does not count.
	waited time.Duration
	output bool // semantic output was counted: FirstOutput is satisfied

	// timer is the attempt's one timer, calling fireArmed, re-armed for
	// every wait instead of a timer and a callback per wait; it is nil
	// until the first wait. afterFunc is the Layer's test hook, nil
	// outside the package's tests.
	timer     *time.Timer
	afterFunc func(d time.Duration, f func()) stopper

	mu     sync.Mutex
	fired  event.StallLimit
	closed bool
	// gen numbers the waits for the provider (the headers, then every
	// read); waiting says that wait gen is under way. A timer may fire
	// only during its own wait: a callback that started just before its
	// Stop (time.AfterFunc's Stop then reports false) runs after the wait
	// ended, finds it over, and does nothing.
	gen     uint64
	waiting bool
	// armedGen, armedLimit and deadline describe the wait the timer was
	// last armed for (see arm).
	armedGen   uint64
	armedLimit event.StallLimit
	deadline   time.Time
}

// arm starts the timer of wait g: limit fires once d has elapsed, unless
// the timer is stopped first. The watch's one timer is re-armed
// (time.Timer.Reset) and reports to fireArmed, so a wait costs no
// allocation; the test hook afterFunc instead gets a callback for each
// wait.
func (w *watch) arm(d time.Duration, limit event.StallLimit, g uint64) stopper {
	if w.afterFunc != nil {
		return w.afterFunc(d, func() { w.fire(limit, g) })
	}
	w.mu.Lock()
	// The deadline is taken before the timer is armed, so it is never
	// later than the moment the timer goes off.
	w.armedGen, w.armedLimit, w.deadline = g, limit, time.Now().Add(d)
	w.mu.Unlock()
	if w.timer == nil {
		w.timer = time.AfterFunc(d, w.fireArmed)
	} else {
		w.timer.Reset(d)
	}
	return w.timer
}

// fireArmed is the timer's callback: it fires the limit of the
// wait the timer was last armed for once that wait's deadline has passed.
// A callback that started for an earlier wait just before its Stop, and
// runs only after the timer was re-armed for a later one, finds the later
// deadline still ahead and does nothing (the re-armed timer calls again);
// fire itself ignores a wait that is already over.
func (w *watch) fireArmed() {
	w.mu.Lock()
	g, limit, deadline := w.armedGen, w.armedLimit, w.deadline
	w.mu.Unlock()
	if time.Now().Before(deadline) {
		return
	}
	w.fire(limit, g)
}

// begin starts a wait for the provider and returns its number.
func (w *watch) begin() uint64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.gen++
	w.waiting = true
	return w.gen
}

// end ends the current wait and returns the limit that fired, if one did
// (during this wait or an earlier one).
func (w *watch) end() event.StallLimit {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.waiting = false
	return w.fired
}

// fire records that limit fired during wait g and cancels the attempt's
// context, which ends the pending round trip or read. It does nothing when
// wait g is over (the provider answered in time and the timer's callback
// lost the race with its Stop), when the body was closed (the consumer's
// Close wins), or when a limit already fired (the first is the one
// reported).
func (w *watch) fire(limit event.StallLimit, g uint64) {
	w.mu.Lock()
	ok := w.fired == "" && !w.closed && w.waiting && w.gen == g
	if ok {
		w.fired = limit
	}
	w.mu.Unlock()
	if ok {
		w.cancel()
	}
}

// spend fires the first-output limit outside a wait, once the reads have
// waited all of it; it reports whether it did (not after a Close, nor once
// another limit fired).
func (w *watch) spend() bool {
	w.mu.Lock()
	ok := w.fired == "" && !w.closed
	if ok {
		w.fired = event.StallFirstOutput
	}
	w.mu.Unlock()
	if ok {
		w.cancel()
	}
	return ok
}

func (w *watch) firedLimit() event.StallLimit {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.fired
}

func (w *watch) stallError(limit event.StallLimit) *layer.StallError {
	after := w.lim.Idle
	switch limit {
	case event.StallHeader:
		after = w.lim.Header
	case event.StallFirstOutput:
		after = w.lim.FirstOutput
	}
	return &layer.StallError{Limit: limit, After: after}
}

// Read reads from the provider's body with the nearer of the idle and the
// first-output limits armed for as long as the read waits.
func (w *watch) Read(p []byte) (int, error) {
	if fired := w.firedLimit(); fired != "" {
		return 0, w.stallError(fired)
	}
	if !w.output && w.a != nil && w.a.Progress().Observed.Any() {
		// The progress stage above accounted every byte returned so far
		// before this read was asked for.
		w.output = true
	}
	var (
		d     time.Duration
		limit event.StallLimit
	)
	if w.lim.Idle > 0 {
		d, limit = w.lim.Idle, event.StallIdle
	}
	counting := w.lim.FirstOutput > 0 && !w.output && w.a != nil
	var start time.Time
	if counting {
		rem := w.lim.FirstOutput - w.waited
		if rem <= 0 && w.spend() {
			// The reads already waited the whole limit without output (a
			// read that returned just at it): the limit is spent, and
			// racing a timer of 0 against this read would decide by chance.
			return 0, w.stallError(event.StallFirstOutput)
		}
		if limit == "" || rem <= d {
			d, limit = max(rem, 0), event.StallFirstOutput
		}
		start = time.Now()
	}
	var timer stopper
	g := w.begin()
	if limit != "" {
		timer = w.arm(d, limit, g)
	}
	n, err := w.rc.Read(p)
	if timer != nil {
		timer.Stop()
	}
	if counting {
		w.waited += time.Since(start)
	}
	if fired := w.end(); fired != "" {
		// The limit fired while the read waited: what it returned (bytes
		// that raced the timer, or the error of the cancelled read) ends
		// with the stall.
		return n, w.stallError(fired)
	}
	return n, err
}

// Close closes the provider's body, stops every limit and releases the
// attempt's context.
func (w *watch) Close() error {
	w.mu.Lock()
	w.closed = true
	w.mu.Unlock()
	err := w.rc.Close()
	w.cancel()
	return err
}
