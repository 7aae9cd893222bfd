package chain_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/recourse-dev/recourse/chain"
	"github.com/recourse-dev/recourse/chat"
	"github.com/recourse-dev/recourse/client"
	"github.com/recourse-dev/recourse/codec"
	"github.com/recourse-dev/recourse/codecs/openai"
	"github.com/recourse-dev/recourse/layer"
	"github.com/recourse-dev/recourse/recoursetest"
)

// infoRecorder is a per-attempt layer that records the request facts of
// every attempt it sees.
type infoRecorder struct {
	mu    sync.Mutex
	infos []codec.RequestInfo
}

func (r *infoRecorder) layer() layer.Layer {
	return layer.NewPerAttempt("info", func(next http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(req *http.Request) (*http.Response, error) {
			if a := layer.AttemptFrom(req.Context()); a != nil {
				r.mu.Lock()
				r.infos = append(r.infos, a.Info())
				r.mu.Unlock()
			}
			return next.RoundTrip(req)
		})
	})
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// A drop-in stream is read as bytes: nobody can read the text the decoder
// would accumulate, so the engine asks for none (RequestInfo.DropText) and
// the stream holds O(1) memory. The bytes the client reads are unchanged.
// The native client reads the terminal Completion, so its text is kept,
// and never the frames' bytes, so only error frames carry them
// (RequestInfo.TypedFrames).
func TestStreamFactsFollowTheReader(t *testing.T) {
	events := recoursetest.OpenAIStream("Hel", "lo")
	srv := recoursetest.NewServer(recoursetest.SSE(events...), recoursetest.SSE(events...))
	defer srv.Close()
	rec := &infoRecorder{}
	ch, err := chain.Default(openai.New(), chain.WithPerAttempt(rec.layer()))
	require.NoError(t, err)

	body := encoded(t, &chat.Request{Model: "gpt-4o-mini", Stream: true, Messages: []chat.Message{{Role: chat.User, Content: "hi"}}})
	req, err := http.NewRequest(http.MethodPost, srv.URL+completionsPath, strings.NewReader(string(body)))
	require.NoError(t, err)
	resp, err := (&http.Client{Transport: ch}).Do(req)
	require.NoError(t, err)
	got, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	require.Equal(t, strings.Join(events, ""), string(got))

	c, err := client.New(srv.URL, ch)
	require.NoError(t, err)
	var comp *chat.Completion
	for chunk, err := range c.Stream(context.Background(), &chat.Request{Model: "gpt-4o-mini", Messages: []chat.Message{{Role: chat.User, Content: "hi"}}}) {
		require.NoError(t, err)
		if chunk.Done {
			comp = chunk.Completion
		}
	}
	require.NotNil(t, comp)
	require.Equal(t, "Hello", comp.Message.Content)

	rec.mu.Lock()
	defer rec.mu.Unlock()
	require.Len(t, rec.infos, 2)
	require.True(t, rec.infos[0].DropText, "drop-in stream")
	require.False(t, rec.infos[0].TypedFrames, "drop-in stream")
	require.Equal(t, codec.Streaming, rec.infos[0].Operation)
	require.False(t, rec.infos[1].DropText, "native stream")
	require.True(t, rec.infos[1].TypedFrames, "native stream")
}
