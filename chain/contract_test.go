package chain_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/recourse-dev/recourse/chain"
	"github.com/recourse-dev/recourse/codecs/openai"
	"github.com/recourse-dev/recourse/event"
	"github.com/recourse-dev/recourse/internal/rigtest"
	"github.com/recourse-dev/recourse/layer"
	"github.com/recourse-dev/recourse/layers/retry"
	"github.com/recourse-dev/recourse/recoursetest"
)

// The http.RoundTripper contract of a recovering chain: the caller's request
// is never modified, bodies are closed, calls are safe concurrently, and a
// RoundTrip returns a response or an error, never both.

func newCanaryHTTPRequest(t *testing.T, ctx context.Context, url string) *http.Request {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url+completionsPath, bytes.NewReader(encoded(t, canaryRequest())))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+rigtest.Key)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Caller", "kept")
	return req
}

func TestRoundTripper_CallerRequestIsUnchanged(t *testing.T) {
	rows := []struct {
		name  string
		opts  func(t *testing.T, tr http.RoundTripper) []chain.Option
		steps []recoursetest.Step
	}{
		{"recovering, 503 then 200", func(t *testing.T, tr http.RoundTripper) []chain.Option {
			p := retry.Policy{MaxAttempts: 3, Jitter: zeroJitter, OnWire: func(_ context.Context, s layer.WireSnapshot) error {
				s.Header.Set("X-Caller", "changed")
				return nil
			}}
			return []chain.Option{chain.WithPolicy(p), chain.WithTransport(tr)}
		}, []recoursetest.Step{statusStep(503), okStep("ok")}},
		{"recovery off", func(t *testing.T, tr http.RoundTripper) []chain.Option {
			return []chain.Option{chain.WithoutRecovery(), chain.WithTransport(tr)}
		}, []recoursetest.Step{okStep("ok")}},
	}
	for _, tc := range rows {
		t.Run(tc.name, func(t *testing.T) {
			srv := startServer(t, tc.steps...)
			ch, err := chain.Default(openai.New(), tc.opts(t, newTransport(t))...)
			require.NoError(t, err)
			req := newCanaryHTTPRequest(t, context.Background(), srv.URL)
			header := req.Header.Clone()
			url := req.URL.String()
			length := req.ContentLength
			want := encoded(t, canaryRequest())

			resp, err := ch.RoundTrip(req)
			require.NoError(t, err)
			b, err := io.ReadAll(resp.Body)
			require.NoError(t, err)
			require.NoError(t, resp.Body.Close())
			assert.Equal(t, recoursetest.OpenAIChat("ok"), string(b))

			assert.Equal(t, header, req.Header, "the caller's headers are unchanged")
			assert.Equal(t, url, req.URL.String())
			assert.Equal(t, http.MethodPost, req.Method)
			assert.Equal(t, length, req.ContentLength)
			require.NotNil(t, req.GetBody)
			rc, err := req.GetBody()
			require.NoError(t, err)
			again, err := io.ReadAll(rc)
			require.NoError(t, err)
			assert.Equal(t, want, again, "the body is still replayable through GetBody")
			for _, q := range srv.Requests() {
				assert.Equal(t, "kept", q.Header.Get("X-Caller"))
				assert.Equal(t, want, q.Body)
			}
		})
	}
}

// TestRoundTripper_ClosesBodies runs every kind of failure through one chain,
// then closes the idle connections while the server still runs: a response
// body the chain left open would keep its connection's goroutines alive.
func TestRoundTripper_ClosesBodies(t *testing.T) {
	steps := []recoursetest.Step{
		statusStep(503), statusStep(503), okStep("ok"), // recovered
		statusStep(404),                                   // passed through to the http.Client
		statusStep(503), statusStep(503), statusStep(503), // exhausted
		recoursetest.JSON(200, recoursetest.OpenAIChat("Hello")).Cut(30), // partial
		recoursetest.Reset(), okStep("ok"), // transport, recovered
		recoursetest.Redirect(302, "http://127.0.0.1:1/x"),                        // refused
		recoursetest.JSON(200, recoursetest.OpenAIError("server_error", "", "x")), // provider error in a 200
		recoursetest.JSON(200, "not json"),                                        // malformed
	}
	srv := recoursetest.NewServer(steps...)
	defer srv.Close()
	tr := http.DefaultTransport.(*http.Transport).Clone()
	defer tr.CloseIdleConnections()
	ignore := goleak.IgnoreCurrent()

	clock := rigtest.NewClock()
	ch, err := chain.Default(openai.New(), chain.WithTransport(tr), chain.WithPolicy(retry.Policy{
		MaxAttempts: 3, Jitter: zeroJitter, Sleep: clock.Sleep, WallClock: clock.Now, MonotonicClock: clock.Mono,
	}))
	require.NoError(t, err)
	hc := &http.Client{Transport: ch}
	for range 8 { // one call per scenario above
		resp, err := hc.Do(newCanaryHTTPRequest(t, context.Background(), srv.URL))
		if resp != nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
		_ = err
	}
	// A cancelled, held attempt.
	srv.Push(recoursetest.Step{Status: 200}.Held())
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		resp, err := hc.Do(newCanaryHTTPRequest(t, ctx, srv.URL))
		if resp != nil {
			resp.Body.Close()
		}
		done <- err
	}()
	require.Eventually(t, func() bool { return srv.Count() == len(steps)+1 }, wait, time.Millisecond)
	cancel()
	require.Error(t, awaitResult(t, done))
	assert.Equal(t, len(steps)+1, srv.Count())

	tr.CloseIdleConnections()
	goleak.VerifyNone(t, ignore)
}

