package chain_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/recourse-dev/recourse/chain"
	"github.com/recourse-dev/recourse/chat"
	"github.com/recourse-dev/recourse/client"
	"github.com/recourse-dev/recourse/codecs/openai"
	"github.com/recourse-dev/recourse/layer"
	"github.com/recourse-dev/recourse/layers/retry"
	"github.com/recourse-dev/recourse/recoursetest"
)

// reportCall posts the canary request through ch with a *layer.Call in the
// context and returns the call's result and the body the RoundTripper
// returned.
func reportCall(t *testing.T, ch *chain.Chain, url string, req *chat.Request) (*layer.CallResult, []byte) {
	t.Helper()
	lc := &layer.Call{}
	report := &lc.Result
	hreq := newCanaryHTTPRequest(t, layer.WithCall(context.Background(), lc), url)
	hreq.Body = io.NopCloser(bytes.NewReader(encoded(t, req)))
	hreq.ContentLength = int64(len(encoded(t, req)))
	hreq.GetBody = nil
	resp, err := ch.RoundTrip(hreq)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return report, b
}

// TestCallResult_CompletionIsTheDecodedBody: on success the retry layer hands
// over the completion it decoded, which is what the codec decodes from the
// body it returns; there is none for a failure or without recovery.
func TestCallResult_CompletionIsTheDecodedBody(t *testing.T) {
	srv := startServer(t,
		statusStep(503), okStep("recovered"), // a retried success
		recoursetest.JSON(200, recoursetest.OpenAIChat("not json")), // a structured answer that is not JSON
		okStep("plain"), // recovery off
	)
	ch, err := chain.Default(openai.New(), chain.WithTransport(newTransport(t)), chain.WithPolicy(retry.Policy{
		MaxAttempts: 2, Jitter: zeroJitter,
	}))
	require.NoError(t, err)

	report, body := reportCall(t, ch, srv.URL, canaryRequest())
	require.NotNil(t, report.Completion)
	want, err := openai.New().Decode(body)
	require.NoError(t, err)
	assert.Equal(t, want, report.Completion)
	assert.Equal(t, "recovered", report.Completion.Message.Content)
	assert.Equal(t, 2, report.WireAttempts)

	structured := canaryRequest()
	structured.Schema = &chat.Schema{Name: "s", Schema: json.RawMessage(`{}`)}
	// A refused structured answer in a 200 fails closed (no response) and
	// hands over no completion.
	lc := &layer.Call{}
	hreq := newCanaryHTTPRequest(t, layer.WithCall(context.Background(), lc), srv.URL)
	hreq.Body = io.NopCloser(bytes.NewReader(encoded(t, structured)))
	hreq.ContentLength, hreq.GetBody = int64(len(encoded(t, structured))), nil
	resp, err := ch.RoundTrip(hreq)
	require.Error(t, err)
	assert.Nil(t, resp)
	require.NotNil(t, lc.Result.Err)
	assert.Nil(t, lc.Result.Completion, "a refused structured answer hands over no completion")

	off, err := chain.Default(openai.New(), chain.WithTransport(newTransport(t)), chain.WithoutRecovery())
	require.NoError(t, err)
	report, _ = reportCall(t, off, srv.URL, canaryRequest())
	assert.Nil(t, report.Completion, "without recovery nothing decodes the body")
}

// TestClient_CompleteReturnsTheDecodedCompletion: the native client returns
// what the codec decodes from the answer, with and without recovery.
func TestClient_CompleteReturnsTheDecodedCompletion(t *testing.T) {
	answer := recoursetest.OpenAIChat("Hello")
	want, err := openai.New().Decode([]byte(answer))
	require.NoError(t, err)
	for _, opts := range [][]chain.Option{nil, {chain.WithoutRecovery()}} {
		srv := startServer(t, recoursetest.JSON(200, answer))
		ch, err := chain.Default(openai.New(), append(opts, chain.WithTransport(newTransport(t)))...)
		require.NoError(t, err)
		c, err := client.New(srv.URL, ch)
		require.NoError(t, err)
		got, err := c.Complete(context.Background(), canaryRequest())
		require.NoError(t, err)
		assert.Equal(t, want, got)
	}
}
