package main

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/recourse-dev/recourse/chain"
	anthropiccodec "github.com/recourse-dev/recourse/codecs/anthropic"
	"github.com/recourse-dev/recourse/layers/retry"
	"github.com/recourse-dev/recourse/recoursetest"
)

// firstID is the message ID of the attempt that is resent.
const firstID = "msg_01FirstAttemptNeverSeen"

// overloadedAfterStart is a stream whose message_start (ID firstID) is
// followed by an in-band overloaded_error, before any content.
func overloadedAfterStart() recoursetest.Step {
	start := recoursetest.AnthropicStart()
	start[0] = strings.Replace(start[0], recoursetest.AnthropicMessageID, firstID, 1)
	return recoursetest.AnthropicStream(append(start, recoursetest.AnthropicErrorEvent("overloaded_error", "Overloaded"))...)
}

// R13.9: an in-band overloaded_error right after message_start is resent,
// and anthropic-sdk-go's accumulated message and the raw body show exactly
// one message_start, the answering attempt's.
func TestR13_9_SDKResendBeforeOutputShowsOneMessageStart(t *testing.T) {
	t.Run("sdk", func(t *testing.T) {
		m := newMatrix(t, overloadedAfterStart(), recoursetest.AnthropicStream(recoursetest.AnthropicEvents("Hel", "lo")...))
		s := m.client.Messages.NewStreaming(m.ctx(t), params())
		defer s.Close()
		var msg anthropic.Message
		starts := 0
		for s.Next() {
			ev := s.Current()
			if ev.Type == "message_start" {
				starts++
			}
			require.NoError(t, msg.Accumulate(ev))
		}
		require.NoError(t, s.Err())
		assert.Equal(t, 1, starts, "one message_start")
		assert.Equal(t, recoursetest.AnthropicMessageID, msg.ID, "the answering attempt's")
		require.Len(t, msg.Content, 1)
		assert.Equal(t, "Hello", msg.Content[0].Text)
		assert.Equal(t, 2, m.srv.Count())
	})
	t.Run("raw", func(t *testing.T) {
		srv := recoursetest.NewServer(overloadedAfterStart(), recoursetest.AnthropicStream(recoursetest.AnthropicEvents("Hel", "lo")...))
		defer srv.Close()
		ch, err := chain.Default(anthropiccodec.New(), chain.WithPolicy(retry.Policy{MaxAttempts: 3, Jitter: func() float64 { return 0 },
			Sleep: func(context.Context, time.Duration) error { return nil }}))
		require.NoError(t, err)
		req, err := http.NewRequest(http.MethodPost, srv.URL+"/v1/messages", strings.NewReader(`{"model":"claude-sonnet-4-5","max_tokens":64,"stream":true,"messages":[{"role":"user","content":"hello"}]}`))
		require.NoError(t, err)
		resp, err := (&http.Client{Transport: ch}).Do(req)
		require.NoError(t, err)
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		require.NoError(t, err)
		assert.Equal(t, 1, strings.Count(string(body), "event: message_start\n"), "%s", body)
		assert.NotContains(t, string(body), firstID)
		assert.NotContains(t, string(body), "overloaded_error")
		assert.Contains(t, string(body), recoursetest.AnthropicMessageID)
		assert.Equal(t, 2, srv.Count())
	})
}
