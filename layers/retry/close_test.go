package retry_test

import (
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/recourse-dev/recourse/chain"
	"github.com/recourse-dev/recourse/codec"
	"github.com/recourse-dev/recourse/codecs/openai"
	"github.com/recourse-dev/recourse/codecs/openai/responses"
	"github.com/recourse-dev/recourse/event"
	"github.com/recourse-dev/recourse/layers/retry"
	"github.com/recourse-dev/recourse/recoursetest"
)

// closeRig is a drop-in http.Client over chain.Default on a memory server,
// recording each event with its virtual instant.
type closeRig struct {
	srv    *recoursetest.Server
	client *http.Client
	start  time.Time
	mu     sync.Mutex
	events []string
	at     []time.Duration
}

func newCloseRig(t *testing.T, cdc codec.Codec, steps ...recoursetest.Step) *closeRig {
	t.Helper()
	r := &closeRig{srv: recoursetest.NewMemoryServer(steps...), start: time.Now()}
	t.Cleanup(r.srv.Close)
	ch, err := chain.Default(cdc, chain.WithTransport(r.srv.Transport()), chain.WithPolicy(retry.Policy{
		MaxAttempts: 3, BaseDelay: new(10 * time.Second), Jitter: func() float64 { return 1 },
		OnEvent: func(e event.Event) error {
			r.mu.Lock()
			defer r.mu.Unlock()
			r.events = append(r.events, string(e.Type))
			r.at = append(r.at, time.Since(r.start))
			return nil
		},
	}))
	require.NoError(t, err)
	r.client = &http.Client{Transport: ch}
	return r
}

func (r *closeRig) post(t *testing.T, path, body string) *http.Response {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, r.srv.URL+path, strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer sk-test")
	resp, err := r.client.Do(req)
	require.NoError(t, err)
	return resp
}

func (r *closeRig) log() ([]string, []time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.events...), append([]time.Duration(nil), r.at...)
}

// readInBackground reads body on its own goroutine, as a drop-in client
// that closes the body from another goroutine does; the returned channel
// gets the instant the read returned.
func readInBackground(body io.Reader, start time.Time) <-chan time.Duration {
	done := make(chan time.Duration, 1)
	go func() {
		_, _ = io.Copy(io.Discard, body)
		done <- time.Since(start)
	}()
	return done
}

// TestR13_5_CloseFromAnotherGoroutineDuringBackoffEndsTheCall: a drop-in
// stream cut before output waits out its 10 s backoff inside the
// consumer's Read; the consumer closes the body from another goroutine at
// 3 s. The wait ends then, with one terminal cancelled event, the blocked
// Read returns at 3 s, and no resend is ever sent.
func TestR13_5_CloseFromAnotherGoroutineDuringBackoffEndsTheCall(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newCloseRig(t, openai.New(),
			recoursetest.SSE(recoursetest.OpenAIStream("a")...).CutEvents(0), recoursetest.SSE(recoursetest.OpenAIStream("a")...))
		resp := r.post(t, "/v1/chat/completions", `{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}`)
		done := readInBackground(resp.Body, r.start)
		time.Sleep(3 * time.Second)
		require.NoError(t, resp.Body.Close())
		assert.Equal(t, 3*time.Second, <-done, "the blocked Read returns at the close")
		time.Sleep(time.Minute)
		assert.Equal(t, 1, r.srv.Count(), "no resend after the close")
		events, at := r.log()
		assert.Equal(t, []string{"attempt_started", "attempt_failed", "delay_scheduled", "cancelled"}, events)
		assert.Equal(t, 3*time.Second, at[len(at)-1], "cancelled at the instant of the close")
	})
}

// TestR13_5_CloseFromAnotherGoroutineDuringAReadEndsTheCall: a consumer
// blocked reading a stream the provider holds open closes it from another
// goroutine: the read returns at once, the open attempt is recorded as
// attempt_failed, then cancelled, and nothing is sent again.
func TestR13_5_CloseFromAnotherGoroutineDuringAReadEndsTheCall(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newCloseRig(t, openai.New(), recoursetest.SSE(recoursetest.OpenAIStream("a")[:1]...).Held(),
			recoursetest.SSE(recoursetest.OpenAIStream("a")...))
		resp := r.post(t, "/v1/chat/completions", `{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}`)
		done := readInBackground(resp.Body, r.start)
		time.Sleep(5 * time.Second)
		require.NoError(t, resp.Body.Close())
		assert.Equal(t, 5*time.Second, <-done)
		require.NoError(t, resp.Body.Close(), "idempotent")
		time.Sleep(time.Minute)
		assert.Equal(t, 1, r.srv.Count())
		events, _ := r.log()
		assert.Equal(t, []string{"attempt_started", "attempt_failed", "cancelled"}, events)
	})
}

// TestR13_5_CloseFromAnotherGoroutineDuringAResumeBackoff: a background
// Responses stream cut after output waits to be read again; a close from
// another goroutine during that wait cancels the response once (R19.12)
// and never reads it again.
func TestR13_5_CloseFromAnotherGoroutineDuringAResumeBackoff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const id = "resp_close1"
		r := newCloseRig(t, responses.New(),
			recoursetest.ResponsesBackground(id, recoursetest.ResponsesEvents(id, "Hello", ", world")...).CutEvents(5),
			recoursetest.ResponsesCancel(id), recoursetest.ResponsesResume(id))
		resp := r.post(t, "/v1/responses", `{"model":"m","input":"hi","stream":true,"background":true}`)
		done := readInBackground(resp.Body, r.start)
		time.Sleep(3 * time.Second)
		require.NoError(t, resp.Body.Close())
		assert.Equal(t, 3*time.Second, <-done)
		time.Sleep(time.Minute)
		reqs := r.srv.Requests()
		require.Len(t, reqs, 2, "the create and its cancel, no read after it")
		assert.Equal(t, "/v1/responses/"+id+"/cancel", reqs[1].Path)
		assert.True(t, r.srv.Cancelled(id))
		events, _ := r.log()
		assert.Equal(t, "cancelled", events[len(events)-1])
		assert.NotContains(t, events[:len(events)-1], "cancelled", "one terminal event")
	})
}

// TestR13_5_ReadAfterCloseFromAnotherGoroutine: once closed, a Read
// returns an error and no bytes, whichever goroutine closed.
func TestR13_5_ReadAfterCloseFromAnotherGoroutine(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newCloseRig(t, openai.New(), recoursetest.SSE(recoursetest.OpenAIStream("a")[:1]...).Held())
		resp := r.post(t, "/v1/chat/completions", `{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}`)
		done := readInBackground(resp.Body, r.start)
		synctest.Wait()
		require.NoError(t, resp.Body.Close())
		<-done
		n, err := resp.Body.Read(make([]byte, 8))
		assert.Zero(t, n)
		assert.Error(t, err)
	})
}
