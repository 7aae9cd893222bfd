package chain_test

// Exactness of streams: what the consumer receives and which lifecycle a
// stream records when it is cancelled, stopped, cut short by a capture
// failure or ended by a length finish, with recovery on and off (R1.1,
// R9, R10.5, R12.3, R13). Fixtures are in exactness_helpers_test.go.

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/recourse-dev/recourse/chain"
	"github.com/recourse-dev/recourse/layer"
)

// exDropIn posts p's streaming request through the rig's http.Client, as
// an SDK using the chain as its transport does.
func exDropIn(t *testing.T, ctx context.Context, url string, hc *http.Client, p exProv) (*http.Response, error) {
	t.Helper()
	r := p.request()
	r.Stream = true
	body, err := p.codec().Encode(r)
	require.NoError(t, err)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url+p.codec().Path(), bytes.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	return hc.Do(req)
}

// TestR13_5_StreamCancelInAttemptSucceededObserverWins: an observer that
// cancels the context when the terminal frame's attempt_succeeded is
// emitted stops the completion: no Done chunk (no done event, no
// terminal bytes for a drop-in client), the attempt is recorded as failed
// and one cancelled event ends the lifecycle (R9.1, R9.2, R13.5: abort wins
// over completion).
func TestR13_5_StreamCancelInAttemptSucceededObserverWins(t *testing.T) {
	want := []string{"attempt_started", "attempt_succeeded", "attempt_failed", "cancelled"}
	for _, p := range exProviders() {
		for _, shape := range []string{"chunks", "events", "drop_in"} {
			t.Run(p.name+"/"+shape, func(t *testing.T) {
				r, rec := exRig(t, p.codec(), exPolicy(), p.step(p.full("Hel", "lo")...))
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				rec.setHook(func(ev layer.Event) {
					if ev.Type == layer.EventAttemptSucceeded {
						cancel()
					}
				})
				var err error
				switch shape {
				case "chunks":
					run := exCollect(r.Client.Stream(ctx, p.request()))
					assert.False(t, run.done(), "abort wins over completion")
					assert.Equal(t, "Hello", run.text(), "the content before the terminal frame was delivered")
					err = run.err
				case "events":
					var evs []chain.StreamEvent
					for e := range r.Client.StreamEvents(ctx, p.request()) {
						evs = append(evs, e)
					}
					require.NotEmpty(t, evs)
					last := evs[len(evs)-1]
					require.Equal(t, chain.EventError, last.Type, "no done event")
					assert.Equal(t, layer.StreamCancelled, last.Err.Reason)
					err = last.Err
				case "drop_in":
					resp, derr := exDropIn(t, ctx, r.Server.URL, r.HTTP, p)
					require.NoError(t, derr)
					b, rerr := io.ReadAll(resp.Body)
					resp.Body.Close()
					last := p.full("Hel", "lo")
					assert.NotContains(t, string(b), last[len(last)-1], "the terminal frame is not handed over")
					err = rerr
				}
				re := exRE(t, err)
				assert.Equal(t, layer.OutcomeCancelled, re.Outcome)
				assert.ErrorIs(t, err, context.Canceled)
				require.Len(t, re.History, 1, "the attempt is recorded")
				assert.Equal(t, layer.CategoryCancellation, re.History[0].Category)
				assert.Zero(t, re.Failure.Progress.Delivered.CompletedToolCalls)
				assert.Equal(t, want, exLifecycle(rec.Types()))
				assert.Equal(t, 1, r.Server.Count(), "no resend")
			})
		}
	}
}
