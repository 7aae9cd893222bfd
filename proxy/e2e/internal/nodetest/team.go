package nodetest

import (
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/recourse-dev/recourse/layers/retry"
	"github.com/recourse-dev/recourse/proxy"
	"github.com/recourse-dev/recourse/recoursetest"
)

// Team is a team's proxy for the end-to-end tests of R21.15: a Router of
// two routes, OpenAI's (in front of an upstream that must never be
// contacted) and the wire's own, named after its provider, which holds
// heldKey and admits only clientKey, for that route.
type Team struct {
	// URL is the proxy's root URL, the client's base URL.
	URL string
	// Up is the wire's scripted upstream.
	Up *recoursetest.Server
	// HeldKey is the key the wire's route holds.
	HeldKey string
}

// NewTeam starts the team's proxy for provider in front of an upstream
// playing steps; nothing waits between attempts. At the test's end it
// checks that the OpenAI route's upstream saw nothing.
func NewTeam(t *testing.T, provider, clientKey, heldKey string, steps ...recoursetest.Step) *Team {
	t.Helper()
	up := recoursetest.NewServer(steps...)
	t.Cleanup(up.Close)
	decoy := recoursetest.NewServer()
	t.Cleanup(func() {
		assert.Zero(t, decoy.Count(), "nothing reached the other route")
		decoy.Close()
	})
	p := retry.Recommended()
	p.BaseDelay = new(time.Duration(0))
	rt, err := proxy.NewRouter(proxy.RouterConfig{
		ClientKeys: []proxy.ClientKey{{Hash: proxy.HashKey(clientKey), Name: "team", Routes: []string{provider}}},
		Routes: []proxy.Route{
			{Name: "openai", Config: proxy.Config{Provider: "openai", Upstream: decoy.URL, Policy: p}},
			{Name: provider, Config: proxy.Config{Provider: provider, Upstream: up.URL, Policy: p, UpstreamKey: heldKey}},
		},
	})
	require.NoError(t, err)
	srv := httptest.NewServer(rt)
	t.Cleanup(srv.Close)
	return &Team{URL: srv.URL, Up: up, HeldKey: heldKey}
}

// CheckHeld checks that every request the upstream got carried the held
// key in header and nowhere the client's key, in a header or the query.
func (tm *Team) CheckHeld(t *testing.T, header, clientKey string) {
	t.Helper()
	for _, q := range tm.Up.Requests() {
		assert.Equal(t, tm.HeldKey, q.Header.Get(header))
		assert.NotContains(t, q.RawQuery, clientKey)
		for name, vs := range q.Header {
			for _, v := range vs {
				assert.NotContains(t, v, clientKey, name)
			}
		}
	}
}
