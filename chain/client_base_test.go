package chain_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/recourse-dev/recourse/chain"
	"github.com/recourse-dev/recourse/client"
	"github.com/recourse-dev/recourse/codec"
	"github.com/recourse-dev/recourse/codecs/ollama"
	"github.com/recourse-dev/recourse/codecs/openai"
	"github.com/recourse-dev/recourse/recoursetest"
)

// NewClient takes the provider's root or, as SDKs take it, the root with
// the first segments of the endpoint path; both post to the endpoint once,
// never to /v1/v1/….
func TestNewClientBaseWithOrWithoutTheAPIPrefix(t *testing.T) {
	for _, tc := range []struct {
		codec  codec.Codec
		suffix string
		body   string
		path   string
	}{
		{openai.New(), "", recoursetest.OpenAIChat("hi"), "/v1/chat/completions"},
		{openai.New(), "/", recoursetest.OpenAIChat("hi"), "/v1/chat/completions"},
		{openai.New(), "/v1", recoursetest.OpenAIChat("hi"), "/v1/chat/completions"},
		{openai.New(), "/v1/", recoursetest.OpenAIChat("hi"), "/v1/chat/completions"},
		{openai.New(), "/proxy/v1", recoursetest.OpenAIChat("hi"), "/proxy/v1/chat/completions"},
		{ollama.New(), "", recoursetest.OllamaChat("hi"), "/api/chat"},
		{ollama.New(), "/api", recoursetest.OllamaChat("hi"), "/api/chat"},
	} {
		t.Run(string(tc.codec.Provider())+tc.suffix, func(t *testing.T) {
			srv := recoursetest.NewServer(recoursetest.JSON(200, tc.body))
			defer srv.Close()
			ch, err := chain.Default(tc.codec)
			require.NoError(t, err)
			cl, err := client.New(srv.URL+tc.suffix, ch)
			require.NoError(t, err)
			_, err = cl.Complete(context.Background(), canaryRequest())
			require.NoError(t, err)
			reqs := srv.Requests()
			require.Len(t, reqs, 1)
			assert.Equal(t, tc.path, reqs[0].Path)
		})
	}
}

// A base URL that is not an absolute http(s) URL, or that has a query, is
// refused at construction.
func TestNewClientRefusesABadBase(t *testing.T) {
	ch, err := chain.Default(openai.New())
	require.NoError(t, err)
	for _, base := range []string{"", "api.openai.com", "ftp://h/v1", "https://h/v1?key=x", "https://h/v1#f", "http://"} {
		_, err := client.New(base, ch)
		assert.Error(t, err, base)
	}
}
