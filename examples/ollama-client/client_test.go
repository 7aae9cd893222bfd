package main

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/ollama/ollama/api"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/recourse-dev/recourse/codec"
	"github.com/recourse-dev/recourse/event"
	"github.com/recourse-dev/recourse/layer"
	"github.com/recourse-dev/recourse/recoursetest"
)

// TestMain fails the package if a test leaves a goroutine behind. No
// library goroutine needs to be ignored.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

type recorder struct{ events []event.Event }

func (r *recorder) onEvent(ev event.Event) error {
	r.events = append(r.events, ev)
	return nil
}

func (r *recorder) types() []event.Type {
	var out []event.Type
	for _, ev := range r.events {
		out = append(out, ev.Type)
	}
	return out
}

// hookSpy wraps a decision and records what the hook was asked. The hook
// runs on its own goroutine (admission.Wait), hence the lock.
type hookSpy struct {
	decision layer.Decision
	mu       sync.Mutex
	asked    []layer.AdmissionRequest
}

func (h *hookSpy) hook(_ context.Context, req layer.AdmissionRequest) (layer.Decision, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.asked = append(h.asked, req)
	return h.decision, nil
}

func (h *hookSpy) requests() []layer.AdmissionRequest {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]layer.AdmissionRequest(nil), h.asked...)
}

func start(t *testing.T, script ...recoursetest.Step) *recoursetest.Server {
	t.Helper()
	srv := recoursetest.NewServer(script...)
	t.Cleanup(srv.Close)
	return srv
}

// chat builds the program's client (newClient) with admit and runs exactly
// one non-streaming Chat call.
func chat(t *testing.T, srv *recoursetest.Server, admit layer.AdmissionHook) ([]api.ChatResponse, *recorder, error) {
	t.Helper()
	got, rec, _, err := chatCall(t, srv, admit)
	return got, rec, err
}

// chatCall is chat with a *layer.Call in the request context; it returns
// the Call, whose Result holds the typed error.
func chatCall(t *testing.T, srv *recoursetest.Server, admit layer.AdmissionHook) ([]api.ChatResponse, *recorder, *layer.Call, error) {
	t.Helper()
	base, err := url.Parse(srv.URL)
	require.NoError(t, err)
	rec := &recorder{}
	client, err := newClient(base, admit, rec.onEvent)
	require.NoError(t, err)
	lc := &layer.Call{}
	ctx, cancel := context.WithTimeout(layer.WithCall(context.Background(), lc), 10*time.Second)
	defer cancel()
	var got []api.ChatResponse
	err = client.Chat(ctx, chatRequest("llama3.2", "hello"), func(r api.ChatResponse) error {
		got = append(got, r)
		return nil
	})
	return got, rec, lc, err
}

// requireBusy checks that err is the client's own api.StatusError for the
// final, passed-through 503 and that lc's Result holds the typed error with
// outcome o; it returns that error.
func requireBusy(t *testing.T, err error, lc *layer.Call, o event.Outcome) *layer.RecoveryError {
	t.Helper()
	var serr api.StatusError
	require.True(t, errors.As(err, &serr), "errors.As(api.StatusError) on %T: %v", err, err)
	assert.Equal(t, http.StatusServiceUnavailable, serr.StatusCode)
	assert.Equal(t, ollamaBusy, serr.ErrorMessage, "the provider's message is kept")
	rerr := lc.Result.Err
	require.NotNil(t, rerr, "the typed error is in the call's Result")
	assert.Equal(t, o, rerr.Outcome)
	assert.Equal(t, http.StatusServiceUnavailable, rerr.Failure.HTTPStatus)
	assert.NotContains(t, rerr.Error(), "server busy", "the safe error text holds no body")
	return rerr
}

// assertPOSTs checks that srv received exactly n non-streaming POSTs to
// /api/chat with byte-identical bodies (R2.3).
func assertPOSTs(t *testing.T, srv *recoursetest.Server, n int) {
	t.Helper()
	reqs := srv.Requests()
	require.Len(t, reqs, n, "POSTs that reached the server")
	for i, r := range reqs {
		assert.Equal(t, http.MethodPost, r.Method, "request %d method", i)
		assert.Equal(t, "/api/chat", r.Path, "request %d path", i)
		assert.Contains(t, string(r.Body), `"stream":false`, "request %d body", i)
		assert.True(t, bytes.Equal(reqs[0].Body, r.Body), "request %d body differs from the first", i)
	}
}

