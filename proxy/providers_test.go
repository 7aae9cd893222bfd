package proxy_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/recourse-dev/recourse/proxy"
)

// TestR1_1_ProvidersCannotBeChangedByAnImporter: the provider names are a
// copy: overwriting a returned slice changes neither the next one nor the
// names New accepts and its error lists.
func TestR1_1_ProvidersCannotBeChangedByAnImporter(t *testing.T) {
	names := proxy.Providers()
	require.Equal(t, []string{"openai", "ollama", "omlx", "gemini", "anthropic"}, names)
	for i := range names {
		names[i] = "bogus"
	}
	assert.Equal(t, []string{"openai", "ollama", "omlx", "gemini", "anthropic"}, proxy.Providers())
	_, err := proxy.New(proxy.Config{Provider: "bogus", Upstream: "http://127.0.0.1:1"})
	var ce *proxy.ConfigError
	require.ErrorAs(t, err, &ce)
	assert.Contains(t, ce.Problem, "openai, ollama, omlx, gemini, anthropic")
	_, err = proxy.New(proxy.Config{Provider: "openai", Upstream: "http://127.0.0.1:1"})
	assert.NoError(t, err)
}
