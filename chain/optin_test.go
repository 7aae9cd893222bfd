package chain_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/recourse-dev/recourse/chain"
	"github.com/recourse-dev/recourse/chat"
	"github.com/recourse-dev/recourse/client"
	"github.com/recourse-dev/recourse/codecs/ollama"
	"github.com/recourse-dev/recourse/codecs/openai"
	"github.com/recourse-dev/recourse/event"
	"github.com/recourse-dev/recourse/internal/rigtest"
	"github.com/recourse-dev/recourse/layer"
	"github.com/recourse-dev/recourse/layers/retry"
	"github.com/recourse-dev/recourse/recoursetest"
)

// R1.1 at the chain's edge: a chain built WithoutRecovery, or a call whose
// per-call policy is nil, is a plain client: one POST, a *StatusError, no
// events. (The engine's own behaviour tests are in layers/retry.)

// plainClient is a client over a chain built WithoutRecovery (R1.1).
func plainClient(t *testing.T, url string) (*client.Client, *chain.Chain) {
	t.Helper()
	ch, err := chain.Default(openai.New(), chain.WithoutRecovery(), chain.WithTransport(newTransport(t)))
	require.NoError(t, err)
	cl, err := client.New(url, ch, client.WithAPIKey(rigtest.Key))
	require.NoError(t, err)
	return cl, ch
}

func TestR1_1_WithoutRecovery503IsAPlainStatusError(t *testing.T) {
	srv := startServer(t, statusStep(503), okStep("never"))
	cl, _ := plainClient(t, srv.URL)
	var events []event.Event
	ctx := withObserver(context.Background(), func(e event.Event) { events = append(events, e) })

	_, err := cl.Complete(ctx, canaryRequest())

	var se *client.StatusError
	require.ErrorAs(t, err, &se)
	assert.Equal(t, 503, se.StatusCode)
	var re *layer.RecoveryError
	assert.False(t, errors.As(err, &re), "R1.1: no recovery error when recovery is off")
	assert.Empty(t, events, "R1.1: no events")
	assert.Equal(t, 1, srv.Count(), "R1.1: one plain POST")
}

func TestR1_1_PerCallNilPolicyDisablesRecovery(t *testing.T) {
	p := retry.Policy{MaxAttempts: 3, Jitter: zeroJitter}
	rec := wired(&p)
	r := rigtest.New(t, openai.New(), p, statusStep(503), okStep("never"))
	ctx := retry.WithPolicy(context.Background(), nil)

	_, err := r.Client.Complete(ctx, canaryRequest())

	var se *client.StatusError
	require.ErrorAs(t, err, &se)
	assert.Equal(t, 503, se.StatusCode)
	assert.Empty(t, rec.Log(), "R1.1: no events and no captures")
	assert.Equal(t, 1, r.Server.Count())
}

func TestR1_1_SuccessIsIdenticalWithAndWithoutRecovery(t *testing.T) {
	body := okStep("hello from the provider") // the same provider answer for both
	plainSrv := startServer(t, body)
	plain, _ := plainClient(t, plainSrv.URL)
	r := rigtest.New(t, openai.New(), retry.Policy{MaxAttempts: 3}, body)

	want, err := plain.Complete(context.Background(), canaryRequest())
	require.NoError(t, err)
	got, err := r.Client.Complete(context.Background(), canaryRequest())
	require.NoError(t, err)

	assert.Equal(t, want, got, "R1.1: same success")
	pr, rr := plainSrv.Requests(), r.Server.Requests()
	require.Len(t, pr, 1)
	require.Len(t, rr, 1)
	assert.Equal(t, pr[0].Body, rr[0].Body, "R1.1: same request body")
	assert.Equal(t, pr[0].Header, rr[0].Header, "R1.1: same request headers")
	assert.Equal(t, pr[0].Path, rr[0].Path)
}

// TestR13_3_PlainOllamaStreamAcceptsAnUnterminatedDoneLine: without
// recovery (R1.1) too, an Ollama stream whose final done:true line reaches
// HTTP EOF without its "\n" ends at that line, accepted.
func TestR13_3_PlainOllamaStreamAcceptsAnUnterminatedDoneLine(t *testing.T) {
	const done = `{"model":"llama3.2","message":{"role":"assistant","content":"!"},"done":true,"done_reason":"stop"}`
	st := recoursetest.NDJSON(`{"model":"llama3.2","message":{"role":"assistant","content":"hi"},"done":false}`, done)
	st.Chunks[len(st.Chunks)-1] = []byte(done)
	srv := startServer(t, st)
	ch, err := chain.Default(ollama.New(), chain.WithoutRecovery(), chain.WithTransport(newTransport(t)))
	require.NoError(t, err)
	cl, err := client.New(srv.URL, ch)
	require.NoError(t, err)
	req := canaryRequest()
	req.Model = "llama3.2"
	var text string
	var last chat.Chunk
	for c, err := range cl.Stream(context.Background(), req) {
		require.NoError(t, err)
		text += c.Content
		last = c
	}
	assert.Equal(t, "hi!", text)
	assert.True(t, last.Done, "the unterminated done line is the terminal chunk")
	assert.Equal(t, 1, srv.Count())
}

// TestR13_3_PlainStreamLengthFinishIsAStreamError: without recovery (R1.1)
// too, a stream that ends on a length finish ends with the typed
// *layer.StreamError of reason incomplete_completion and the finish, as a
// recovering one does, and is sent once.
func TestR13_3_PlainStreamLengthFinishIsAStreamError(t *testing.T) {
	ev := `data: {"id":"c","object":"chat.completion.chunk","model":"m","choices":[{"index":0,"delta":{"content":"abc"},"finish_reason":"length"}]}` + "\n\n"
	srv := startServer(t, recoursetest.SSE(ev))
	cl, _ := plainClient(t, srv.URL)
	var err error
	for _, e := range cl.Stream(context.Background(), canaryRequest()) {
		if e != nil {
			err = e
			break
		}
	}
	var se *layer.StreamError
	require.ErrorAs(t, err, &se)
	assert.Equal(t, layer.StreamIncompleteCompletion, se.Reason)
	assert.Equal(t, "length", se.FinishReason)
	assert.Nil(t, se.Recovery, "R1.1: no recovery ran")
	assert.Equal(t, 1, srv.Count())
}
