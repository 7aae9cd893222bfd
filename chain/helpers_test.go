package chain_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/recourse-dev/recourse/chat"
	"github.com/recourse-dev/recourse/codecs/openai"
	"github.com/recourse-dev/recourse/event"
	"github.com/recourse-dev/recourse/internal/rigtest"
	"github.com/recourse-dev/recourse/layer"
	"github.com/recourse-dev/recourse/layers/retry"
	"github.com/recourse-dev/recourse/recoursetest"
)

// Fixtures of the chain's assembly and edge tests. The engine's behaviour
// tests (layers/retry) use the same ones: those of more than a line or two
// are defined once in internal/rigtest and bound to their names here; the
// one- and two-liners are kept in each test package.

const completionsPath = "/v1/chat/completions"

// wait is the generous bound for anything that only waits for a loopback
// server or a goroutine; no test depends on it being short.
const wait = rigtest.Wait

var (
	// allowHook allows every resend.
	allowHook = rigtest.Allow
	// asRecoveryError returns the *layer.RecoveryError in err's chain.
	asRecoveryError = rigtest.AsRecoveryError
	// collect ranges over a chunk stream: content, completion, error.
	collect = rigtest.Collect
	// repeat returns n copies of s.
	repeat = rigtest.Repeat
	// eventsOf returns the events of type typ, in order.
	eventsOf = rigtest.EventsOf
	// awaitResult waits for a call's error, failing the test if it does not
	// return within the generous bound (a call that hangs is the failure).
	awaitResult = rigtest.AwaitResult
	// rateLimited is a 429 carrying the given Retry-After values (each its
	// own header field).
	rateLimited = rigtest.RateLimited
	// failResponseCapture is an OnWire hook that fails on every response snapshot.
	failResponseCapture = rigtest.FailResponseCapture
)

// canaryRequest is an ordinary request whose only message is the prompt canary.
func canaryRequest() *chat.Request {
	return &chat.Request{Model: "gpt-4o-mini", Messages: []chat.Message{{Role: chat.User, Content: rigtest.Prompt}}}
}

// encoded returns the OpenAI encoding of req, as the native client sends it.
func encoded(t testing.TB, req *chat.Request) []byte {
	t.Helper()
	b, err := openai.New().Encode(req)
	require.NoError(t, err)
	return b
}

// okStep answers 200 with an ordinary OpenAI completion holding content.
func okStep(content string) recoursetest.Step {
	return recoursetest.JSON(200, recoursetest.OpenAIChat(content))
}

// statusStep answers status with an OpenAI server_error body.
func statusStep(status int) recoursetest.Step {
	return recoursetest.JSON(status, recoursetest.OpenAIError("server_error", "server_error", "busy"))
}

// zeroJitter makes every backoff delay 0 (R6.1), so no test waits.
func zeroJitter() float64 { return 0 }

// wired gives p a fresh recorder for both its events and its captures, and
// returns it. (The rig records events only, in Rig.Rec.)
func wired(p *retry.Policy) *rigtest.Recorder {
	rec := &rigtest.Recorder{}
	p.OnEvent = rec.OnEvent
	p.OnWire = rec.OnWire
	return rec
}

// newTransport returns a private HTTP transport whose idle connections are
// closed when the test ends.
func newTransport(t testing.TB) *http.Transport {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	t.Cleanup(tr.CloseIdleConnections)
	return tr
}

// startServer starts a scripted provider closed when the test ends.
func startServer(t testing.TB, steps ...recoursetest.Step) *recoursetest.Server {
	s := recoursetest.NewServer(steps...)
	t.Cleanup(s.Close)
	return s
}

// withObserver returns a context whose per-call value reports every
// lifecycle event of the call made with it to f, as a per-call layer does.
func withObserver(ctx context.Context, f func(event.Event)) context.Context {
	lc := &layer.Call{}
	lc.Observe(f)
	return layer.WithCall(ctx, lc)
}