func busy() recoursetest.Step {
	return recoursetest.JSON(http.StatusServiceUnavailable, recoursetest.OllamaError(ollamaBusy))
}

// With an allowing hook, a 503 then a 200 is one successful Chat call and
// two POSTs; the hook is asked once, about attempt 2 (R8.1, R8.4).
func TestOllama503Then200WithAllowingHook(t *testing.T) {
	srv := start(t, busy(), recoursetest.JSON(http.StatusOK, recoursetest.OllamaChat("scripted hello")))
	spy := &hookSpy{decision: layer.Allow}

	got, rec, err := chat(t, srv, spy.hook)

	require.NoError(t, err)
	require.Len(t, got, 1, "a non-streaming chat calls fn once")
	assert.Equal(t, "scripted hello", got[0].Message.Content)
	assert.True(t, got[0].Done)
	assert.Equal(t, "stop", got[0].DoneReason)
	assertPOSTs(t, srv, 2)

	asked := spy.requests()
	require.Len(t, asked, 1)
	assert.Equal(t, 2, asked[0].NextAttempt)
	assert.Equal(t, 503, asked[0].Failure.HTTPStatus)
	assert.Equal(t, codec.Ollama, asked[0].Failure.Provider)

	assert.Equal(t, []event.Type{
		event.AttemptStarted, event.AttemptFailed,
		event.AdmissionPending, event.AdmissionAllowed,
		event.DelayScheduled, event.RetryStarted,
		event.AttemptStarted, event.AttemptSucceeded,
	}, rec.types())
}

// The program's own hook (allowBusy) allows exactly this case.
func TestOllama503Then200WithProgramHook(t *testing.T) {
	srv := start(t, busy(), recoursetest.JSON(http.StatusOK, recoursetest.OllamaChat("scripted hello")))

	got, _, err := chat(t, srv, allowBusy)

	require.NoError(t, err)
	require.Len(t, got, 1)
	assert.Equal(t, "scripted hello", got[0].Message.Content)
	assertPOSTs(t, srv, 2)
}

// Without a hook an eligible Ollama failure is never resent (R8.3): the
// final 503 passes through, so the Ollama client returns its own
// api.StatusError (status and message), and the call's Result holds our
// *layer.RecoveryError (outcome admission_required). One POST.
func TestOllama503WithoutHookNeedsAdmission(t *testing.T) {
	srv := start(t, busy(), recoursetest.JSON(http.StatusOK, recoursetest.OllamaChat("must not be fetched")))

	got, rec, lc, err := chatCall(t, srv, nil)

	require.Error(t, err)
	assert.Empty(t, got)
	rerr := requireBusy(t, err, lc, event.OutcomeAdmissionRequired)
	assert.True(t, rerr.Failure.Classification.Eligible, "eligible, but not admitted")
	assert.Len(t, rerr.History, 1)

	assertPOSTs(t, srv, 1)
	assert.Equal(t, []event.Type{
		event.AttemptStarted, event.AttemptFailed, event.AdmissionRequired,
	}, rec.types())
}

// An explicit Reject stops with admission_rejected, one POST (R8.1).
func TestOllama503HookRejects(t *testing.T) {
	srv := start(t, busy(), recoursetest.JSON(http.StatusOK, recoursetest.OllamaChat("must not be fetched")))
	spy := &hookSpy{decision: layer.Reject}

	_, rec, lc, err := chatCall(t, srv, spy.hook)

	requireBusy(t, err, lc, event.OutcomeAdmissionRejected)
	assert.Len(t, spy.requests(), 1)
	assertPOSTs(t, srv, 1)
	assert.Equal(t, []event.Type{
		event.AttemptStarted, event.AttemptFailed,
		event.AdmissionPending, event.AdmissionRejected,
	}, rec.types())
}

