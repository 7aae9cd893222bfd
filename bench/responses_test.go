package bench

import (
	"net/http"
	"strings"
	"testing"

	"github.com/recourse-dev/recourse/chain"
	"github.com/recourse-dev/recourse/client"
	"github.com/recourse-dev/recourse/codecs/openai/responses"
	"github.com/recourse-dev/recourse/recoursetest"
)

// responsesCodec is the Responses codec comparison: the same 1000-chunk text
// streamed through the default chain with the Responses API codec and with
// the chat-completions codec, each from its own endpoint.
type responsesCodec struct {
	responses, chat side
}

func newResponsesCodec(tb testing.TB) *responsesCodec {
	text := contents(streamChunks)
	respPayload := []byte(strings.Join(recoursetest.ResponsesEvents("resp_0123456789abcdef", text...), ""))
	chatPayload := []byte(strings.Join(recoursetest.OpenAIStream(text...), ""))
	srv := server(tb, func(w http.ResponseWriter, r *http.Request) {
		drainRequest(r)
		sseHeaders(w)
		if r.URL.Path == "/v1/responses" {
			_, _ = w.Write(respPayload)
			return
		}
		_, _ = w.Write(chatPayload)
	})
	ch, err := chain.Default(responses.New())
	if err != nil {
		tb.Fatal(err)
	}
	rc, err := client.New(srv.URL, ch, client.WithAPIKey("sk-bench"))
	if err != nil {
		tb.Fatal(err)
	}
	s := nativeStreamSide(rc, streamChunks)
	s.name = "responses"
	c := nativeStreamSide(nativeClient(tb, srv.URL), streamChunks)
	c.name = "chat"
	return &responsesCodec{responses: s, chat: c}
}

// BenchmarkResponsesStream1000 streams the text of BenchmarkStream1000
// through the native Client.Stream over the default chain with the
// Responses API codec (codecs/openai/responses, its stream decoder) and
// with the chat-completions codec (chat), each over its own endpoint's
// SSE: the Responses decoder's cost against the chat-completions decoder's
// on the same text.
func BenchmarkResponsesStream1000(b *testing.B) {
	r := newResponsesCodec(b)
	b.Run("ratio", func(b *testing.B) { compare(b, 1, r.responses, r.chat) })
}
