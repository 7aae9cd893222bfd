package retry_test

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
	"github.com/recourse-dev/recourse/codec"
	"github.com/recourse-dev/recourse/codecs/openai"
	"github.com/recourse-dev/recourse/recoursetest"
)

// plainObserver hides the stream decoder of the observer it wraps: a codec
// that counts a stream's bytes but decodes no frames.
type plainObserver struct{ o codec.Observer }

func (p plainObserver) Write(b []byte)         { p.o.Write(b) }
func (p plainObserver) Observed() codec.Counts { return p.o.Observed() }

// undecodingCodec is the OpenAI codec with an observer that decodes no
// frames.
type undecodingCodec struct{ *openai.Codec }

func (c undecodingCodec) NewObserver(info codec.RequestInfo) codec.Observer {
	return plainObserver{c.Codec.NewObserver(info)}
}

// TestR13_5_UndecodedStreamIsHandedOverWhole: a codec that decodes no
// frames has its 2xx stream handed over as it is. The stream's own
// context (R13.5) lives until that body is closed, so a body the provider
// is still writing is read to its end, not cut as the call returns.
func TestR13_5_UndecodedStreamIsHandedOverWhole(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		gate := make(chan struct{})
		chunks := recoursetest.OpenAIStream("Hello", " world")
		srv := recoursetest.NewMemoryServer(recoursetest.SSE(chunks...).Gated(2, gate))
		defer srv.Close()
		ch, err := chain.Default(undecodingCodec{openai.New()}, chain.WithTransport(srv.Transport()))
		require.NoError(t, err)
		req, err := http.NewRequest(http.MethodPost, srv.URL+"/v1/chat/completions",
			strings.NewReader(`{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}`))
		require.NoError(t, err)
		resp, err := (&http.Client{Transport: ch}).Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		go func() {
			time.Sleep(time.Second)
			close(gate) // the rest, after the call returned
		}()
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		assert.Equal(t, strings.Join(chunks, ""), string(b))
	})
}
