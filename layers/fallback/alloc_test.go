//go:build !race

package fallback_test

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/recourse-dev/recourse/codecs/openai"
	"github.com/recourse-dev/recourse/layers/fallback"
)

// roundTripFunc is a stand-in for the engine below the layer.
type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// TestR20_11_SuccessAllocatesOnlyTheCall pins the layer's own cost when
// the first target answers a drop-in call nobody watches: the *layer.Call
// it places (the Call, the context that carries it and the request's
// shallow copy), and nothing for the body, which the engine takes as
// without the layer (the race detector adds allocations of its own, so
// this file is built without it).
func TestR20_11_SuccessAllocatesOnlyTheCall(t *testing.T) {
	l, err := fallback.New(fallback.Config{Codec: openai.New(), Targets: []fallback.Target{{Model: "gpt-4o-mini"}}})
	require.NoError(t, err)
	ok := &http.Response{StatusCode: 200, Body: http.NoBody}
	var read int
	engine := roundTripFunc(func(r *http.Request) (*http.Response, error) {
		n, err := io.Copy(io.Discard, r.Body)
		read = int(n)
		return ok, err
	})
	body := strings.NewReader(chatBody("gpt-4o", false))
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, "http://127.0.0.1/v1/chat/completions", body)
	require.NoError(t, err)
	rt := l.Wrap(engine)
	allocs := testing.AllocsPerRun(100, func() {
		body.Seek(0, io.SeekStart)
		if resp, err := rt.RoundTrip(req); err != nil || resp != ok {
			t.Fatalf("round trip: %v", err)
		}
	})
	assert.Equal(t, len(chatBody("gpt-4o", false)), read, "the engine reads the body as given")
	assert.Equal(t, 3.0, allocs)
}
