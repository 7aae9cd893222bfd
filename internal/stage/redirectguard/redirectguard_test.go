package redirectguard_test

import (
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/recourse-dev/recourse/internal/stage/redirectguard"
	"github.com/recourse-dev/recourse/layer"
	"github.com/recourse-dev/recourse/recoursetest"
)

// guarded returns an http.Client with its default redirect policy whose
// transport is the guard over a fresh loopback transport.
func guarded(t *testing.T) *http.Client {
	t.Helper()
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: redirectguard.New().Wrap(tr)}
}

// TestR2_2_GuardRefusesEveryRedirect: every redirect status, to another
// origin or the same one, comes back as a *layer.RedirectError carrying the
// status, the Location and the body, and neither the Location nor the
// server is asked again — even by an http.Client that follows redirects
// (R2.2).
func TestR2_2_GuardRefusesEveryRedirect(t *testing.T) {
	for _, status := range []int{301, 302, 303, 307, 308} {
		for _, sameOrigin := range []bool{false, true} {
			target := recoursetest.NewTarget()
			loc := target.URL + "/v1/chat/completions"
			if sameOrigin {
				loc = "/elsewhere"
			}
			srv := recoursetest.NewServer(recoursetest.Redirect(status, loc), recoursetest.Redirect(status, loc))

			resp, err := guarded(t).Post(srv.URL+"/v1/chat/completions", "application/json", strings.NewReader(`{}`))
			if resp != nil {
				_ = resp.Body.Close()
			}

			var refused *layer.RedirectError
			require.True(t, errors.As(err, &refused), "status %d: %v", status, err)
			assert.Equal(t, status, refused.StatusCode())
			assert.Equal(t, loc, refused.Response.Header.Get("Location"))
			assert.Empty(t, refused.Body, "Redirect steps have an empty body")
			assert.Equal(t, 0, target.Hits(), "R2.2: the Location is never contacted")
			assert.Equal(t, 1, srv.Count(), "R2.2: nothing is followed, not even to the same origin")
			srv.Close()
			target.Close()
		}
	}
}

// TestR2_2_GuardPassesEveryOtherStatus: a response that is not a redirect,
// 421 and 304 included, reaches the caller unchanged with its body.
func TestR2_2_GuardPassesEveryOtherStatus(t *testing.T) {
	for _, status := range []int{200, 304, 400, 421, 503} {
		body := recoursetest.OpenAIError("server_error", "", "busy")
		if status == 304 {
			body = "" // a 304 has no body
		}
		srv := recoursetest.NewServer(recoursetest.JSON(status, body))

		resp, err := guarded(t).Post(srv.URL, "application/json", strings.NewReader(`{}`))
		require.NoError(t, err, "status %d", status)
		got, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		require.NoError(t, resp.Body.Close())
		assert.Equal(t, status, resp.StatusCode)
		assert.Equal(t, body, string(got))
		srv.Close()
	}
}

// TestR2_2_GuardKeepsAtMostMaxBodyOfARedirectBody: the evidence a refused
// redirect keeps is bounded by MaxBody however long its body is.
func TestR2_2_GuardKeepsAtMostMaxBodyOfARedirectBody(t *testing.T) {
	long := strings.Repeat("x", redirectguard.MaxBody+1000)
	srv := recoursetest.NewServer(recoursetest.JSON(307, long, "Location", "/elsewhere"))
	defer srv.Close()

	resp, err := guarded(t).Post(srv.URL, "application/json", strings.NewReader(`{}`))
	if resp != nil {
		_ = resp.Body.Close()
	}

	var refused *layer.RedirectError
	require.True(t, errors.As(err, &refused), "%v", err)
	assert.Len(t, refused.Body, redirectguard.MaxBody)
	assert.Equal(t, long[:redirectguard.MaxBody], string(refused.Body))
	assert.Equal(t, 1, srv.Count())
}
