package chain_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/recourse-dev/recourse/chain"
	"github.com/recourse-dev/recourse/client"
	"github.com/recourse-dev/recourse/codecs/openai"
	"github.com/recourse-dev/recourse/event"
	"github.com/recourse-dev/recourse/layer"
	"github.com/recourse-dev/recourse/layers/fallback"
	"github.com/recourse-dev/recourse/layers/stall"
	"github.com/recourse-dev/recourse/recoursetest"
)

// A target's own Stalls replace the rules' for leaving that target
// (R20.16): an empty list keeps a slow target to its attempts while the
// rules leave the primary at once, and a target's list leaves it at once
// where the rules leave nothing. Three silent-or-answering upstreams (the
// primary, target a, target b), three attempts, a 30 s header limit.
func TestR20_16_TargetStallsOverrideTheRules(t *testing.T) {
	header := []event.StallLimit{event.StallHeader}
	for _, tc := range []struct {
		name       string
		rules      []event.StallLimit
		own        []event.StallLimit // target a's Stalls
		at         time.Duration
		primary, a int
	}{
		{"TargetWithoutItsOwnFollowsTheRules", header, nil, 60 * time.Second, 1, 1},
		{"TargetsEmptyListKeepsItToItsAttempts", header, []event.StallLimit{}, 30*time.Second + 90*time.Second + 300*time.Millisecond, 1, 3},
		{"TargetsListLeavesItWhereTheRulesDoNot", nil, header, 90*time.Second + 300*time.Millisecond + 30*time.Second, 3, 1},
	} {
		for _, entry := range []string{"DropIn", "Native"} {
			t.Run(tc.name+"/"+entry, func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					never := make(chan struct{})
					defer close(never)
					silent := recoursetest.JSON(200, recoursetest.OpenAIChat("never sent")).Gated(-1, never)
					sp := recoursetest.NewMemoryServer(silent, silent, silent)
					sa := recoursetest.NewMemoryServer(silent, silent, silent)
					sb := recoursetest.NewMemoryServer(okStep("from b"))
					for _, s := range []*recoursetest.Server{sp, sa, sb} {
						t.Cleanup(s.Close)
					}
					tr := sp.Transport()
					t.Cleanup(tr.CloseIdleConnections)
					sl, err := stall.New(stall.Limits{Header: 30 * time.Second})
					require.NoError(t, err)
					newChain := func(ls ...layer.Layer) *chain.Chain {
						ch, err := chain.Default(openai.New(), chain.WithPolicy(shapePolicy()), chain.WithTransport(tr),
							chain.WithPerCall(ls...), chain.WithPerAttempt(sl))
						require.NoError(t, err)
						return ch
					}
					rules := fallback.Rules{Stalls: tc.rules}
					start := time.Now()
					var text string
					if entry == "DropIn" {
						fl, err := fallback.New(fallback.Config{Codec: openai.New(), Rules: rules, Targets: []fallback.Target{
							{Upstream: sa.URL, Model: "a", Stalls: tc.own}, {Upstream: sb.URL, Model: "b"}}})
						require.NoError(t, err)
						body := string(encoded(t, canaryRequest()))
						resp, err := (&http.Client{Transport: newChain(fl)}).Post(sp.URL+"/v1/chat/completions", "application/json", strings.NewReader(body))
						require.NoError(t, err)
						b, err := io.ReadAll(resp.Body)
						require.NoError(t, err)
						require.NoError(t, resp.Body.Close())
						text = string(b)
					} else {
						cl := func(url string) *client.Client {
							c, err := client.New(url, newChain())
							require.NoError(t, err)
							return c
						}
						c, err := client.New(sp.URL, newChain(), client.WithFallback(rules,
							client.FallbackTarget{Client: cl(sa.URL), Model: "a", Stalls: tc.own},
							client.FallbackTarget{Client: cl(sb.URL), Model: "b"}))
						require.NoError(t, err)
						comp, err := c.Complete(context.Background(), canaryRequest())
						require.NoError(t, err)
						text = comp.Message.Content
					}
					assert.Equal(t, tc.at, time.Since(start))
					assert.Contains(t, text, "from b")
					assert.Equal(t, tc.primary, sp.Count(), "requests to the primary")
					assert.Equal(t, tc.a, sa.Count(), "requests to target a")
					assert.Equal(t, 1, sb.Count(), "requests to target b")
				})
			})
		}
	}
}

// A target's Stalls are checked as the rules' are, at every entry point.
func TestR20_16_TargetStallsAreValidated(t *testing.T) {
	bad := []event.StallLimit{"slow"}
	_, err := fallback.New(fallback.Config{Codec: openai.New(), Targets: []fallback.Target{{Model: "a"}, {Model: "b", Stalls: bad}}})
	var ce *fallback.ConfigError
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, 1, ce.Index)
	assert.Equal(t, "Stalls", ce.Field)

	r := recoursetest.NewServer()
	t.Cleanup(r.Close)
	ch, err := chain.Default(openai.New())
	require.NoError(t, err)
	target, err := client.New(r.URL, ch)
	require.NoError(t, err)
	_, err = client.New(r.URL, ch, client.WithFallback(fallback.Rules{}, client.FallbackTarget{Client: target, Model: "a", Stalls: bad}))
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, 0, ce.Index)
	assert.Equal(t, "Stalls", ce.Field)
}
