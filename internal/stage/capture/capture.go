// Package capture is the sensitive OnWire tap (R12). For every actual
// attempt it hands the attempt's hook independent snapshots: the request
// bytes and headers before anything is sent, and the response status,
// headers, bytes and completeness afterwards — also for HTTP failures,
// refused redirects, partial bodies and a transport failure before headers
// (an empty, incomplete snapshot with no status).
//
// Ordinary calls get one response snapshot, taken when the body ends — or,
// when the reader keeps the bytes itself (attempt.BodyCapture, as the retry
// engine does), from the bytes it hands over, so that the body is never
// held twice: a body refused for its size is snapshotted with the first
// bytes the engine kept of it, not complete (R4.9, R12.2).
// Streaming calls get one snapshot per received byte chunk with the exact
// bytes, then an empty end marker whose Complete reports HTTP EOF; the
// sequence index restarts with every attempt (R12.2).
//
// A hook that returns an error or panics ends the attempt with a
// *layer.CaptureError: a failed request capture sends nothing, and a failed
// response capture is terminal (reason capture_failed); neither ever causes
// another request (R12.3). Snapshots are copies: mutating them cannot change
// any later request (R12.4).
package capture

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"

	"github.com/recourse-dev/recourse/codec"
	"github.com/recourse-dev/recourse/internal/attempt"
	"github.com/recourse-dev/recourse/layer"
)

// Layer is the capture stage. The hook comes from the attempt state that
// the engine places in the request context (the policy's OnWire); with
// no hook the layer captures nothing and passes everything through. Either
// way the attempt begins here (attempt.Attempt.Begin), above the per-attempt
// layers. The zero value is ready to use and safe for concurrent use.
type Layer struct{}

// New returns the capture layer.
func New() *Layer { return &Layer{} }

// Name returns "capture".
func (*Layer) Name() string { return "capture" }

// Position returns layer.StageCapture: the engine-owned stage right below
// the engine.
func (*Layer) Position() layer.Position { return layer.StageCapture }

// Wrap returns a RoundTripper that captures around next.
func (*Layer) Wrap(next http.RoundTripper) http.RoundTripper { return tap{next} }

type tap struct{ next http.RoundTripper }

// call runs the hook, turning a panic into an error value.
func call(ctx context.Context, hook layer.WireHook, s layer.WireSnapshot) (cause any) {
	defer func() {
		if r := recover(); r != nil {
			cause = r
		}
	}()
	if err := hook(ctx, s); err != nil {
		return err
	}
	return nil
}

func (t tap) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx := req.Context()
	a := attempt.From(ctx)
	if a == nil {
		return t.next.RoundTrip(req)
	}
	if a.OnWire == nil {
		// Nothing to capture, but the attempt begins here all the same, so
		// that an answer of a per-attempt layer below (one that never
		// reaches the sender) is an attempt, whether or not a hook is set.
		if err := a.Begin(); err != nil {
			return nil, err
		}
		return t.next.RoundTrip(req)
	}
	var reqBytes []byte
	if req.Body != nil && req.Body != http.NoBody {
		if req.GetBody == nil {
			return nil, errors.New("recourse: capture needs a replayable request body (GetBody)")
		}
		rc, err := req.GetBody()
		if err != nil {
			return nil, err
		}
		reqBytes, err = io.ReadAll(rc)
		rc.Close()
		if err != nil {
			return nil, err
		}
	}
	if cause := call(ctx, a.OnWire, layer.WireSnapshot{
		Identity: a.Identity(), Direction: layer.DirectionRequest, Bytes: reqBytes, Header: req.Header.Clone(), Complete: true,
	}); cause != nil {
		return nil, &layer.CaptureError{Direction: layer.DirectionRequest, Cause: cause}
	}
	if err := ctx.Err(); err != nil {
		// Cancelled while the hook ran (a hook that blocked, then returned
		// nil): the request never leaves, and the attempt never begins
		// (R9.1, R9.2).
		return nil, err
	}
	if err := a.Begin(); err != nil {
		return nil, err
	}
	resp, err := t.next.RoundTrip(req)
	if err != nil {
		s := layer.WireSnapshot{Identity: a.Identity(), Direction: layer.DirectionResponse}
		var refused *layer.RedirectError
		if errors.As(err, &refused) {
			s.Status = refused.Response.StatusCode
			s.Header = refused.Response.Header.Clone()
			s.Bytes = bytes.Clone(refused.Body)
			s.Complete = true
		}
		if cause := call(ctx, a.OnWire, s); cause != nil {
			return nil, &layer.CaptureError{Direction: layer.DirectionResponse, Cause: cause, Transport: err}
		}
		return nil, err
	}
	out := *resp
	out.Body = &body{
		rc: resp.Body, ctx: ctx, a: a, status: resp.StatusCode, header: resp.Header.Clone(),
		chunked: a.Info().Operation == codec.Streaming,
	}
	return &out, nil
}

