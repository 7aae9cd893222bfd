// Package attempt is the wire state of one attempt: what the recovery
// engine, its stages, the sender and the chain share about an attempt's
// request while it is on the wire (its begin notification, the one send it
// may make, its phase, connection, progress counters, codec observer and
// stream frames). Package layer shows a layer only a read-only view of it
// (layer.Attempt); everything here is the engine's.
package attempt

import (
	"context"
	"io"
	"net/http/httptrace"
	"sync"

	"github.com/recourse-dev/recourse/codec"
	"github.com/recourse-dev/recourse/event"
	"github.com/recourse-dev/recourse/internal/attemptkey"
	"github.com/recourse-dev/recourse/layer"
)

// BodyCapture is implemented by a response body while capture is on (the
// capture stage, which package chain installs). By default the body of an
// ordinary or structured response keeps its own copy of the bytes read, for its one
// response snapshot (R12.2). A reader that keeps the bytes itself — the
// retry engine, which holds the whole body, or only the first bytes of a
// body over its limit — calls KeepBytes before reading and CaptureBody once
// it has read, so that no body is held twice and a refused oversize body
// costs its limit once (R4.9). For a stream's body both are no-ops: its
// snapshots are taken chunk by chunk as it is read.
type BodyCapture interface {
	// KeepBytes tells the body that its reader keeps the bytes and hands
	// them over with CaptureBody: from then on the body copies nothing as
	// it is read.
	KeepBytes()
	// CaptureBody takes the response snapshot from b, the bytes the reader
	// kept: the body as read, or, when over is true, the first bytes of a
	// body refused for its size (that snapshot is not Complete). The
	// snapshot holds its own copy of b. CaptureBody returns the
	// *CaptureError of a failed hook (with the body's read error as its
	// Transport, if there was one), or nil. Only its first call, before
	// Close, takes the snapshot; a later call returns the same result.
	CaptureBody(b []byte, over bool) error
}

// Attempt is the typed per-attempt state that the retry layer places in the
// request context for the wire-plane layers (capture, progress, redirect
// guard, sender), reached with From; it is the layer.Attempt that
// layer.AttemptFrom returns. Its methods are safe for concurrent use.
type Attempt struct {
	// Codec is the provider codec of the call.
	Codec codec.Codec
	// OnWire is the sensitive capture hook, nil when capture is off.
	OnWire layer.WireHook

	id       event.Identity
	info     codec.RequestInfo
	mu       sync.Mutex
	onBegin  Beginner
	began    bool
	beginErr error
	progress event.Progress
	observer codec.Observer
	phase    event.Phase
	dialed   bool
	sent     bool
	finished bool
	trace    httptrace.ClientTrace
	counted  countingBody // CountBody's first wrapper
}

// New returns attempt state. onBegin, if not nil, runs once when the
// request is about to leave (see Begin).
func New(id event.Identity, info codec.RequestInfo, cdc codec.Codec, onWire layer.WireHook, onBegin func() error) *Attempt {
	var b Beginner
	if onBegin != nil {
		b = beginFunc(onBegin)
	}
	return NewFor(id, info, cdc, onWire, b)
}

// NewFor is New with the notification as a Beginner, whose
// BeginAttempt, when b is not nil, runs once when the request is about to
// leave (see Begin). A caller that already holds a value with such a
// method (the retry engine's call) passes it instead of a method value,
// which would cost an allocation per call.
func NewFor(id event.Identity, info codec.RequestInfo, cdc codec.Codec, onWire layer.WireHook, b Beginner) *Attempt {
	return InitFor(new(Attempt), id, info, cdc, onWire, b)
}

// InitFor is NewFor in place: it sets up the attempt at a,
// which must be a zero Attempt nobody else holds, and returns a. A caller
// that keeps an attempt inside a value of its own (the retry engine's call
// keeps its first one) saves the attempt's allocation; a must then live as
// long as anything may hold the attempt (a request's context, a response
// body), which a field of a heap value does.
func InitFor(a *Attempt, id event.Identity, info codec.RequestInfo, cdc codec.Codec, onWire layer.WireHook, b Beginner) *Attempt {
	a.id, a.info, a.Codec, a.OnWire, a.onBegin, a.phase = id, info, cdc, onWire, b, event.PhaseConnecting
	if cdc != nil {
		a.observer = cdc.NewObserver(info)
	}
	return a
}

// Beginner is notified when an attempt's request is about to leave: its
// BeginAttempt runs once per attempt, from Begin, and a non-nil error
// keeps the request from being sent (see Begin).
type Beginner interface {
	BeginAttempt() error
}

// beginFunc is a func as a Beginner.
type beginFunc func() error

func (f beginFunc) BeginAttempt() error { return f() }

// Identity returns the attempt's identity (R10.1).
func (a *Attempt) Identity() event.Identity { return a.id }

// Info returns what the codec learned of the attempt's request.
func (a *Attempt) Info() codec.RequestInfo { return a.info }

