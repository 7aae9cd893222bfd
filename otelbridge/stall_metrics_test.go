package otelbridge_test

import (
	"context"
	"net/http"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"

	"github.com/recourse-dev/recourse/codecs/openai"
	"github.com/recourse-dev/recourse/event"
	"github.com/recourse-dev/recourse/internal/attempt"
	"github.com/recourse-dev/recourse/internal/rigtest"
	"github.com/recourse-dev/recourse/layer"
	"github.com/recourse-dev/recourse/layers/retry"
	"github.com/recourse-dev/recourse/layers/stall"
	"github.com/recourse-dev/recourse/recoursetest"
)

// byKeys groups a counter's values by the values of keys, joined by "|"
// ("-" for a point without the key).
func byKeys(pts []attribute.Set, vals []int64, keys ...attribute.Key) map[string]int64 {
	out := map[string]int64{}
	for i, s := range pts {
		k := ""
		for j, key := range keys {
			if j > 0 {
				k += "|"
			}
			if v, ok := s.Value(key); ok {
				k += v.String()
			} else {
				k += "-"
			}
		}
		out[k] += vals[i]
	}
	return out
}

const (
	keyStall = attribute.Key("recourse.failure.stall")
	keyHint  = attribute.Key("recourse.failure.hint")
)

// TestMetricsStallAndHintLabels: the real stall layer ends the first
// attempt with its header limit (the provider never answers it); the
// second attempt is a 503 with "x-should-retry: false", which the policy
// honours. The failed attempts, the resend and its delay carry
// recourse.failure.stall; the second failed attempt and the completion's
// outcome carry recourse.failure.hint — where the spans carry them. The
// succeeded attempts of a clean call carry neither.
func TestMetricsStallAndHintLabels(t *testing.T) {
	synctest.Test(t, testMetricsStallAndHintLabels)
}

func testMetricsStallAndHintLabels(t *testing.T) {
	never := make(chan struct{})
	defer close(never)
	st, err := stall.New(stall.Limits{Header: 90 * time.Second})
	require.NoError(t, err)
	f := newMemoryFixtureLayers(t, openai.New(), retry.Policy{MaxAttempts: 3, ProviderHints: true}, []layer.Layer{st},
		recoursetest.JSON(200, recoursetest.OpenAIChat("never sent")).Gated(-1, never),
		recoursetest.JSON(503, recoursetest.OpenAIError("server_error", "server_error", "busy"), "x-should-retry", "false"),
		recoursetest.JSON(200, recoursetest.OpenAIChat("fine")))

	start := time.Now()
	_, err = f.client.Complete(context.Background(), request(model))
	assert.Equal(t, 90*time.Second, time.Since(start), "the header limit ended the first attempt on the bubble's clock")
	var re *layer.RecoveryError
	require.ErrorAs(t, err, &re)
	assert.Equal(t, event.ReasonProviderNoRetry, re.Failure.Classification.Reason)
	assert.Equal(t, event.HintShouldNotRetry, re.Failure.Hint)
	comp, err := f.client.Complete(context.Background(), request(model))
	require.NoError(t, err)
	assert.Equal(t, "fine", comp.Message.Content)
	assert.Equal(t, 3, f.srv.Count(), "the stalled attempt reached the provider")

	rm := f.metrics()
	sets := func(name string) ([]attribute.Set, []int64) {
		var s []attribute.Set
		var v []int64
		for _, p := range points(t, rm, name) {
			assertCommon(t, f, p.Attributes)
			s, v = append(s, p.Attributes), append(v, p.Value)
		}
		return s, v
	}

	s, v := sets("recourse.client.attempts")
	assert.Equal(t, map[string]int64{
		"failed|transport|header_timeout|-": 1,
		"failed|503|-|x_should_retry_false": 1,
		"succeeded|-|-|-":                   1,
	}, byKeys(s, v, "recourse.attempt.outcome", "error.type", keyStall, keyHint))

	s, v = sets("recourse.client.resends")
	assert.Equal(t, map[string]int64{"transport|header_timeout|-": 1},
		byKeys(s, v, "recourse.failure.category", keyStall, keyHint))

	delays := histogram(t, rm, "recourse.client.retry.delay")
	require.Len(t, delays, 1)
	assertCommon(t, f, delays[0].Attributes)
	got, ok := delays[0].Attributes.Value(keyStall)
	require.True(t, ok, "the delay names the stall that caused it")
	assert.Equal(t, "header_timeout", got.AsString())
	assert.Equal(t, uint64(1), delays[0].Count)

	s, v = sets("recourse.client.outcomes")
	out := byKeys(s, v, "recourse.outcome", keyStall, keyHint)
	assert.Equal(t, int64(1), out["success|-|-"])
	assert.Len(t, out, 2, "one failed and one successful completion: %v", out)
	delete(out, "success|-|-")
	for k, n := range out {
		assert.Equal(t, int64(1), n)
		assert.Contains(t, k, "|-|x_should_retry_false", "the final failure's hint, and no stall: it was not the final failure")
	}

	// The attempt spans say the same.
	var stalled, hinted int
	for _, a := range f.sr.Ended() {
		if a.Name() != "POST" {
			continue
		}
		m := attrs(a.Attributes())
		if m[keyStall].AsString() == "header_timeout" {
			stalled++
		}
		if m[keyHint].AsString() == "x_should_retry_false" {
			hinted++
		}
	}
	assert.Equal(t, 1, stalled)
	assert.Equal(t, 1, hinted)
}

// TestMetricsStallLabelIsBounded: a per-attempt layer of the application
// may return a StallError with a limit of its own. Such a value labels no
// metric and no span (the series stay a fixed set), and a canary in it
// reaches no safe output; the fixture's metric canary scan runs when the
// test ends.
func TestMetricsStallLabelIsBounded(t *testing.T) {
	first := true
	own := layer.NewPerAttempt("own-stall", func(next http.RoundTripper) http.RoundTripper {
		return layer.RoundTripperFunc(func(req *http.Request) (*http.Response, error) {
			if first {
				first = false
				if err := attempt.From(req.Context()).Begin(); err != nil {
					return nil, err
				}
				return nil, &layer.StallError{Limit: event.StallLimit("limit-" + rigtest.Key), After: time.Second}
			}
			return next.RoundTrip(req)
		})
	})
	f := newFixtureLayers(t, openai.New(), retry.Policy{MaxAttempts: 2}, nil, nil, []layer.Layer{own},
		recoursetest.JSON(200, recoursetest.OpenAIChat("fine")))
	_, err := f.client.Complete(context.Background(), request(model))
	require.NoError(t, err)

	failed := rigtest.EventsOf(f.rec.Events(), event.AttemptFailed)
	require.Len(t, failed, 1)
	assert.Equal(t, event.CategoryTransport, failed[0].Failure.Category, "still a transport failure")
	assert.Empty(t, failed[0].Failure.Stall, "an undefined limit is not recorded")

	rm := f.metrics()
	for _, name := range []string{"recourse.client.attempts", "recourse.client.resends"} {
		for _, p := range points(t, rm, name) {
			_, ok := p.Attributes.Value(keyStall)
			assert.False(t, ok, "%s: no stall label outside the vocabulary", name)
		}
	}
	for _, p := range histogram(t, rm, "recourse.client.retry.delay") {
		_, ok := p.Attributes.Value(keyStall)
		assert.False(t, ok)
	}
	logical, attempts := f.tree()
	for _, s := range append(attempts, logical) {
		scan(t, s)
		_, ok := attrs(s.Attributes())[keyStall]
		assert.False(t, ok)
	}
}