// body snapshots the response as it is read.
type body struct {
	rc      io.ReadCloser
	ctx     context.Context
	a       *attempt.Attempt
	status  int
	header  http.Header
	chunked bool

	buf  []byte // ordinary, unless the reader keeps the bytes: everything read so far
	seq  int
	done bool
	fail *layer.CaptureError

	// keep says that the reader keeps the bytes and hands them over
	// (attempt.BodyCapture); eof and rerr remember how the body ended until
	// it does.
	keep bool
	eof  bool
	rerr error
}

var _ attempt.BodyCapture = (*body)(nil)

// KeepBytes implements attempt.BodyCapture: an ordinary body stops copying
// what is read. It is a no-op for a stream's body.
func (b *body) KeepBytes() {
	if !b.chunked {
		b.keep = true
	}
}

// CaptureBody implements attempt.BodyCapture: the one response snapshot of
// an ordinary body, from the bytes its reader kept — complete when the
// body reached HTTP EOF and was not refused for its size (over). It is a
// no-op returning nil for a stream's body, and for a body that keeps its
// own copy (KeepBytes was not called).
func (b *body) CaptureBody(p []byte, over bool) error {
	if b.chunked || !b.keep {
		return nil
	}
	if b.done {
		if b.fail != nil {
			return b.fail
		}
		return nil
	}
	b.done = true
	complete := b.eof && !over
	if f := b.snapshot(p, complete); f != nil {
		f.Transport = b.rerr
		b.fail = f
		return f
	}
	return nil
}

func (b *body) snapshot(p []byte, complete bool) *layer.CaptureError {
	s := layer.WireSnapshot{
		Identity: b.a.Identity(), Direction: layer.DirectionResponse, Seq: b.seq,
		Bytes: bytes.Clone(p), Header: b.header.Clone(), Status: b.status, Complete: complete,
	}
	if s.Bytes == nil {
		s.Bytes = []byte{}
	}
	b.seq++
	if cause := call(b.ctx, b.a.OnWire, s); cause != nil {
		return &layer.CaptureError{Direction: layer.DirectionResponse, Cause: cause}
	}
	return nil
}

func (b *body) Read(p []byte) (int, error) {
	if b.fail != nil {
		return 0, b.fail
	}
	if b.done || b.eof {
		return 0, io.EOF
	}
	if b.rerr != nil {
		return 0, b.rerr
	}
	n, err := b.rc.Read(p)
	if b.keep {
		// The reader keeps the bytes and hands them over (CaptureBody).
		if err != nil {
			b.eof = err == io.EOF
			if !b.eof {
				b.rerr = err
			}
		}
		return n, err
	}
	if n > 0 {
		if b.chunked {
			if f := b.snapshot(p[:n], false); f != nil {
				// The bytes were read: they are returned with the error,
				// so that the engine keeps them as evidence and hands none
				// of their frames over (R12.3).
				b.fail = f
				return n, f
			}
		} else {
			b.buf = append(b.buf, p[:n]...)
		}
	}
	if err != nil {
		b.done = true
		complete := err == io.EOF
		var f *layer.CaptureError
		if b.chunked {
			f = b.snapshot(nil, complete)
		} else {
			f = b.snapshot(b.buf, complete)
			b.buf = nil
		}
		if f != nil {
			if !complete {
				f.Transport = err
			}
			b.fail = f
			return n, f
		}
	}
	return n, err
}

// Close ends the body. A body closed before its end still gets its final
// (incomplete) snapshot, so that every attempt's capture ends; when that
// snapshot's hook fails, Close returns the *layer.CaptureError (the
// closer decides what it means, R12.3), and otherwise the body's own
// Close error.
func (b *body) Close() error {
	err := b.rc.Close()
	if !b.done && b.fail == nil {
		b.done = true
		// A reader that kept the bytes and closes without handing them
		// over leaves a snapshot without bytes.
		if b.chunked || b.keep {
			b.fail = b.snapshot(nil, false)
		} else {
			b.fail = b.snapshot(b.buf, false)
		}
		if b.fail != nil {
			return b.fail
		}
	}
	return err
}