// A 400 is permanent (R4.2): the response passes through and the Ollama
// client returns its own api.StatusError; the hook is never asked.
func TestOllamaBadRequestPassesThrough(t *testing.T) {
	srv := start(t, recoursetest.JSON(http.StatusBadRequest, recoursetest.OllamaError("model is required")))
	spy := &hookSpy{decision: layer.Allow}

	_, rec, err := chat(t, srv, spy.hook)

	var serr api.StatusError
	require.True(t, errors.As(err, &serr), "errors.As(api.StatusError) on %T: %v", err, err)
	assert.Equal(t, http.StatusBadRequest, serr.StatusCode)
	assert.Equal(t, "model is required", serr.ErrorMessage)
	var rerr *layer.RecoveryError
	assert.False(t, errors.As(err, &rerr))
	assert.Empty(t, spy.requests())
	assertPOSTs(t, srv, 1)
	assert.Equal(t, []event.Type{event.AttemptStarted, event.AttemptFailed, event.Interrupted}, rec.types())
}

// Three busy answers with an allowing hook exhaust MaxAttempts (3 POSTs):
// the client's api.StatusError for the final 503 and the typed outcome and
// history (in the call's Result) are both reachable.
func TestOllamaExhausted(t *testing.T) {
	srv := start(t, busy(), busy(), busy(), recoursetest.JSON(http.StatusOK, recoursetest.OllamaChat("must not be fetched")))
	spy := &hookSpy{decision: layer.Allow}

	_, _, lc, err := chatCall(t, srv, spy.hook)

	rerr := requireBusy(t, err, lc, event.OutcomeExhausted)
	assert.Len(t, rerr.History, 3)
	assert.Equal(t, 3, rerr.Failure.WireAttempt)
	assert.Len(t, spy.requests(), 2, "asked before attempts 2 and 3 only")
	assertPOSTs(t, srv, 3)
}

// The program itself runs offline by default.
func TestRunOffline(t *testing.T) {
	t.Setenv("OLLAMA_HOST", "")
	var out bytes.Buffer
	require.NoError(t, run(&out))
	s := out.String()
	assert.Contains(t, s, "event admission_allowed   attempt 1/3  http 503 (transient)  next 2")
	assert.Contains(t, s, "answer (llama3.2, done stop): Hello from the scripted server.")
}

// Cancelling the caller's context while the hook deliberates ends recovery
// with outcome cancelled (R8.2, R9.1), after one POST. The Ollama client
// returns http.Client's *url.Error unchanged, so both errors.As (the
// *layer.RecoveryError) and errors.Is (context.Canceled) work.
func TestOllamaCancelDuringAdmission(t *testing.T) {
	srv := start(t, busy(), recoursetest.JSON(http.StatusOK, recoursetest.OllamaChat("must not be fetched")))
	base, err := url.Parse(srv.URL)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	hookDone := make(chan error, 1)
	hook := func(hctx context.Context, _ layer.AdmissionRequest) (layer.Decision, error) {
		cancel() // the caller gives up while the application is asked
		<-hctx.Done()
		hookDone <- hctx.Err()
		return "", hctx.Err()
	}
	rec := &recorder{}
	client, err := newClient(base, hook, rec.onEvent)
	require.NoError(t, err)

	err = client.Chat(ctx, chatRequest("llama3.2", "hello"), func(api.ChatResponse) error { return nil })

	var rerr *layer.RecoveryError
	require.True(t, errors.As(err, &rerr), "errors.As(*layer.RecoveryError) on %T: %v", err, err)
	assert.Equal(t, event.OutcomeCancelled, rerr.Outcome)
	assert.ErrorIs(t, err, context.Canceled)
	select {
	case herr := <-hookDone:
		assert.ErrorIs(t, herr, context.Canceled, "the hook's context was cancelled")
	case <-time.After(5 * time.Second):
		t.Fatal("the hook's context was never cancelled")
	}
	assertPOSTs(t, srv, 1)
	assert.Equal(t, []event.Type{
		event.AttemptStarted, event.AttemptFailed, event.AdmissionPending, event.Cancelled,
	}, rec.types())
}
