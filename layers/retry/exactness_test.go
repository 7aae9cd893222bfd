package retry_test

// Exactness of ordinary calls and of the failure evidence shared with
// streams: what Inspect keeps of a failed response capture (R10.5, R12.3),
// what a cancellation inside the request-capture hook reports (R9.2,
// R10.2), and cancellation from inside the attempt_succeeded observer
// (R9.1, R9.2, R13.5). Fixtures are in exactness_helpers_test.go.

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/recourse-dev/recourse/chain"
	"github.com/recourse-dev/recourse/client"
	"github.com/recourse-dev/recourse/codecs/openai"
	"github.com/recourse-dev/recourse/event"
	"github.com/recourse-dev/recourse/internal/rigtest"
	"github.com/recourse-dev/recourse/layer"
	"github.com/recourse-dev/recourse/layers/retry"
	"github.com/recourse-dev/recourse/recoursetest"
)

// errExHook is the error of a failing capture hook.
var errExHook = errors.New("capture storage unavailable")

// TestR10_5_ResponseCaptureFailureKeepsCause: when the response capture
// fails and no transport error occurred, the capture's error is both the
// private Cause and the CaptureCause (R10.5, R12.3) — for a 2xx and a non-2xx
// answer, for ordinary and streaming calls, for an error and a panic.
func TestR10_5_ResponseCaptureFailureKeepsCause(t *testing.T) {
	hooks := []struct {
		name  string
		hook  layer.WireHook
		check func(t *testing.T, ev *event.Evidence)
	}{
		{"error", func(_ context.Context, s layer.WireSnapshot) error {
			if s.Direction == layer.DirectionResponse {
				return errExHook
			}
			return nil
		}, func(t *testing.T, ev *event.Evidence) {
			assert.ErrorIs(t, ev.Cause, errExHook, "Cause holds the capture error")
			assert.Equal(t, errExHook, ev.CaptureCause, "CaptureCause holds the capture error")
		}},
		{"panic", func(_ context.Context, s layer.WireSnapshot) error {
			if s.Direction == layer.DirectionResponse {
				panic("capture exploded")
			}
			return nil
		}, func(t *testing.T, ev *event.Evidence) {
			var pe *retry.PanicError
			require.ErrorAs(t, ev.Cause, &pe, "Cause holds the capture panic")
			assert.Equal(t, "capture exploded", pe.Value)
			assert.Equal(t, "capture exploded", ev.CaptureCause)
		}},
	}
	check := func(t *testing.T, re *layer.RecoveryError, status int, c func(*testing.T, *event.Evidence)) {
		t.Helper()
		assert.Equal(t, event.OutcomeInterrupted, re.Outcome)
		assert.Equal(t, event.ReasonCaptureFailed, re.Failure.Classification.Reason)
		assert.Equal(t, status, re.Failure.HTTPStatus)
		c(t, exEvidence(t, re))
	}
	for _, h := range hooks {
		for _, status := range []int{200, 503} {
			name := h.name + "/" + map[int]string{200: "2xx", 503: "503"}[status]
			t.Run("ordinary/"+name, func(t *testing.T) {
				pol := exPolicy()
				pol.OnWire = h.hook
				st := recoursetest.JSON(200, recoursetest.OpenAIChat("fine"))
				if status != 200 {
					st = recoursetest.JSON(status, recoursetest.OpenAIError("server_error", "server_error", "busy"))
				}
				r, _ := exRig(t, openai.New(), pol, st, recoursetest.JSON(200, recoursetest.OpenAIChat("never")))
				_, err := r.Client.Complete(context.Background(), exProviders()[0].request())
				check(t, exRE(t, err), status, h.check)
				assert.Equal(t, 1, r.Server.Count(), "a capture failure is never retried")
			})
			for _, p := range exProviders() {
				t.Run("streaming/"+p.name+"/"+name, func(t *testing.T) {
					pol := exPolicy()
					pol.OnWire = h.hook
					// A 2xx stream whose first chunk carries no semantic
					// output, held open: the capture of that chunk fails.
					st := p.step(p.content("")).Held()
					if status != 200 {
						st = recoursetest.JSON(status, recoursetest.OpenAIError("server_error", "server_error", "busy"))
					}
					r, _ := exRig(t, p.codec(), pol, st, p.step(p.full("never")...))
					run := exCollect(r.Client.Stream(context.Background(), p.request()))
					assert.Empty(t, run.chunks)
					check(t, exRE(t, run.err), status, h.check)
					assert.Equal(t, 1, r.Server.Count(), "a capture failure is never retried")
				})
			}
		}
	}
}