// Begin marks that the request passed request capture and is about to be
// sent; the first call runs the attempt_started notification. It is called
// by the capture layer and by the sender, and is idempotent. A non-nil error
// (an event observer failed) means the request must not be sent: the caller
// returns that error.
func (a *Attempt) Begin() error {
	a.mu.Lock()
	if a.began {
		err := a.beginErr
		a.mu.Unlock()
		return err
	}
	a.began = true
	f := a.onBegin
	a.mu.Unlock()
	if f == nil {
		return nil
	}
	err := f.BeginAttempt()
	a.mu.Lock()
	a.beginErr = err
	a.mu.Unlock()
	return err
}

// ClaimSend reports whether the attempt's request may be sent: true the
// first time it is called, false afterwards. The sender calls it, so that an
// attempt is at most one POST (R2.1) whatever the layers above it do.
func (a *Attempt) ClaimSend() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.sent {
		return false
	}
	a.sent = true
	return true
}

// Began reports whether Begin was called.
func (a *Attempt) Began() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.began
}

// SetPhase records the attempt's current phase.
func (a *Attempt) SetPhase(p event.Phase) {
	a.mu.Lock()
	a.phase = p
	a.mu.Unlock()
}

// Phase returns the attempt's current phase.
func (a *Attempt) Phase() event.Phase {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.phase
}

// MarkConnected records that a connection was obtained, so bytes may have
// reached the server.
func (a *Attempt) MarkConnected() {
	a.mu.Lock()
	a.dialed = true
	if a.phase == event.PhaseConnecting {
		a.phase = event.PhaseAwaitingHeaders
	}
	a.mu.Unlock()
}

// Connected reports whether a connection was obtained for the request. When
// it was not, nothing was sent (acceptance "no").
func (a *Attempt) Connected() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.dialed
}

// Finish records that the engine accepted the attempt's terminal frame: a
// stream that ends there, possibly before HTTP EOF. The sender then reads
// and discards what little of the body remains (the end of the chunked
// encoding) when the body is closed, so that the connection returns to the
// pool instead of being closed.
func (a *Attempt) Finish() {
	a.mu.Lock()
	a.finished = true
	a.mu.Unlock()
}

// Finished reports whether Finish was called.
func (a *Attempt) Finished() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.finished
}

// ClientTrace returns the attempt's own trace, whose GotConn calls
// MarkConnected. With's context usually carries it already;
// otherwise the sender adds it to the request context. It lives in the
// attempt, so the trace costs no allocation of its own. The trace is set up
// by the first call and is the same afterwards.
func (a *Attempt) ClientTrace() *httptrace.ClientTrace {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.trace.GotConn == nil {
		a.trace.GotConn = func(httptrace.GotConnInfo) { a.MarkConnected() }
	}
	return &a.trace
}

// FreeBuffers hands the buffers of the attempt's observer back for other
// streams, when it is a BufferFreer (see there); otherwise it does nothing.
// The engine calls it once the stream's body is closed.
func (a *Attempt) FreeBuffers() {
	a.mu.Lock()
	defer a.mu.Unlock()
	if f, ok := a.observer.(codec.BufferFreer); ok {
		f.FreeBuffers()
	}
}

// HeadersReceived records that response headers arrived.
func (a *Attempt) HeadersReceived() {
	a.mu.Lock()
	a.progress.HeadersReceived = true
	a.phase = event.PhaseBody
	a.mu.Unlock()
}

// Received accounts raw body bytes and the semantic evidence they carry.
// The progress layer calls it before any capture hook sees p (R12.3).
func (a *Attempt) Received(p []byte) {
	if len(p) == 0 {
		return
	}
	a.mu.Lock()
	a.progress.RawBytes += int64(len(p))
	if a.observer != nil {
		a.observer.Write(p)
		a.progress.Observed = a.observer.Observed()
	}
	a.mu.Unlock()
}

// CountBody returns rc wrapped so that every byte read from it is accounted
// with Received as it is read; closing the wrapper closes rc. The progress
// layer wraps each response body with it. The first wrapper lives in the
// attempt itself and costs no allocation; later calls return new ones.
func (a *Attempt) CountBody(rc io.ReadCloser) io.ReadCloser {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.counted.rc == nil {
		a.counted = countingBody{rc: rc, a: a}
		return &a.counted
	}
	return &countingBody{rc: rc, a: a}
}

// countingBody is the body CountBody returns.
type countingBody struct {
	rc io.ReadCloser
	a  *Attempt
}

func (b *countingBody) Read(p []byte) (int, error) {
	n, err := b.rc.Read(p)
	if n > 0 {
		b.a.Received(p[:n])
	}
	return n, err
}

func (b *countingBody) Close() error { return b.rc.Close() }

// Deliver adds c to the delivered counters.
func (a *Attempt) Deliver(c codec.Counts) {
	a.mu.Lock()
	a.progress.Delivered = a.progress.Delivered.Add(c)
	a.mu.Unlock()
}

