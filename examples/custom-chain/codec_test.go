package main

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/recourse-dev/recourse/chat"
	"github.com/recourse-dev/recourse/client"
	"github.com/recourse-dev/recourse/codec"
	"github.com/recourse-dev/recourse/codec/codectest"
	"github.com/recourse-dev/recourse/codecs/openai"
	"github.com/recourse-dev/recourse/event"
	"github.com/recourse-dev/recourse/recoursetest"
)

// The gateway codec keeps the codec contract: complete capabilities with
// evidence, deterministic encoding, Describe reading back Encode, typed
// errors for hostile bodies, an observer (a stream decoder) per operation.
func TestGatewayCodecContract(t *testing.T) {
	codectest.Codec(t, NewGatewayCodec(), &chat.Request{
		Model:    "gpt-4o-mini",
		Messages: []chat.Message{{Role: chat.System, Content: "Be brief."}, {Role: chat.User, Content: "hi"}},
	})
}

// The codec declares its own provider, path, facts and five capabilities,
// each with the gateway's evidence, and returns new maps on every call.
func TestGatewayCodecDeclarations(t *testing.T) {
	c := NewGatewayCodec()
	assert.Equal(t, codec.Provider("gateway"), c.Provider())
	assert.Equal(t, "/openai/v1/chat", c.Path())
	assert.Equal(t, codec.Facts{}, c.Facts(), "a hosted gateway: resends need no admission")

	caps := c.Capabilities()
	require.NoError(t, caps.Validate())
	want := map[codec.Capability]codec.Support{
		codec.ClientAbort:             codec.Unknown,
		codec.RequestCancellation:     codec.Unsupported,
		codec.RequestStatus:           codec.Unsupported,
		codec.Idempotency:             codec.Unsupported,
		codec.ExactAttemptTermination: codec.Unknown,
	}
	assert.Len(t, caps.Values, len(codec.AllCapabilities()))
	assert.Len(t, caps.Evidence, len(codec.AllCapabilities()))
	bases := map[string]bool{}
	for _, k := range codec.AllCapabilities() {
		assert.Equal(t, want[k], caps.Get(k), k)
		ev := caps.Evidence[k]
		assert.Equal(t, "POST /openai/v1/chat", ev.Endpoint, k)
		assert.Equal(t, "https://gateway.example/docs/chat", ev.DocumentationURL, k)
		_, err := time.Parse(time.DateOnly, ev.InspectedOn)
		assert.NoError(t, err, k)
		assert.False(t, bases[ev.Basis], "%s shares its basis with another capability", k)
		bases[ev.Basis] = true
	}

	caps.Values[codec.Idempotency] = codec.Supported
	delete(caps.Evidence, codec.ClientAbort)
	again := c.Capabilities()
	assert.Equal(t, codec.Unsupported, again.Get(codec.Idempotency))
	assert.NoError(t, again.Validate(), "a caller changed the codec's declaration")
}

// The bodies are OpenAI's, byte for byte; an unsupported control names the
// gateway; the gateway's request ID wins over the upstream's.
func TestGatewayCodecDelegates(t *testing.T) {
	c := NewGatewayCodec()
	req := &chat.Request{Model: "gpt-4o-mini", Messages: []chat.Message{{Role: chat.User, Content: "hi"}}}
	got, err := c.Encode(req)
	require.NoError(t, err)
	want, err := openai.New().Encode(req)
	require.NoError(t, err)
	assert.Equal(t, want, got)

	comp, err := c.Decode([]byte(recoursetest.OpenAIChat("hello")))
	require.NoError(t, err)
	assert.Equal(t, "hello", comp.Message.Content)
	assert.Equal(t, "rate_limit_exceeded", c.ErrorCode([]byte(recoursetest.OpenAIError("requests", "rate_limit_exceeded", "slow down"))))

	topK := 40
	_, err = c.Encode(&chat.Request{Model: "gpt-4o-mini", Messages: req.Messages, Options: chat.Options{TopK: &topK}})
	var ue *codec.UnsupportedError
	require.True(t, errors.As(err, &ue), "got %T: %v", err, err)
	assert.Equal(t, Gateway, ue.Provider)
	assert.Equal(t, "recourse: gateway does not support "+ue.Control, err.Error())

	h := http.Header{}
	h.Set("X-Request-Id", "req_upstream")
	assert.Equal(t, "req_upstream", c.RequestID(h))
	h.Set("X-Gateway-Request-Id", "gw-1")
	assert.Equal(t, "gw-1", c.RequestID(h))
	assert.Empty(t, c.RequestID(nil))
}

// Through a chain the codec's provider names every event and failure, and
// the native client posts to the gateway's path.
func TestGatewayCodecInAChain(t *testing.T) {
	key := []byte("k")
	gw := newGateway(key, busyThenHello()...)
	t.Cleanup(gw.Close)
	var providers []codec.Provider
	ch, err := buildChain(nil, key, func(ev event.Event) error {
		providers = append(providers, ev.Provider)
		if ev.Failure != nil {
			providers = append(providers, ev.Failure.Provider)
		}
		return nil
	})
	require.NoError(t, err)
	cl, err := client.New(gw.URL, ch)
	require.NoError(t, err)

	comp, err := cl.Complete(context.Background(), helloRequest())

	require.NoError(t, err)
	assert.Equal(t, "stop", comp.FinishReason)
	require.NotEmpty(t, providers)
	for _, p := range providers {
		assert.Equal(t, Gateway, p)
	}
	require.Len(t, gw.Received(), 2)
}
