package chain_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/recourse-dev/recourse/chain"
	"github.com/recourse-dev/recourse/chat"
	"github.com/recourse-dev/recourse/client"
	"github.com/recourse-dev/recourse/codecs/openai"
	"github.com/recourse-dev/recourse/layer"
	"github.com/recourse-dev/recourse/layers/retry"
	"github.com/recourse-dev/recourse/recoursetest"
)

// The native client hands its encoded body to the engine as a
// layer.RequestBody, which the engine keeps without copying: every attempt
// sends exactly those bytes (R2.3, R2.5). A per-call layer that replaces
// the body, or reads part of it, gets what the request then holds sent,
// as for any other body.
func TestR2_3_NativeBodyIsSentAsEncoded(t *testing.T) {
	req := &chat.Request{Model: "gpt-4o-mini", Messages: []chat.Message{{Role: chat.User, Content: "hi"}}}
	want := encoded(t, req)

	srv := recoursetest.NewServer(recoursetest.JSON(503, `{}`), recoursetest.JSON(200, recoursetest.OpenAIChat("ok")))
	defer srv.Close()
	pol := retry.Policy{MaxAttempts: 2, Admit: allowHook, Jitter: func() float64 { return 0 }}
	ch, err := chain.Default(openai.New(), chain.WithPolicy(pol))
	require.NoError(t, err)
	c, err := client.New(srv.URL, ch)
	require.NoError(t, err)
	_, err = c.Complete(context.Background(), req)
	require.NoError(t, err)
	reqs := srv.Requests()
	require.Len(t, reqs, 2)
	for _, r := range reqs {
		require.Equal(t, string(want), string(r.Body))
	}

	for name, replace := range map[string]func(*http.Request) *http.Request{
		"replaced": func(r *http.Request) *http.Request {
			out := r.Clone(r.Context())
			out.Body, out.ContentLength = io.NopCloser(strings.NewReader(`{"replaced":true}`)), 17
			return out
		},
		"partly read": func(r *http.Request) *http.Request {
			_, _ = io.ReadFull(r.Body, make([]byte, 2))
			return r
		},
	} {
		t.Run(name, func(t *testing.T) {
			srv := recoursetest.NewServer(recoursetest.JSON(200, recoursetest.OpenAIChat("ok")))
			defer srv.Close()
			var sent string
			edit := layer.NewPerCall("edit", func(next http.RoundTripper) http.RoundTripper {
				return roundTripFunc(func(r *http.Request) (*http.Response, error) {
					r = replace(r)
					return next.RoundTrip(r)
				})
			})
			ch, err := chain.Default(openai.New(), chain.WithPerCall(edit))
			require.NoError(t, err)
			c, err := client.New(srv.URL, ch)
			require.NoError(t, err)
			_, _ = c.Complete(context.Background(), req)
			reqs := srv.Requests()
			require.Len(t, reqs, 1)
			sent = string(reqs[0].Body)
			if name == "replaced" {
				require.Equal(t, `{"replaced":true}`, sent)
			} else {
				require.Equal(t, string(want[2:]), sent)
			}
		})
	}
}