func TestRoundTripper_ConcurrentCalls(t *testing.T) {
	const calls = 50
	var steps []recoursetest.Step
	for range calls {
		steps = append(steps, statusStep(503), okStep("ok"))
	}
	r := rigtest.New(t, openai.New(), retry.Policy{MaxAttempts: calls + 10, Jitter: zeroJitter}, steps...)

	var wg sync.WaitGroup
	errs := make([]error, calls)
	contents := make([]string, calls)
	for i := range calls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			comp, err := r.Client.Complete(context.Background(), canaryRequest())
			errs[i] = err
			if comp != nil {
				contents[i] = comp.Message.Content
			}
		}()
	}
	wg.Wait()

	for i := range calls {
		assert.NoError(t, errs[i])
		assert.Equal(t, "ok", contents[i])
	}
	assert.Equal(t, 2*calls, r.Server.Count(), "every 503 was resent once by the call that got it")
	evs := r.Rec.Events()
	assert.Len(t, eventsOf(evs, event.AttemptSucceeded), calls)
	assert.Len(t, eventsOf(evs, event.AttemptFailed), calls)
	assert.Len(t, eventsOf(evs, event.AttemptStarted), 2*calls)
	logical := map[string]int{}
	attempts := map[string]bool{}
	for _, e := range eventsOf(evs, event.AttemptStarted) {
		logical[e.LogicalID]++
		assert.False(t, attempts[e.AttemptID], "attempt IDs are unique")
		attempts[e.AttemptID] = true
	}
	assert.Len(t, logical, calls, "one logical ID per call")
	total := 0
	for _, n := range logical {
		total += n
	}
	assert.Equal(t, 2*calls, total)
	reqs := r.Server.Requests()
	for _, q := range reqs {
		assert.Equal(t, reqs[0].Body, q.Body)
	}
}

func TestRoundTripper_ResponseXorError(t *testing.T) {
	rows := []struct {
		name  string
		steps []recoursetest.Step
		pol   *retry.Policy // nil: recovery off for the call
		ctx   func() context.Context
	}{
		{"success", []recoursetest.Step{okStep("ok")}, &retry.Policy{}, nil},
		{"recovered", []recoursetest.Step{statusStep(503), okStep("ok")}, &retry.Policy{MaxAttempts: 2}, nil},
		{"exhausted", repeat(statusStep(503), 2), &retry.Policy{MaxAttempts: 2}, nil},
		{"404 pass-through", []recoursetest.Step{statusStep(404)}, &retry.Policy{MaxAttempts: 2}, nil},
		{"provider error pass-through", []recoursetest.Step{recoursetest.JSON(200, recoursetest.OpenAIError("x", "", "y"))}, &retry.Policy{MaxAttempts: 2}, nil},
		{"cut", []recoursetest.Step{recoursetest.JSON(200, recoursetest.OpenAIChat("Hello")).Cut(30)}, &retry.Policy{MaxAttempts: 2}, nil},
		{"reset", repeat(recoursetest.Reset(), 2), &retry.Policy{MaxAttempts: 2}, nil},
		{"redirect", []recoursetest.Step{recoursetest.Redirect(301, "/x")}, &retry.Policy{MaxAttempts: 2}, nil},
		{"delay ceiling", []recoursetest.Step{rateLimited("3600")}, &retry.Policy{MaxAttempts: 2}, nil},
		{"admission rejected", []recoursetest.Step{statusStep(503)}, &retry.Policy{MaxAttempts: 2, Admit: func(context.Context, layer.AdmissionRequest) (layer.Decision, error) {
			return layer.Reject, nil
		}}, nil},
		{"capture failed", []recoursetest.Step{okStep("ok")}, &retry.Policy{MaxAttempts: 2, OnWire: failResponseCapture}, nil},
		{"policy error", []recoursetest.Step{okStep("ok")}, &retry.Policy{MaxAttempts: -1}, nil},
		{"cancelled", []recoursetest.Step{okStep("ok")}, &retry.Policy{MaxAttempts: 2}, func() context.Context {
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			return ctx
		}},
		{"recovery off, 503", []recoursetest.Step{statusStep(503)}, nil, nil},
	}
	for _, tc := range rows {
		t.Run(tc.name, func(t *testing.T) {
			r := rigtest.New(t, openai.New(), retry.Policy{MaxAttempts: 2, Jitter: zeroJitter}, tc.steps...)
			ctx := context.Background()
			if tc.ctx != nil {
				ctx = tc.ctx()
			}
			if tc.pol == nil {
				ctx = retry.WithPolicy(ctx, nil)
			} else {
				p := *tc.pol
				p.Jitter, p.Sleep, p.WallClock, p.MonotonicClock = zeroJitter, r.Clock.Sleep, r.Clock.Now, r.Clock.Mono
				ctx = retry.WithPolicy(ctx, &p)
			}

			resp, err := r.Chain.RoundTrip(newCanaryHTTPRequest(t, ctx, r.Server.URL))

			if resp != nil {
				assert.NoError(t, err, "never both a response and an error")
				_, rerr := io.ReadAll(resp.Body)
				assert.NoError(t, rerr, "a returned body is readable")
				assert.NoError(t, resp.Body.Close())
			} else {
				assert.Error(t, err, "never neither")
			}
		})
	}
}
