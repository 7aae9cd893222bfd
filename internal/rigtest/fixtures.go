package rigtest

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/recourse-dev/recourse/chat"
	"github.com/recourse-dev/recourse/event"
	"github.com/recourse-dev/recourse/layer"
	"github.com/recourse-dev/recourse/recoursetest"
)

// The fixtures below are shared by the engine's behaviour tests
// (layers/retry) and the chain's assembly and edge tests (chain), so that
// each has one definition. Helpers of a line or two are kept in each test
// package instead.

// Wait is the generous bound for anything that only waits for a loopback
// server or a goroutine; no test depends on it being short.
const Wait = 10 * time.Second

// AwaitResult waits for a call's error, failing the test if it does not
// return within the generous bound (a call that hangs is the failure).
func AwaitResult(t testing.TB, done <-chan error) error {
	t.Helper()
	select {
	case err := <-done:
		return err
	case <-time.After(Wait):
		t.Fatal("the call did not return")
		return nil
	}
}

// EventsOf returns the events of type typ, in order.
func EventsOf(evs []event.Event, typ event.Type) []event.Event {
	var out []event.Event
	for _, e := range evs {
		if e.Type == typ {
			out = append(out, e)
		}
	}
	return out
}

// Repeat returns n copies of s.
func Repeat(s recoursetest.Step, n int) []recoursetest.Step {
	out := make([]recoursetest.Step, n)
	for i := range out {
		out[i] = s
	}
	return out
}

// RateLimited is a 429 carrying the given Retry-After values (each its own
// header field).
func RateLimited(retryAfter ...string) recoursetest.Step {
	var kv []string
	for _, v := range retryAfter {
		kv = append(kv, "Retry-After", v)
	}
	return recoursetest.JSON(429, recoursetest.OpenAIError("requests", "rate_limit_exceeded", "slow down"), kv...)
}

// ErrCaptureHook is the error FailResponseCapture returns.
var ErrCaptureHook = errors.New("capture hook failed")

// FailResponseCapture is an OnWire hook that fails on every response snapshot.
func FailResponseCapture(_ context.Context, s layer.WireSnapshot) error {
	if s.Direction == layer.DirectionResponse {
		return ErrCaptureHook
	}
	return nil
}

// AsRecoveryError returns the *layer.RecoveryError in err's chain, failing
// the test when there is none.
func AsRecoveryError(t testing.TB, err error) *layer.RecoveryError {
	t.Helper()
	if err == nil {
		t.Fatal("want a *layer.RecoveryError, got no error")
	}
	var re *layer.RecoveryError
	if !errors.As(err, &re) {
		t.Fatalf("want a *layer.RecoveryError, got %T: %v", err, err)
	}
	return re
}

// Collect ranges over a chunk stream and returns the content it delivered,
// the completion of its Done chunk and its error.
func Collect(t testing.TB, seq func(func(chat.Chunk, error) bool)) (string, *chat.Completion, error) {
	t.Helper()
	var b strings.Builder
	var comp *chat.Completion
	for ch, err := range seq {
		if err != nil {
			return b.String(), comp, err
		}
		b.WriteString(ch.Content)
		if ch.Done {
			comp = ch.Completion
		}
	}
	return b.String(), comp, nil
}

// Allow is an admission hook that allows every resend.
func Allow(context.Context, layer.AdmissionRequest) (layer.Decision, error) {
	return layer.Allow, nil
}
