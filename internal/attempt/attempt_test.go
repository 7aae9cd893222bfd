package attempt_test

import (
	"context"
	"io"
	"net/http/httptrace"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/recourse-dev/recourse/codec"
	"github.com/recourse-dev/recourse/event"
	"github.com/recourse-dev/recourse/internal/attempt"
	"github.com/recourse-dev/recourse/layer"
)

// closeCounter is a response body that records its Close.
type closeCounter struct {
	io.Reader
	closed int
}

func (c *closeCounter) Close() error { c.closed++; return nil }

// TestCountBodyAccountsEveryByte reads two bodies of one attempt through
// CountBody: each byte is counted once as raw progress, the wrappers are
// distinct, and closing a wrapper closes its body.
func TestCountBodyAccountsEveryByte(t *testing.T) {
	a := attempt.New(event.Identity{LogicalID: "l", AttemptID: "a", WireAttempt: 1},
		codec.RequestInfo{Operation: codec.Ordinary}, nil, nil, nil)
	first := &closeCounter{Reader: strings.NewReader("hello")}
	second := &closeCounter{Reader: strings.NewReader(" world!")}
	b1 := a.CountBody(first)
	b2 := a.CountBody(second)
	require.NotSame(t, b1, b2)

	got, err := io.ReadAll(b1)
	require.NoError(t, err)
	assert.Equal(t, "hello", string(got))
	assert.EqualValues(t, 5, a.Progress().RawBytes)
	got, err = io.ReadAll(b2)
	require.NoError(t, err)
	assert.Equal(t, " world!", string(got))
	assert.EqualValues(t, 12, a.Progress().RawBytes)

	require.NoError(t, b1.Close())
	require.NoError(t, b2.Close())
	assert.Equal(t, 1, first.closed)
	assert.Equal(t, 1, second.closed)
}

type ctxKey string

// TestWithAttemptCarriesTheAttemptAndItsTrace checks the attempt context:
// it carries the attempt and, when its parent has no trace, the attempt's
// own connection trace, and it keeps the parent's values, deadline and
// cancellation.
func TestWithAttemptCarriesTheAttemptAndItsTrace(t *testing.T) {
	a := attempt.New(event.Identity{LogicalID: "l", AttemptID: "a", WireAttempt: 1},
		codec.RequestInfo{Operation: codec.Ordinary}, nil, nil, nil)
	parent, cancel := context.WithDeadline(context.WithValue(context.Background(), ctxKey("k"), "v"), time.Now().Add(time.Hour))
	ctx := attempt.With(parent, a)

	assert.Same(t, a, attempt.From(ctx))
	assert.Same(t, a.ClientTrace(), httptrace.ContextClientTrace(ctx), "the attempt's trace is in the context")
	assert.Equal(t, "v", ctx.Value(ctxKey("k")))
	dl, ok := ctx.Deadline()
	pdl, _ := parent.Deadline()
	assert.True(t, ok)
	assert.Equal(t, pdl, dl)
	assert.Nil(t, attempt.From(parent))

	// A context derived from it finds both, and is cancelled with it.
	child, stop := context.WithCancel(ctx)
	defer stop()
	assert.Same(t, a, attempt.From(child))
	assert.Same(t, a.ClientTrace(), httptrace.ContextClientTrace(child))
	cancel()
	<-child.Done()
	assert.ErrorIs(t, ctx.Err(), context.Canceled)
	assert.ErrorIs(t, child.Err(), context.Canceled)
}

// TestWithAttemptKeepsACallersTrace checks that a caller's own trace in the
// parent context is left to the sender to compose with: the attempt context
// still answers the caller's trace.
func TestWithAttemptKeepsACallersTrace(t *testing.T) {
	a := attempt.New(event.Identity{LogicalID: "l", AttemptID: "a", WireAttempt: 1},
		codec.RequestInfo{Operation: codec.Ordinary}, nil, nil, nil)
	own := &httptrace.ClientTrace{GotConn: func(httptrace.GotConnInfo) {}}
	ctx := attempt.With(httptrace.WithClientTrace(context.Background(), own), a)
	assert.Same(t, a, attempt.From(ctx))
	assert.Same(t, own, httptrace.ContextClientTrace(ctx))
}

// TestR13_3_IncompleteFrameReachesTheCallerAsAStreamError: a codec ends a
// stream on an incomplete finish with a *codec.IncompleteError, and the
// caller receives the *StreamError with reason incomplete_completion and
// the same finish, whose text is the codec error's; every other frame
// error passes unchanged.
func TestR13_3_IncompleteFrameReachesTheCallerAsAStreamError(t *testing.T) {
	ie := &codec.IncompleteError{FinishReason: "length"}
	got := attempt.FrameError(ie)
	se, ok := got.(*layer.StreamError)
	if !ok {
		t.Fatalf("FrameError(%T) = %T, want *layer.StreamError", ie, got)
	}
	if want := (layer.StreamError{Reason: layer.StreamIncompleteCompletion, FinishReason: "length"}); *se != want {
		t.Errorf("FrameError = %+v, want %+v", *se, want)
	}
	if se.Error() != ie.Error() {
		t.Errorf("text %q, the codec error's %q", se.Error(), ie.Error())
	}
	pe := &codec.ProtocolError{What: "x"}
	if got := attempt.FrameError(pe); got != error(pe) {
		t.Errorf("FrameError(%T) = %v, want it unchanged", pe, got)
	}
	if got := attempt.FrameError(nil); got != nil {
		t.Errorf("FrameError(nil) = %v", got)
	}
}