// SetDelivered sets the delivered counters.
func (a *Attempt) SetDelivered(c codec.Counts) {
	a.mu.Lock()
	a.progress.Delivered = c
	a.mu.Unlock()
}

// Progress returns a snapshot of the attempt's progress.
func (a *Attempt) Progress() event.Progress {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.progress
}

// With returns a context that carries a. When ctx carries no
// httptrace.ClientTrace, the returned context also carries a's own trace
// (ClientTrace) for net/http, in the same context value, so that the sender
// need not add it; otherwise the sender composes a's trace with the one in
// ctx, as httptrace.WithClientTrace does.
func With(ctx context.Context, a *Attempt) context.Context {
	if traceKey == nil || httptrace.ContextClientTrace(ctx) != nil {
		return context.WithValue(ctx, attemptkey.Key{}, a)
	}
	a.ClientTrace()
	return &attemptContext{Context: ctx, a: a}
}

// attemptContext carries an attempt and its trace: one context value
// instead of two. Its Done, Err and Deadline are its parent's.
type attemptContext struct {
	context.Context
	a *Attempt
}

func (c *attemptContext) Value(key any) any {
	switch key {
	case attemptkey.Key{}:
		return c.a
	case traceKey:
		return &c.a.trace
	}
	return c.Context.Value(key)
}

// String names the context without its values.
func (c *attemptContext) String() string { return "layer.With" }

// traceKey is the key under which net/http/httptrace keeps a ClientTrace
// in a context (the package does not export it): the key its
// ContextClientTrace asks for, found once by asking.
var traceKey = func() any {
	p := &keyProbe{Context: context.Background()}
	httptrace.ContextClientTrace(p)
	return p.key
}()

// keyProbe is a context that records the key of the last Value call.
type keyProbe struct {
	context.Context
	key any
}

func (p *keyProbe) Value(key any) any {
	p.key = key
	return nil
}

type passThroughKey struct{}

// WithPassThrough returns a context that marks its request as passed
// through by a recovery engine that does not recover it (recovery off for
// the call, R1.1): such a request carries no attempt, and the sender of a
// chain with an engine sends it as a chain without one would, instead of
// refusing it with ErrDetachedRequest. The engine sets it; other layers have
// no reason to.
func WithPassThrough(ctx context.Context) context.Context {
	return context.WithValue(ctx, passThroughKey{}, true)
}

// PassedThrough reports whether ctx carries WithPassThrough's mark.
func PassedThrough(ctx context.Context) bool {
	v, _ := ctx.Value(passThroughKey{}).(bool)
	return v
}

// From returns the attempt state in ctx, or nil outside a recovery
// layer. Wire-plane layers must work (as plain pass-through) when it is nil.
func From(ctx context.Context) *Attempt {
	a, _ := ctx.Value(attemptkey.Key{}).(*Attempt)
	return a
}

// NextFrame returns the next decoded frame of a streaming attempt, or
// ok=false when none is queued (or the codec decodes no frames). A frame's
// Err is the one FrameError returns for the decoder's.
func (a *Attempt) NextFrame() (f codec.Frame, ok bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	d, isDec := a.observer.(codec.StreamDecoder)
	if !isDec {
		return codec.Frame{}, false
	}
	f, ok = d.Next()
	if f.Err != nil {
		f.Err = FrameError(f.Err)
	}
	return f, ok
}

// Observer returns the attempt's observer: the one its codec returned, or
// the one UseObserver set; nil without a codec.
func (a *Attempt) Observer() codec.Observer {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.observer
}

// UseObserver replaces the attempt's observer with o (a resume read's
// decoder, R19.9). It must be called before the attempt's request is sent;
// a nil o is ignored.
func (a *Attempt) UseObserver(o codec.Observer) {
	if o == nil {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.observer = o
}

// Decodes reports whether the attempt's codec decodes stream frames.
func (a *Attempt) Decodes() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	_, ok := a.observer.(codec.StreamDecoder)
	return ok
}

// EndStream tells the stream decoder that HTTP EOF arrived and returns its
// verdict: nil, or the error of an incomplete stream. The decoder may queue
// frames as it ends (StreamDecoder.End): the caller takes them with
// NextFrame before acting on the verdict.
func (a *Attempt) EndStream() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if d, ok := a.observer.(codec.StreamDecoder); ok {
		return d.End()
	}
	return nil
}

// FrameError returns err, the Err of a frame a codec's stream decoder
// queued, as the caller sees it: a *codec.IncompleteError becomes the
// *StreamError with reason incomplete_completion and the same finish
// reason (R13.3); any other error, nil included, is returned unchanged.
func FrameError(err error) error {
	if ie, ok := err.(*codec.IncompleteError); ok {
		return &layer.StreamError{Reason: layer.StreamIncompleteCompletion, FinishReason: ie.FinishReason}
	}
	return err
}

// The engine's attempt is the layer.Attempt a layer reads.
var _ layer.Attempt = (*Attempt)(nil)
