package fallback_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/recourse-dev/recourse/chain"
	"github.com/recourse-dev/recourse/codec"
	"github.com/recourse-dev/recourse/event"
	"github.com/recourse-dev/recourse/internal/rigtest"
	"github.com/recourse-dev/recourse/layer"
	"github.com/recourse-dev/recourse/layers/fallback"
	"github.com/recourse-dev/recourse/layers/retry"
	"github.com/recourse-dev/recourse/recoursetest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// targetKey is a canary: the credential a target's function gives.
const targetKey = "sk-TARGETCANARY-91bd0e2f5a"

// fixture is a rig whose chain has a fallback layer; rec sees the
// engine's and the layer's events in one order.
type fixture struct {
	*rigtest.Rig
	rec *rigtest.Recorder
}

func newFixture(t *testing.T, cdc codec.Codec, p retry.Policy, cfg fallback.Config, steps ...recoursetest.Step) *fixture {
	t.Helper()
	return newFixtureWith(t, cdc, p, cfg, nil, steps...)
}

func newFixtureWith(t *testing.T, cdc codec.Codec, p retry.Policy, cfg fallback.Config, before []layer.Layer, steps ...recoursetest.Step) *fixture {
	t.Helper()
	rec := &rigtest.Recorder{}
	p.OnEvent = rec.OnEvent
	cfg.Codec = cdc
	cfg.OnEvent = rec.OnEvent
	l, err := fallback.New(cfg)
	require.NoError(t, err)
	r := rigtest.NewWith(t, cdc, p, []chain.Option{chain.WithPerCall(append(before, l)...)}, steps...)
	return &fixture{Rig: r, rec: rec}
}

// newMemoryFixture is newFixtureWith over recoursetest.NewMemoryServer, for
// a test inside a testing/synctest bubble: the policy's clocks and Sleep
// stay the bubble's unless p sets them. Call it inside the bubble; the
// server is closed when the test ends.
func newMemoryFixture(t *testing.T, cdc codec.Codec, p retry.Policy, cfg fallback.Config, before []layer.Layer, steps ...recoursetest.Step) *fixture {
	t.Helper()
	rec := &rigtest.Recorder{}
	p.OnEvent = rec.OnEvent
	cfg.Codec = cdc
	cfg.OnEvent = rec.OnEvent
	l, err := fallback.New(cfg)
	require.NoError(t, err)
	srv := recoursetest.NewMemoryServer(steps...)
	t.Cleanup(srv.Close)
	ch, err := chain.Default(cdc, chain.WithPolicy(p), chain.WithTransport(srv.Transport()), chain.WithPerCall(append(before, l)...))
	require.NoError(t, err)
	return &fixture{Rig: &rigtest.Rig{T: t, Server: srv, Rec: rec, Chain: ch, HTTP: &http.Client{Transport: ch}}, rec: rec}
}

// chatBody is an OpenAI chat request for model, with the prompt canary.
func chatBody(model string, stream bool) string {
	b, _ := json.Marshal(map[string]any{
		"model":    model,
		"messages": []map[string]string{{"role": "user", "content": rigtest.Prompt}},
		"stream":   stream,
	})
	return string(b)
}

// post sends body as an SDK would, with the rig's key, and carries a
// *layer.Call so that the test can read the typed result.
func (f *fixture) post(t *testing.T, path, body string) (*http.Response, *layer.Call, error) {
	t.Helper()
	lc := &layer.Call{}
	req, err := http.NewRequestWithContext(layer.WithCall(t.Context(), lc), http.MethodPost, f.Server.URL+path, strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+rigtest.Key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := f.HTTP.Do(req)
	return resp, lc, err
}

func readBody(t *testing.T, resp *http.Response) string {
	t.Helper()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	return string(b)
}

// models returns the model of every request the server saw.
func models(t *testing.T, s *recoursetest.Server) []string {
	t.Helper()
	var out []string
	for _, r := range s.Requests() {
		var m struct {
			Model string `json:"model"`
		}
		require.NoError(t, json.Unmarshal(r.Body, &m))
		out = append(out, m.Model)
	}
	return out
}

// fallbacks returns the Fallback of every event of type typ.
func fallbacks(rec *rigtest.Recorder, typ event.Type) []event.FallbackStep {
	var out []event.FallbackStep
	for _, ev := range rec.Events() {
		if ev.Type == typ && ev.Fallback != nil {
			out = append(out, *ev.Fallback)
		}
	}
	return out
}

func unavailable() recoursetest.Step {
	return recoursetest.JSON(503, recoursetest.OpenAIError("server_error", "server_error", "overloaded"))
}

func stringsReader(s string) io.Reader { return strings.NewReader(s) }

// readAll reads resp's body to its end or error.
func readAll(resp *http.Response) (string, error) {
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	return string(b), err
}

func indexOf(xs []string, x string) int {
	for i, v := range xs {
		if v == x {
			return i
		}
	}
	return -1
}
