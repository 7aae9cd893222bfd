package rigtest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/recourse-dev/recourse/internal/scripted"
	"github.com/recourse-dev/recourse/layer"
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
func EventsOf(evs []layer.Event, typ layer.EventType) []layer.Event {
	var out []layer.Event
	for _, e := range evs {
		if e.Type == typ {
			out = append(out, e)
		}
	}
	return out
}

// Repeat returns n copies of s.
func Repeat(s scripted.Step, n int) []scripted.Step {
	out := make([]scripted.Step, n)
	for i := range out {
		out[i] = s
	}
	return out
}

// RateLimited is a 429 carrying the given Retry-After values (each its own
// header field).
func RateLimited(retryAfter ...string) scripted.Step {
	var kv []string
	for _, v := range retryAfter {
		kv = append(kv, "Retry-After", v)
	}
	return scripted.JSON(429, scripted.OpenAIError("requests", "rate_limit_exceeded", "slow down"), kv...)
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
