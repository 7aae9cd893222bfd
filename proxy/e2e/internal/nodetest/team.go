package nodetest

import (
	"net/http/httptest"
	"strings"
	"testing"
	"time"

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
		if n := decoy.Count(); n != 0 {
			t.Errorf("%d requests reached the other route", n)
		}
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
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(rt)
	t.Cleanup(srv.Close)
	return &Team{URL: srv.URL, Up: up, HeldKey: heldKey}
}

// CheckHeld checks that every request the upstream got carried the held
// key in header and nowhere the client's key, in a header or the query.
func (tm *Team) CheckHeld(t *testing.T, header, clientKey string) {
	t.Helper()
	for _, q := range tm.Up.Requests() {
		if got := q.Header.Get(header); got != tm.HeldKey {
			t.Errorf("the upstream got %s %q, not the held key", header, got)
		}
		if strings.Contains(q.RawQuery, clientKey) {
			t.Error("the client's key reached the upstream in the query")
		}
		for name, vs := range q.Header {
			for _, v := range vs {
				if strings.Contains(v, clientKey) {
					t.Errorf("the client's key reached the upstream in %s", name)
				}
			}
		}
	}
}
