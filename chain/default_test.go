package chain_test

import (
	"errors"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/recourse-dev/recourse/chain"
	"github.com/recourse-dev/recourse/codecs/openai"
	"github.com/recourse-dev/recourse/layer"
	"github.com/recourse-dev/recourse/otelbridge"
)

func pass(next http.RoundTripper) http.RoundTripper { return next }

// Default places the layers of WithPerCall and WithPerAttempt at their
// positions, in the order given, around its own stages.
func TestDefaultPlacesUserLayers(t *testing.T) {
	ch, err := chain.Default(openai.New(),
		chain.WithPerCall(otelbridge.New()),
		chain.WithPerCall(layer.NewPerCall("log", pass), layer.NewPerCall("cache", pass)),
		chain.WithPerAttempt(layer.NewPerAttempt("sign", pass), layer.NewPerAttempt("limit", pass)),
	)
	require.NoError(t, err)
	assert.Equal(t, "tracing > log > cache > retry > capture > progress > sign > limit > redirectguard > sender", ch.Order())

	ch, err = chain.Default(openai.New(), chain.WithoutRecovery(), chain.WithPerAttempt(layer.NewPerAttempt("sign", pass)))
	require.NoError(t, err)
	assert.Equal(t, "retry > capture > progress > sign > redirectguard > sender", ch.Order(), "the engine stays, recovery off")
}

// A layer given to the option of the other position, or a nil one, is
// refused with a *chain.CompositionError that names it.
func TestDefaultRefusesMisplacedUserLayers(t *testing.T) {
	for name, opt := range map[string]chain.Option{
		"per-attempt as per-call": chain.WithPerCall(layer.NewPerAttempt("sign", pass)),
		"per-call as per-attempt": chain.WithPerAttempt(layer.NewPerCall("log", pass)),
		"nil per-call":            chain.WithPerCall(nil),
	} {
		t.Run(name, func(t *testing.T) {
			ch, err := chain.Default(openai.New(), opt)
			assert.Nil(t, ch)
			var ce *chain.CompositionError
			require.True(t, errors.As(err, &ce), "got %T %v", err, err)
			assert.Equal(t, 0, ce.Index)
			assert.Contains(t, ce.Error(), "chain: layer 0 (")
		})
	}
}
