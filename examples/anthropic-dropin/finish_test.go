package main

import (
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/recourse-dev/recourse/layer"
	"github.com/recourse-dev/recourse/recoursetest"
)

// lengthEvents is a whole stream answering "Hello" whose message_delta
// carries stop reason stop.
func lengthEvents(stop string) []string {
	evs := recoursetest.AnthropicEvents("Hel", "lo")
	i := len(evs) - 2
	evs[i] = strings.Replace(evs[i], `"stop_reason":"end_turn"`, `"stop_reason":"`+stop+`"`, 1)
	return evs
}

// R13.3: a stream that ends with a max_tokens (or
// model_context_window_exceeded) stop reason and message_stop reaches
// anthropic-sdk-go as the SDK's normal message with that StopReason and
// no error; it is never resent. A cut before message_stop stays an error.
func TestR13_3_SDKLengthFinishIsTheProvidersAnswer(t *testing.T) {
	for _, stop := range []string{"max_tokens", "model_context_window_exceeded"} {
		t.Run(stop, func(t *testing.T) {
			m := newMatrix(t, recoursetest.AnthropicStream(lengthEvents(stop)...), recoursetest.AnthropicStream(recoursetest.AnthropicEvents("again")...))
			s := m.client.Messages.NewStreaming(m.ctx(t), params())
			defer s.Close()
			var msg anthropic.Message
			for s.Next() {
				require.NoError(t, msg.Accumulate(s.Current()))
			}
			require.NoError(t, s.Err())
			assert.Equal(t, anthropic.StopReason(stop), msg.StopReason)
			require.Len(t, msg.Content, 1)
			assert.Equal(t, "Hello", msg.Content[0].Text)
			assert.Equal(t, recoursetest.AnthropicMessageID, msg.ID)
			assert.Equal(t, 1, m.srv.Count(), "the provider's answer is never resent")
			assert.Nil(t, m.call.Result.Err, "the call succeeded")
			assert.Equal(t, "length", m.call.Result.Response.FinishReason)
		})
	}
	t.Run("cut", func(t *testing.T) {
		evs := lengthEvents("max_tokens")
		m := newMatrix(t, recoursetest.AnthropicStream(evs[:len(evs)-1]...), recoursetest.AnthropicStream(recoursetest.AnthropicEvents("again")...))
		_, err := m.stream(t)
		require.Error(t, err, "EOF without message_stop is never a success")
		assert.Equal(t, 1, m.srv.Count())
		var re *layer.RecoveryError
		require.ErrorAs(t, m.call.Result.Err, &re)
	})
}
