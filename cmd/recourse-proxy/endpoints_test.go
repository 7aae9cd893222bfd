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

// R21.10: a flag's environment variable that does not parse names the
// variable, quotes the value and says the form it wants — for every flag
// whose value can fail to parse.
func TestR21_10_BadEnvironmentValueSaysVariableValueAndForm(t *testing.T) {
	fs := flag.NewFlagSet("", flag.ContinueOnError)
	define(fs, &settings{})
	checked := 0
	fs.VisitAll(func(f *flag.Flag) {
		if noEnv[f.Name] || f.Value.Set("abc") == nil {
			return // no variable, or a string: any value parses; config checks it
		}
		checked++
		name := envName(f.Name)
		_, err := parse([]string{"-upstream", "http://127.0.0.1:1"}, env(map[string]string{name: "abc"}), &bytes.Buffer{})
		require.Error(t, err, name)
		msg := err.Error()
		assert.Contains(t, msg, name, "names the variable")
		assert.Contains(t, msg, `"abc"`, "quotes the value")
		assert.Contains(t, msg, "-"+f.Name, "names the flag")
		assert.Regexp(t, `want (an integer|a whole number of bytes|a duration|true or false|a number)`, msg, "says the form")
		assert.NotContains(t, msg, "parse error")
	})
	assert.Greater(t, checked, 10, "the int, duration, bool and float flags")
}
