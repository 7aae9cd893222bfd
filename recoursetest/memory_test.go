package recoursetest_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/recourse-dev/recourse/chain"
	"github.com/recourse-dev/recourse/chat"
	"github.com/recourse-dev/recourse/client"
	"github.com/recourse-dev/recourse/codecs/openai"
	"github.com/recourse-dev/recourse/event"
	"github.com/recourse-dev/recourse/layers/retry"
	"github.com/recourse-dev/recourse/layers/stall"
	"github.com/recourse-dev/recourse/recoursetest"
)

// A memory server inside a bubble: the chain honours a 30 s Retry-After on
// the bubble's clock with the policy's clocks left nil, so the retry
// starts exactly 30 s after the call did, and no real time passes.
func TestMemoryServerRetryAfterRunsOnTheBubbleClock(t *testing.T) {
	realStart := time.Now()
	synctest.Test(t, func(t *testing.T) {
		srv := recoursetest.NewMemoryServer(
			recoursetest.JSON(429, recoursetest.OpenAIError("rate_limit_exceeded", "rate_limit_exceeded", "slow down"), "Retry-After", "30"),
			recoursetest.JSON(200, recoursetest.OpenAIChat("hello")),
		)
		defer srv.Close()
		var at []time.Duration
		start := time.Now()
		ch, err := chain.Default(openai.New(), chain.WithTransport(srv.Transport()), chain.WithPolicy(retry.Policy{
			MaxAttempts: 2,
			OnEvent: func(e event.Event) error {
				if e.Type == event.AttemptStarted {
					at = append(at, time.Since(start))
				}
				return nil
			},
		}))
		require.NoError(t, err)
		cl, err := client.New(srv.URL, ch, client.WithAPIKey("sk-test"))
		require.NoError(t, err)
		comp, err := cl.Complete(context.Background(), &chat.Request{Model: "m", Messages: []chat.Message{{Role: chat.User, Content: "hi"}}})
		require.NoError(t, err)
		assert.Equal(t, "hello", comp.Message.Content)
		assert.Equal(t, []time.Duration{0, 30 * time.Second}, at)
		assert.Equal(t, 2, srv.Count())
		assert.Equal(t, "/v1/chat/completions", srv.Requests()[1].Path)
	})
	assert.Less(t, time.Since(realStart), 20*time.Second, "the 30 s wait ran on the bubble's clock")
}

// A stall limit on the bubble's clock: a response held open after its
// headers ends with the idle limit exactly when the limit has elapsed.
func TestMemoryServerStallLimitFiresOnTheBubbleClock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := recoursetest.NewMemoryServer(recoursetest.SSE(recoursetest.OpenAIStream("a")[:1]...).Held())
		defer srv.Close()
		st, err := stall.New(stall.Limits{Idle: 45 * time.Second})
		require.NoError(t, err)
		ch, err := chain.Default(openai.New(), chain.WithTransport(srv.Transport()), chain.WithoutRecovery(), chain.WithPerAttempt(st))
		require.NoError(t, err)
		req, err := http.NewRequest(http.MethodPost, srv.URL+"/v1/chat/completions",
			strings.NewReader(`{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}`))
		require.NoError(t, err)
		start := time.Now()
		resp, err := (&http.Client{Transport: ch}).Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		_, err = io.ReadAll(resp.Body)
		require.Error(t, err)
		assert.Equal(t, 45*time.Second, time.Since(start))
	})
}

// Dialling a closed memory server is refused, as dialling a closed port is.
func TestMemoryServerClosedRefusesConnections(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := recoursetest.NewMemoryServer(recoursetest.JSON(200, `{}`))
		tr := srv.Transport()
		srv.Close()
		req, err := http.NewRequest(http.MethodGet, srv.URL+"/v1/models", nil)
		require.NoError(t, err)
		_, err = tr.RoundTrip(req)
		require.ErrorContains(t, err, "connection refused")
		assert.Equal(t, 0, srv.Count())
	})
}

// A Reset step on a memory server closes the connection before any
// response byte; the client sees a transport error.
func TestMemoryServerResetClosesTheConnection(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := recoursetest.NewMemoryServer(recoursetest.Reset())
		defer srv.Close()
		req, err := http.NewRequest(http.MethodPost, srv.URL+"/v1/chat/completions", strings.NewReader(`{}`))
		require.NoError(t, err)
		_, err = srv.Transport().RoundTrip(req)
		require.Error(t, err)
		assert.Equal(t, 1, srv.Count())
	})
}

// A handler of the test's own served on the memory network answers over
// HTTP/1.1 through the returned transport, its waits run on the bubble's
// clock, and once the server is closed new connections are refused.
func TestServeMemoryServesAHandlerOnTheBubbleClock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv, tr := recoursetest.ServeMemory(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			time.Sleep(time.Hour) // a slow handler, on the bubble's clock
			_, _ = io.WriteString(w, r.Proto+" "+r.URL.Path)
		}))
		defer tr.CloseIdleConnections()
		assert.Regexp(t, `^http://s[0-9]+\.recoursetest\.invalid$`, srv.URL)

		start := time.Now()
		resp, err := (&http.Client{Transport: tr.Clone()}).Get(srv.URL + "/v1/models")
		require.NoError(t, err)
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		require.NoError(t, resp.Body.Close())
		assert.Equal(t, "HTTP/1.1 /v1/models", string(b))
		assert.Equal(t, time.Hour, time.Since(start))

		srv.Close()
		req, err := http.NewRequest(http.MethodGet, srv.URL+"/v1/models", nil)
		require.NoError(t, err)
		_, err = tr.RoundTrip(req)
		assert.True(t, errors.Is(err, syscall.ECONNREFUSED), "got %v", err)
	})
}

// Every memory server has a host of its own, and one memory transport
// reaches each by its host: a chain can fall back from one memory server to
// another, and no two servers share an upstream key. A host that is no
// memory server's is refused without a lookup; a closed server's is refused
// as a closed port is.
func TestMemoryTransportReachesEachServerByItsHost(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a := recoursetest.NewMemoryServer(recoursetest.JSON(200, `"a"`))
		b := recoursetest.NewMemoryServer(recoursetest.JSON(200, `"b"`))
		defer a.Close()
		assert.NotEqual(t, a.URL, b.URL)
		client := &http.Client{Transport: a.Transport()}
		defer client.CloseIdleConnections()
		get := func(base string) (string, error) {
			resp, err := client.Get(base + "/v1/models")
			if err != nil {
				return "", err
			}
			defer resp.Body.Close()
			body, err := io.ReadAll(resp.Body)
			return string(body), err
		}
		got, err := get(b.URL)
		require.NoError(t, err)
		assert.Equal(t, `"b"`, got, "a's transport reaches b by its host")
		got, err = get(a.URL)
		require.NoError(t, err)
		assert.Equal(t, `"a"`, got)
		b.Close()
		_, err = get(b.URL)
		assert.ErrorContains(t, err, "connection refused")
		_, err = get("http://example.com")
		assert.ErrorContains(t, err, "reaches only memory servers")
		assert.Equal(t, 1, a.Count())
		assert.Equal(t, 1, b.Count())
	})
}
