package layertest_test

import (
	"context"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/recourse-dev/recourse/layer"
	"github.com/recourse-dev/recourse/layer/layertest"
)

type ctxKey struct{}

// mutations are layers that change the caller's request in place, by
// name, each with what Layer must report; "cloned" changes a clone only.
var mutations = map[string]struct {
	want   string
	mutate func(*http.Request) *http.Request
}{
	"header-added":    {"Header", func(r *http.Request) *http.Request { r.Header.Add("X-Added", "1"); return r }},
	"header-replaced": {"Header (replaced)", func(r *http.Request) *http.Request { r.Header = r.Header.Clone(); return r }},
	"url-path":        {"URL", func(r *http.Request) *http.Request { r.URL.Path += "/x"; return r }},
	"url-query":       {"URL", func(r *http.Request) *http.Request { r.URL.RawQuery = "a=1"; return r }},
	"body": {"Body", func(r *http.Request) *http.Request {
		r.Body = io.NopCloser(strings.NewReader(`{"model":"m"}`))
		return r
	}},
	"context": {"context", func(r *http.Request) *http.Request {
		*r = *r.WithContext(context.WithValue(r.Context(), ctxKey{}, 1))
		return r
	}},
	"method": {"Method", func(r *http.Request) *http.Request { r.Method = http.MethodPut; return r }},
	"cloned": {"", func(r *http.Request) *http.Request {
		c := r.Clone(context.WithValue(r.Context(), ctxKey{}, 1))
		c.Header.Add("X-Added", "1")
		c.URL.Path += "/x"
		return c
	}},
}

const mutationEnv = "LAYERTEST_MUTATION"

// TestR2_3_LayerCatchesEveryInPlaceChangeOfTheCallersRequest: Layer fails a
// layer that changes the caller's request in place — its header (a value
// added, the map replaced), its URL (path, query), its body, its context or
// its method — and passes one that clones the request before changing it.
// Each layer is checked by Layer in a child run of this test binary, whose
// failure and message are the result.
func TestR2_3_LayerCatchesEveryInPlaceChangeOfTheCallersRequest(t *testing.T) {
	if name := os.Getenv(mutationEnv); name != "" {
		// The child: check one layer with the public contract test.
		m := mutations[name]
		layertest.Layer(t, layer.NewPerAttempt("mutating", func(next http.RoundTripper) http.RoundTripper {
			return layer.RoundTripperFunc(func(req *http.Request) (*http.Response, error) {
				return next.RoundTrip(m.mutate(req))
			})
		}))
		return
	}
	exe, err := os.Executable()
	require.NoError(t, err)
	for name, m := range mutations {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			cmd := exec.Command(exe, "-test.run=^TestR2_3_LayerCatchesEveryInPlaceChangeOfTheCallersRequest$", "-test.count=1")
			cmd.Env = append(os.Environ(), mutationEnv+"="+name)
			out, err := cmd.CombinedOutput()
			if m.want == "" {
				assert.NoError(t, err, "a layer that clones first passes:\n%s", out)
				return
			}
			require.Error(t, err, "Layer passed a layer that changes the request in place")
			assert.Contains(t, string(out), "the caller's request was modified in place: "+m.want+" ")
		})
	}
}
