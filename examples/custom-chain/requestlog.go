package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/recourse-dev/recourse/event"
	"github.com/recourse-dev/recourse/layer"
)

// NewRequestLog returns a per-call layer, named "requestlog", that writes
// one slog record, "completion", per logical completion however many wire
// attempts it took. A nil logger means slog.Default().
//
// The record holds only facts that are safe to log: the HTTP method, the
// URL path (never the query, the host or a user name), the final HTTP status
// (of the response, or of the last failed attempt), the logical request ID
// and the number of wire attempts, and the duration. A failed call adds the
// classification reason of its final failure, the recovery outcome when
// the engine reported it by then (the call's Result) and the Go type of the
// error RoundTrip returned, if any; never the error's text. The record
// never holds a prompt, a body, a header value, a credential or a tool
// argument. The level is Info for a success and Warn otherwise.
//
// The layer runs outside the engine: it sees the call once, registers an
// observer on the call's *layer.Call (layer.CallOf) and reads the call's
// Result when the engine returns. An ordinary call is logged when RoundTrip
// returns. A stream is logged when it ends (its last attempt succeeds or
// recovery gives up) or, for a drop-in client that stops early, when the
// response body is closed. Without an engine below it the record has no
// ID and no attempt count. The layer is safe for
// concurrent use when the logger's handler is (slog's handlers are).
func NewRequestLog(logger *slog.Logger) layer.Layer {
	return layer.NewPerCall("requestlog", func(next http.RoundTripper) http.RoundTripper {
		return layer.RoundTripperFunc(func(req *http.Request) (*http.Response, error) {
			l := logger
			if l == nil {
				l = slog.Default()
			}
			req, call := layer.CallOf(req)
			rec := &callRecord{
				logger: l, ctx: req.Context(), start: time.Now(),
				method: req.Method, path: req.URL.Path, call: call,
			}
			rec.call.Observe(rec.observe)
			resp, err := next.RoundTrip(req)
			if err != nil {
				rec.write(0, err)
				return nil, err
			}
			rec.setStatus(resp.StatusCode)
			if rec.streaming() {
				// The stream is still open: the observer writes the record
				// when it ends, the body's Close if the reader stops early.
				out := *resp
				out.Body = &loggedBody{ReadCloser: resp.Body, rec: rec}
				return &out, nil
			}
			rec.write(resp.StatusCode, nil)
			return resp, nil
		})
	})
}

// callRecord is what the request log knows about one logical completion.
type callRecord struct {
	logger *slog.Logger
	ctx    context.Context
	start  time.Time
	method string
	path   string
	call   *layer.Call

	once sync.Once

	mu      sync.Mutex
	status  int            // the response status, once RoundTrip returned
	ended   bool           // a terminal event was observed
	last    event.Identity // the identity of the last event
	failure *event.Failure // the failure of a terminal failure event
}

// observe is the call's event observer. It keeps the identity of the last
// event and writes the record at the end of a stream.
func (r *callRecord) observe(ev event.Event) {
	r.mu.Lock()
	r.last = ev.Identity
	terminal := ev.Type == event.AttemptSucceeded || isTerminal(ev.Type)
	if terminal {
		r.ended = true
		if ev.Type != event.AttemptSucceeded && ev.Failure != nil {
			f := *ev.Failure
			r.failure = &f
		}
	}
	status := r.status
	r.mu.Unlock()
	if terminal && status != 0 {
		// RoundTrip already returned a stream: this is its end.
		r.write(status, nil)
	}
}

// isTerminal reports whether t is the event that ends a call without
// success (R11.2).
func isTerminal(t event.Type) bool {
	return slices.ContainsFunc(event.Outcomes(), func(o event.Outcome) bool { return o.TerminalEvent() == t })
}

func (r *callRecord) setStatus(s int) {
	r.mu.Lock()
	r.status = s
	r.mu.Unlock()
}

func (r *callRecord) getStatus() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.status
}

// streaming reports whether RoundTrip returned an open recovering stream:
// the engine handed out a frame reader and no terminal event came yet.
func (r *callRecord) streaming() bool {
	if r.call == nil || r.call.Result.Stream == nil {
		return false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return !r.ended
}

// write writes the record once. err is the error RoundTrip returned, or
// the error a stream ended with.
func (r *callRecord) write(status int, err error) {
	r.once.Do(func() {
		r.mu.Lock()
		last, failure := r.last, r.failure
		r.mu.Unlock()
		attrs := []slog.Attr{
			slog.String("method", r.method),
			slog.String("path", r.path),
		}
		id, attempts := last.LogicalID, last.WireAttempt
		var rerr *layer.RecoveryError
		if r.call != nil {
			res := r.call.Result
			if res.LogicalID != "" {
				id = res.LogicalID
			}
			attempts = max(attempts, res.WireAttempts)
			if res.Err != nil {
				rerr = res.Err
			}
		}
		if err != nil {
			errors.As(err, &rerr)
		}
		if rerr != nil && failure == nil {
			failure = &rerr.Failure
		}
		if status == 0 && failure != nil {
			status = failure.HTTPStatus
		}
		if status != 0 {
			attrs = append(attrs, slog.Int("status", status))
		}
		if failure != nil {
			attrs = append(attrs, slog.String("reason", string(failure.Classification.Reason)))
		}
		if err != nil {
			attrs = append(attrs, slog.String("error", fmt.Sprintf("%T", err)))
		}
		if rerr != nil {
			attrs = append(attrs, slog.String("outcome", string(rerr.Outcome)))
		}
		if id != "" {
			attrs = append(attrs, slog.String("logical_request_id", id), slog.Int("wire_attempts", attempts))
		}
		attrs = append(attrs, slog.Duration("duration", time.Since(r.start)))
		level := slog.LevelInfo
		if err != nil || failure != nil || status/100 != 2 {
			level = slog.LevelWarn
		}
		r.logger.LogAttrs(r.ctx, level, "completion", attrs...)
	})
}

// loggedBody is a stream's body that writes the record when the reader
// sees the end of the stream or closes the body first.
type loggedBody struct {
	io.ReadCloser
	rec *callRecord
}

// Read reads the stream; its end (io.EOF or a read error, the typed
// *layer.RecoveryError when recovery gave up) writes the record.
func (b *loggedBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	switch {
	case err == io.EOF:
		b.rec.write(b.rec.getStatus(), nil)
	case err != nil:
		b.rec.write(0, err)
	}
	return n, err
}

// Close closes the stream and writes the record if nothing wrote it yet.
func (b *loggedBody) Close() error {
	err := b.ReadCloser.Close()
	b.rec.write(b.rec.getStatus(), nil)
	return err
}
