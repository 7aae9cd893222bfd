package main

import (
	"bytes"
	"errors"
	"flag"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/recourse-dev/recourse/proxy"
)

// R21.11: -h lists, for every provider, exactly the endpoints the proxy
// recovers (proxy.Endpoints), so the help cannot drift from the handler.
func TestR21_11_HelpListsTheRecoveredEndpoints(t *testing.T) {
	var out bytes.Buffer
	_, err := parse([]string{"-h"}, env(nil), &out)
	require.True(t, errors.Is(err, flag.ErrHelp))
	help := out.String()
	for _, p := range proxy.Providers() {
		es, err := proxy.Endpoints(p)
		require.NoError(t, err)
		names := make([]string, len(es))
		for i, e := range es {
			names[i] = e.String()
		}
		want := "  " + p + ": " + strings.Join(names, ", ")
		lines := regexp.MustCompile(`(?m)^  `+regexp.QuoteMeta(p)+`: .*$`).FindAllString(help, -1)
		assert.Equal(t, []string{want}, lines, "the help's line for %s", p)
	}
}