// exBlockingRequestCapture returns a capture hook that blocks in the
// request capture of wire attempt at until its context is done, then
// returns ret(ctx) — nil (the hook says nothing went wrong) or the
// context's error. entered is closed when it blocks.
func exBlockingRequestCapture(at int, ret func(context.Context) error) (layer.WireHook, <-chan struct{}) {
	entered := make(chan struct{})
	return func(ctx context.Context, s layer.WireSnapshot) error {
		if s.Direction != layer.DirectionRequest {
			return nil
		}
		if s.WireAttempt != at {
			return nil
		}
		close(entered)
		<-ctx.Done()
		return ret(ctx)
	}, entered
}

// TestR9_2_CancelInBlockedRequestCaptureSendsNothing: a call cancelled
// while its request-capture hook blocks sent nothing in that attempt, and
// its error says so: acceptance "no", no attempt_started for the attempt
// that never left, the wire attempts actually sent (0 before the first
// send), the history of the attempts that did leave — whether the hook then
// returns the context's error or nil (R9.1, R9.2, R10.1, R10.2).
func TestR9_2_CancelInBlockedRequestCaptureSendsNothing(t *testing.T) {
	returns := []struct {
		name string
		ret  func(context.Context) error
	}{
		{"hook_returns_ctx_err", func(ctx context.Context) error { return ctx.Err() }},
		{"hook_returns_nil", func(context.Context) error { return nil }},
	}
	busy := recoursetest.JSON(503, recoursetest.OpenAIError("server_error", "server_error", "busy"))
	type call func(ctx context.Context, r *rigtest.Rig) error
	shapes := []struct {
		name string
		p    exProv
		run  call
	}{
		{"ordinary", exProviders()[0], func(ctx context.Context, r *rigtest.Rig) error {
			_, err := r.Client.Complete(ctx, exProviders()[0].request())
			return err
		}},
	}
	for _, p := range exProviders() {
		shapes = append(shapes, struct {
			name string
			p    exProv
			run  call
		}{"streaming/" + p.name, p, func(ctx context.Context, r *rigtest.Rig) error {
			run := exCollect(r.Client.Stream(ctx, p.request()))
			if len(run.chunks) > 0 {
				return errors.New("chunks were delivered")
			}
			return run.err
		}})
	}
	for _, sh := range shapes {
		for _, rt := range returns {
			for _, at := range []int{1, 2} {
				name := sh.name + "/" + rt.name + "/first_attempt"
				if at == 2 {
					name = sh.name + "/" + rt.name + "/resend_after_503"
				}
				t.Run(name, func(t *testing.T) {
					pol := exPolicy()
					hook, entered := exBlockingRequestCapture(at, rt.ret)
					pol.OnWire = hook
					r := rigtest.New(t, sh.p.codec(), pol, busy, sh.p.step(sh.p.full("never")...))
					ctx, cancel := context.WithCancel(context.Background())
					defer cancel()
					done := make(chan error, 1)
					go func() { done <- sh.run(ctx, r) }()
					exAwait(t, entered, "the blocked request capture")
					cancel()
					err := exAwait(t, done, "the cancelled call")

					re := exRE(t, err)
					assert.ErrorIs(t, err, context.Canceled)
					assert.Equal(t, event.OutcomeCancelled, re.Outcome)
					assert.Equal(t, event.CategoryCancellation, re.Failure.Category)
					assert.Equal(t, event.ReasonCancelled, re.Failure.Classification.Reason)
					assert.Equal(t, event.AcceptanceNo, re.Failure.Acceptance, "nothing was sent in the cancelled attempt")
					assert.Equal(t, at-1, re.Failure.WireAttempt, "the wire attempts actually sent")
					assert.Equal(t, at-1, r.Server.Count())
					require.Len(t, re.History, at-1, "only attempts that left are in the history")
					types := exLifecycle(r.Rec.Types())
					if at == 1 {
						assert.Equal(t, []string{"cancelled"}, types, "R9.2: nothing was sent")
					} else {
						assert.Equal(t, []string{"attempt_started", "attempt_failed", "admission_pending", "admission_allowed",
							"delay_scheduled", "retry_started", "cancelled"}, types)
						assert.Equal(t, 503, re.History[0].HTTPStatus)
					}
					cancelled := r.Rec.Events()[len(r.Rec.Events())-1]
					require.NotNil(t, cancelled.Failure)
					assert.Equal(t, event.AcceptanceNo, cancelled.Failure.Acceptance)
				})
			}
		}
	}
}

// exNoConnTransport never obtains a connection: it waits for the request's
// context and returns its error, as a dial that is cancelled does.
type exNoConnTransport struct{ entered chan struct{} }

func (t exNoConnTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Body != nil {
		req.Body.Close()
	}
	close(t.entered)
	<-req.Context().Done()
	return nil, req.Context().Err()
}

