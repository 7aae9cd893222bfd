package main

import (
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// flagRow is a row of the flag table in docs/proxy.md: the flag and its
// environment variable, or "(none)".
var flagRow = regexp.MustCompile("(?m)^\\| `-([a-z-]+)` \\| `?([A-Z_]+|\\(none\\))`? \\|")

// TestDocsListEveryFlag: the flag table of docs/proxy.md has one row per
// flag, with the flag's environment variable ("(none)" for a flag that has
// none), and no row for a flag the command does not have.
func TestDocsListEveryFlag(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "docs", "proxy.md"))
	require.NoError(t, err)
	documented := map[string]string{}
	for _, m := range flagRow.FindAllStringSubmatch(string(b), -1) {
		documented[m[1]] = m[2]
	}
	require.NotEmpty(t, documented, "docs/proxy.md has a flag table")

	fs := flag.NewFlagSet("recourse-proxy", flag.ContinueOnError)
	define(fs, &settings{})
	fs.VisitAll(func(f *flag.Flag) {
		env, ok := documented[f.Name]
		if assert.True(t, ok, "docs/proxy.md has no row for -%s", f.Name) {
			want := envName(f.Name)
			if noEnv[f.Name] {
				want = "(none)"
			}
			assert.Equal(t, want, env, "-%s's environment variable", f.Name)
		}
		delete(documented, f.Name)
	})
	assert.Empty(t, documented, "docs/proxy.md documents flags the command does not have")
}
