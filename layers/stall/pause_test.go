package stall_test

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/recourse-dev/recourse/chain"
	"github.com/recourse-dev/recourse/codecs/openai"
	"github.com/recourse-dev/recourse/layers/retry"
	"github.com/recourse-dev/recourse/layers/stall"
	"github.com/recourse-dev/recourse/recoursetest"
)

// pausedStream sends a streamed chat request through a chain with stall
// limits lim, no recovery, over srv, and returns the drop-in response.
func pausedStream(t *testing.T, srv *recoursetest.Server, lim stall.Limits) *http.Response {
	t.Helper()
	st, err := stall.New(lim)
	require.NoError(t, err)
	ch, err := chain.Default(openai.New(), chain.WithTransport(srv.Transport()), chain.WithPerAttempt(st),
		chain.WithPolicy(retry.Policy{MaxAttempts: 1}))
	require.NoError(t, err)
	req, err := http.NewRequest(http.MethodPost, srv.URL+"/v1/chat/completions",
		strings.NewReader(`{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}`))
	require.NoError(t, err)
	resp, err := (&http.Client{Transport: ch}).Do(req)
	require.NoError(t, err)
	return resp
}

// TestR7_2_ConsumerPauseDoesNotCountAgainstFirstOutput: the provider sends
// its first content 1 s after the headers, well within a 5 s first-output
// limit, while the drop-in consumer pauses a minute after its first read.
// The limit bounds what the reads wait for the provider, not the
// consumer's pause, so the stream completes every time — the verdict does
// not depend on which of a spent timer and a ready read runs first.
func TestR7_2_ConsumerPauseDoesNotCountAgainstFirstOutput(t *testing.T) {
	for range 20 {
		synctest.Test(t, func(t *testing.T) {
			gate := make(chan struct{})
			// A keepalive first: the consumer's first read has it at once,
			// where the role chunk would be held for the first output
			// (R13.9).
			keepalive := ": keepalive\n\n"
			chunks := recoursetest.OpenAIStream("Hello", " world")
			srv := recoursetest.NewMemoryServer(recoursetest.SSE(append([]string{keepalive}, chunks...)...).Gated(1, gate))
			defer srv.Close()
			resp := pausedStream(t, srv, stall.Limits{FirstOutput: 5 * time.Second, Idle: time.Hour})
			defer resp.Body.Close()
			first := make([]byte, len(keepalive))
			_, err := io.ReadFull(resp.Body, first)
			require.NoError(t, err)
			go func() {
				time.Sleep(time.Second)
				close(gate) // the first content, 1 s after the headers
			}()
			time.Sleep(time.Minute) // the consumer pauses
			rest, err := io.ReadAll(resp.Body)
			require.NoError(t, err, "output arrived within the limit")
			assert.Equal(t, keepalive+strings.Join(chunks, ""), string(first)+string(rest))
		})
	}
}

// TestR7_2_FirstOutputCountsOnlyTheReadsWaits: a keepalive at once, then
// a consumer pause of a minute, then a read the provider never answers:
// the 5 s first-output limit fires 5 s into that read — the reads' waits
// count, the pause does not.
func TestR7_2_FirstOutputCountsOnlyTheReadsWaits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		keepalive := ": keepalive\n\n"
		gate := make(chan struct{})
		defer close(gate)
		srv := recoursetest.NewMemoryServer(recoursetest.SSE(append([]string{keepalive}, recoursetest.OpenAIStream("Hello")...)...).Gated(1, gate))
		defer srv.Close()
		resp := pausedStream(t, srv, stall.Limits{FirstOutput: 5 * time.Second})
		defer resp.Body.Close()
		buf := make([]byte, len(keepalive))
		_, err := io.ReadFull(resp.Body, buf)
		require.NoError(t, err)
		time.Sleep(time.Minute) // the consumer pauses
		start := time.Now()
		_, err = io.ReadAll(resp.Body)
		require.Error(t, err)
		assert.Contains(t, err.Error(), "first_output")
		assert.Equal(t, 5*time.Second, time.Since(start), "the whole limit, from this read: the pause does not count")
	})
}