// TestR10_2_CancelledBeforeConnectionSentNothing: an attempt cancelled
// before a connection was obtained began (attempt_started) but provably
// sent nothing: its failure has acceptance "no" (R9.2, R10.2).
func TestR10_2_CancelledBeforeConnectionSentNothing(t *testing.T) {
	rec := &rigtest.Recorder{}
	pol := exPolicy()
	pol.OnEvent = rec.OnEvent
	tr := exNoConnTransport{entered: make(chan struct{})}
	ch, err := chain.Default(openai.New(), chain.WithPolicy(pol), chain.WithTransport(tr))
	require.NoError(t, err)
	c, err := client.New("http://127.0.0.1:1", ch, client.WithAPIKey(rigtest.Key))
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := c.Complete(ctx, exProviders()[0].request())
		done <- err
	}()
	exAwait(t, tr.entered, "the send")
	cancel()
	err = exAwait(t, done, "the cancelled call")
	re := exRE(t, err)
	assert.Equal(t, event.OutcomeCancelled, re.Outcome)
	assert.ErrorIs(t, err, context.Canceled)
	require.Len(t, re.History, 1, "the attempt began: it is recorded (R9.2)")
	assert.Equal(t, event.CategoryCancellation, re.History[0].Category)
	assert.Equal(t, event.AcceptanceNo, re.History[0].Acceptance, "no connection: nothing was sent")
	assert.Equal(t, event.AcceptanceNo, re.Failure.Acceptance)
	assert.Equal(t, 1, re.Failure.WireAttempt)
	assert.Equal(t, []string{"attempt_started", "attempt_failed", "cancelled"}, rec.Types())
}

// TestR9_2_CancelInAttemptSucceededObserverWins: a context cancelled by an
// observer of attempt_succeeded ends an ordinary call cancelled: the
// completion is not returned, the attempt is recorded as failed (category
// cancellation) and exactly one cancelled event ends the lifecycle —
// attempt_started, attempt_succeeded, attempt_failed, cancelled (R9.1,
// R9.2, R13.5: abort wins over completion). Native client and drop-in
// http.Client, policy observer and per-call observer.
func TestR9_2_CancelInAttemptSucceededObserverWins(t *testing.T) {
	want := []string{"attempt_started", "attempt_succeeded", "attempt_failed", "cancelled"}
	check := func(t *testing.T, err error, rec *exRecorder, server int) {
		t.Helper()
		re := exRE(t, err)
		assert.Equal(t, event.OutcomeCancelled, re.Outcome)
		assert.ErrorIs(t, err, context.Canceled)
		assert.Equal(t, event.CategoryCancellation, re.Failure.Category)
		assert.Equal(t, event.ReasonCancelled, re.Failure.Classification.Reason)
		require.Len(t, re.History, 1, "the attempt is recorded")
		assert.Equal(t, event.CategoryCancellation, re.History[0].Category)
		assert.Equal(t, 1, re.Failure.WireAttempt)
		assert.Zero(t, re.Failure.Progress.Delivered, "nothing was handed to the caller")
		assert.Equal(t, want, rec.Types())
		assert.Equal(t, 1, server, "no resend")
	}
	cancelOnSuccess := func(cancel context.CancelFunc) func(event.Event) {
		return func(ev event.Event) {
			if ev.Type == event.AttemptSucceeded {
				cancel()
			}
		}
	}
	t.Run("native/policy_observer", func(t *testing.T) {
		r, rec := exRig(t, openai.New(), exPolicy(), recoursetest.JSON(200, recoursetest.OpenAIChat("fine")))
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		rec.setHook(cancelOnSuccess(cancel))
		comp, err := r.Client.Complete(ctx, exProviders()[0].request())
		assert.Nil(t, comp, "abort wins over completion")
		check(t, err, rec, r.Server.Count())
	})
	t.Run("native/per_call_observer", func(t *testing.T) {
		r, rec := exRig(t, openai.New(), exPolicy(), recoursetest.JSON(200, recoursetest.OpenAIChat("fine")))
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		lc := &layer.Call{}
		lc.Observe(cancelOnSuccess(cancel))
		comp, err := r.Client.Complete(layer.WithCall(ctx, lc), exProviders()[0].request())
		assert.Nil(t, comp, "abort wins over completion")
		check(t, err, rec, r.Server.Count())
	})
	t.Run("drop_in", func(t *testing.T) {
		r, rec := exRig(t, openai.New(), exPolicy(), recoursetest.JSON(200, recoursetest.OpenAIChat("fine")))
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		rec.setHook(cancelOnSuccess(cancel))
		body, err := openai.New().Encode(exProviders()[0].request())
		require.NoError(t, err)
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, r.Server.URL+"/v1/chat/completions", bytes.NewReader(body))
		require.NoError(t, err)
		resp, err := r.HTTP.Do(req)
		if resp != nil {
			resp.Body.Close()
		}
		assert.Nil(t, resp, "abort wins over completion")
		check(t, err, rec, r.Server.Count())
	})
}
