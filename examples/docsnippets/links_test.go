package docsnippets

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var (
	fence    = regexp.MustCompile("(?s)```.*?```")
	heading  = regexp.MustCompile(`(?m)^#+ (.*)$`)
	anchorID = regexp.MustCompile(`id="([^"]+)"`)
	mdLink   = regexp.MustCompile(`\]\(([^)\s]+)\)`)
)

// slug is the anchor GitHub gives a heading: lower case, punctuation other
// than '-' and '_' dropped, spaces turned into '-'.
func slug(h string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(h)) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// anchors returns the anchors of the Markdown file at path: its headings'
// slugs and its explicit ids.
func anchors(t *testing.T, path string) map[string]bool {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	out := map[string]bool{}
	for _, m := range anchorID.FindAllStringSubmatch(string(b), -1) {
		out[m[1]] = true
	}
	for _, m := range heading.FindAllStringSubmatch(fence.ReplaceAllString(string(b), ""), -1) {
		out[slug(m[1])] = true
	}
	return out
}

// TestDocLinksResolve: every relative link of README.md, CONTRIBUTING.md,
// CHANGELOG.md and docs/*.md names a file of the repository and, with a
// fragment, an anchor of that Markdown file.
func TestDocLinksResolve(t *testing.T) {
	files := append(docs(t), "CHANGELOG.md")
	for _, name := range files {
		b, err := os.ReadFile(filepath.Join(repoRoot, name))
		require.NoError(t, err)
		text := fence.ReplaceAllString(string(b), "")
		for _, m := range mdLink.FindAllStringSubmatch(text, -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			path, frag, _ := strings.Cut(target, "#")
			file := filepath.Join(repoRoot, name)
			if path != "" {
				file = filepath.Join(repoRoot, filepath.Dir(name), path)
			}
			if _, err := os.Stat(file); !assert.NoError(t, err, "%s links to %s", name, target) {
				continue
			}
			if frag != "" && strings.HasSuffix(file, ".md") {
				assert.True(t, anchors(t, file)[frag], "%s links to %s: no such anchor", name, target)
			}
		}
	}
}
