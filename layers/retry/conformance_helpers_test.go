package retry_test

import (
	"context"
	"net/http"
	"sync"
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

// Shared fixtures of the non-streaming conformance suite (R1–R12). The
// helpers of recovery_test.go are left alone; these have their own names.
// Those that chain's tests need too and that are more than a line or two
// are defined once in internal/rigtest and bound to their names here.

const completionsPath = "/v1/chat/completions"

// wait is the generous bound for anything that only waits for a loopback
// server or a goroutine; no test depends on it being short.
const wait = rigtest.Wait

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

// repeat returns n copies of s.
var repeat = rigtest.Repeat

// zeroJitter makes every backoff delay 0 (R6.1), so no test waits.
func zeroJitter() float64 { return 0 }

// jitterSeq returns a custom jitter that yields vals in order, cycling; note,
// when set, is called on every sample. It is safe for concurrent use.
func jitterSeq(note func(), vals ...float64) func() float64 {
	var mu sync.Mutex
	i := 0
	return func() float64 {
		mu.Lock()
		defer mu.Unlock()
		if note != nil {
			note()
		}
		v := vals[i%len(vals)]
		i++
		return v
	}
}

var allowHook = rigtest.Allow

// asRecoveryError returns the *layer.RecoveryError in err's chain.
var asRecoveryError = rigtest.AsRecoveryError

// wired gives p a fresh recorder for both its events and its captures, and
// returns it. (The rig records events only, in Rig.Rec.)
func wired(p *retry.Policy) *rigtest.Recorder {
	rec := &rigtest.Recorder{}
	p.OnEvent = rec.OnEvent
	p.OnWire = rec.OnWire
	return rec
}

// eventsOf returns the events of type typ, in order.
var eventsOf = rigtest.EventsOf

// firstFailed returns the safe failure of the first attempt_failed event.
func firstFailed(t testing.TB, evs []event.Event) event.Failure {
	t.Helper()
	failed := eventsOf(evs, event.AttemptFailed)
	require.NotEmpty(t, failed, "no attempt_failed event")
	require.NotNil(t, failed[0].Failure)
	return *failed[0].Failure
}

// count returns how many times s occurs in list.
func count(list []string, s string) int {
	n := 0
	for _, v := range list {
		if v == s {
			n++
		}
	}
	return n
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

// awaitResult waits for a call's error, failing the test if it does not
// return within the generous bound (a call that hangs is the failure).
var awaitResult = rigtest.AwaitResult

// withObserver returns a context whose per-call value reports every
// lifecycle event of the call made with it to f, as a per-call layer does.
func withObserver(ctx context.Context, f func(event.Event)) context.Context {
	lc := &layer.Call{}
	lc.Observe(f)
	return layer.WithCall(ctx, lc)
}
