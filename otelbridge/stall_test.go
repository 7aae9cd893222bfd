package otelbridge_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/recourse-dev/recourse/chain"
	"github.com/recourse-dev/recourse/client"
	"github.com/recourse-dev/recourse/codecs/openai"
	"github.com/recourse-dev/recourse/event"
	"github.com/recourse-dev/recourse/internal/attempt"
	"github.com/recourse-dev/recourse/internal/rigtest"
	"github.com/recourse-dev/recourse/layer"
	"github.com/recourse-dev/recourse/layers/retry"
	"github.com/recourse-dev/recourse/otelbridge"
	"github.com/recourse-dev/recourse/recoursetest"
)

func attrOf(kvs []attribute.KeyValue, key string) (string, bool) {
	for _, kv := range kvs {
		if string(kv.Key) == key {
			return kv.Value.String(), true
		}
	}
	return "", false
}

// TestStallAndHintAttributes: an attempt a stall limit ended carries
// recourse.failure.stall (also its status description) and the decision
// plane's span events carry it; a failure whose classification honoured a
// provider hint carries recourse.failure.hint.
func TestStallAndHintAttributes(t *testing.T) {
	srv := recoursetest.NewServer(
		recoursetest.JSON(503, recoursetest.OpenAIError("server_error", "server_error", "busy"), "x-should-retry", "false"))
	defer srv.Close()
	sr := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(sr))
	defer func() { require.NoError(t, tp.Shutdown(context.Background())) }()
	clock := rigtest.NewClock()
	// The first attempt is ended by a stall limit before it is sent (a
	// per-attempt layer that returns the vocabulary's StallError, as
	// layers/stall does); the second reaches the provider.
	first := true
	stalling := layer.NewPerAttempt("stall", func(next http.RoundTripper) http.RoundTripper {
		return layer.RoundTripperFunc(func(req *http.Request) (*http.Response, error) {
			if first {
				first = false
				if err := attempt.From(req.Context()).Begin(); err != nil {
					return nil, err
				}
				return nil, &layer.StallError{Limit: event.StallHeader, After: time.Second}
			}
			return next.RoundTrip(req)
		})
	})
	base := http.DefaultTransport.(*http.Transport).Clone()
	defer base.CloseIdleConnections()
	ch, err := chain.Default(openai.New(),
		chain.WithPerCall(otelbridge.New(otelbridge.WithTracerProvider(tp))),
		chain.WithPolicy(retry.Policy{MaxAttempts: 3, ProviderHints: true, WallClock: clock.Now, MonotonicClock: clock.Mono, Sleep: clock.Sleep}),
		chain.WithPerAttempt(stalling), chain.WithTransport(base))
	require.NoError(t, err)
	cl, err := client.New(srv.URL, ch, client.WithAPIKey(rigtest.Key))
	require.NoError(t, err)
	_, err = cl.Complete(context.Background(), request("gpt-4o-mini"))
	var re *layer.RecoveryError
	require.ErrorAs(t, err, &re)
	assert.Equal(t, event.ReasonProviderNoRetry, re.Failure.Classification.Reason)

	var attempts []sdktrace.ReadOnlySpan
	var logical sdktrace.ReadOnlySpan
	for _, s := range sr.Ended() {
		if s.Name() == "POST" {
			attempts = append(attempts, s)
		} else {
			logical = s
		}
	}
	require.Len(t, attempts, 2)
	v, ok := attrOf(attempts[0].Attributes(), "recourse.failure.stall")
	assert.True(t, ok)
	assert.Equal(t, "header_timeout", v)
	assert.Equal(t, codes.Error, attempts[0].Status().Code)
	assert.Equal(t, "header_timeout", attempts[0].Status().Description)
	_, ok = attrOf(attempts[1].Attributes(), "recourse.failure.stall")
	assert.False(t, ok)
	v, ok = attrOf(attempts[1].Attributes(), "recourse.failure.hint")
	assert.True(t, ok)
	assert.Equal(t, "x_should_retry_false", v)

	require.NotNil(t, logical)
	var sawStall, sawHint bool
	for _, e := range logical.Events() {
		if v, ok := attrOf(e.Attributes, "recourse.failure.stall"); ok && v == "header_timeout" && e.Name == "recourse.delay.scheduled" {
			sawStall = true
		}
		if v, ok := attrOf(e.Attributes, "recourse.failure.hint"); ok && v == "x_should_retry_false" && e.Name == "recourse.interrupted" {
			sawHint = true
		}
	}
	assert.True(t, sawStall, "the delay_scheduled event names the stall")
	assert.True(t, sawHint, "the terminal event names the hint")
}
