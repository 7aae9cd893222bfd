package docsnippets

import (
	"bufio"
	"bytes"
	"fmt"
	"go/format"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// repoRoot is the repository's root, seen from this package's directory.
const repoRoot = "../.."

// snippet is one ```go block of a Markdown file.
type snippet struct {
	file string // the Markdown file, relative to the repository's root
	line int    // the line of the snippet's first line of code, 1-based
	code string
}

// extract returns the ```go blocks of the Markdown file at path, named by
// name in positions.
func extract(path, name string) ([]snippet, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var (
		out  []snippet
		cur  *snippet
		body strings.Builder
		n    int
	)
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		n++
		line := sc.Text()
		trimmed := strings.TrimSpace(line)
		switch {
		case cur == nil && trimmed == "```go":
			cur = &snippet{file: name, line: n + 1}
			body.Reset()
		case cur != nil && trimmed == "```":
			cur.code = body.String()
			out = append(out, *cur)
			cur = nil
		case cur != nil:
			body.WriteString(line)
			body.WriteByte('\n')
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if cur != nil {
		return nil, fmt.Errorf("%s:%d: a ```go block is never closed", name, cur.line-1)
	}
	return out, nil
}

var packageClause = regexp.MustCompile(`^package [A-Za-z_][A-Za-z0-9_]*\s*$`)

// wholeFile reports whether the snippet's first line of code, after blank
// lines and comments, is a package clause: every snippet is a whole file.
func wholeFile(code string) bool {
	for l := range strings.SplitSeq(code, "\n") {
		l = strings.TrimSpace(l)
		if l == "" || strings.HasPrefix(l, "//") {
			continue
		}
		return packageClause.MatchString(l)
	}
	return false
}

// scratchModule writes a module in dir that requires what the examples
// module requires, with the same go.sum, and the repository's modules
// replaced by the work tree.
func scratchModule(t *testing.T, dir string) {
	t.Helper()
	root, err := filepath.Abs(repoRoot)
	require.NoError(t, err)
	mod, err := os.ReadFile("../go.mod")
	require.NoError(t, err)
	sum, err := os.ReadFile("../go.sum")
	require.NoError(t, err)
	var b bytes.Buffer
	for l := range strings.SplitSeq(string(mod), "\n") {
		switch {
		case strings.HasPrefix(l, "module "):
			l = "module docsnippets.scratch"
		case strings.HasPrefix(l, "replace "):
			continue // written below with absolute paths
		}
		b.WriteString(l + "\n")
	}
	fmt.Fprintf(&b, "replace github.com/recourse-dev/recourse => %s\n", root)
	fmt.Fprintf(&b, "replace github.com/recourse-dev/recourse/redisstore => %s\n", filepath.Join(root, "redisstore"))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "go.mod"), b.Bytes(), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "go.sum"), sum, 0o644))
}

// check writes each snippet as a package of a scratch module, under a
// //line directive naming its Markdown file and line, and builds and vets
// them all. A snippet must be gofmt-formatted. The error holds the go
// command's output, whose positions are the Markdown file's.
func check(t *testing.T, snippets []snippet) error {
	t.Helper()
	dir := t.TempDir()
	scratchModule(t, dir)
	var notFiles []string
	for i, s := range snippets {
		if !wholeFile(s.code) {
			notFiles = append(notFiles, fmt.Sprintf("%s:%d: a go snippet must be a whole file that starts with its package clause", s.file, s.line))
			continue
		}
		// A snippet that does not parse is left to the compiler, which
		// says where.
		if f, err := format.Source([]byte(s.code)); err == nil && !bytes.Equal(f, []byte(s.code)) {
			notFiles = append(notFiles, fmt.Sprintf("%s:%d: the snippet is not gofmt-formatted", s.file, s.line))
			continue
		}
		pkg := filepath.Join(dir, fmt.Sprintf("s%03d", i))
		require.NoError(t, os.Mkdir(pkg, 0o755))
		src := fmt.Sprintf("//line %s:%d\n%s", s.file, s.line, s.code)
		require.NoError(t, os.WriteFile(filepath.Join(pkg, "snippet.go"), []byte(src), 0o644))
	}
	if len(notFiles) > 0 {
		return fmt.Errorf("%s", strings.Join(notFiles, "\n"))
	}
	for _, args := range [][]string{{"build", "-o", os.DevNull, "./..."}, {"vet", "./..."}} {
		cmd := exec.Command("go", args...)
		cmd.Dir = dir
		// No workspace and no toolchain switch; the scratch module's go.mod
		// and go.sum are the examples module's and stay as they are.
		cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=readonly", "GOTOOLCHAIN=local")
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("go %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	return nil
}

// docs returns the Markdown files whose Go snippets must compile.
func docs(t *testing.T) []string {
	t.Helper()
	files := []string{"README.md", "CONTRIBUTING.md"}
	more, err := filepath.Glob(filepath.Join(repoRoot, "docs", "*.md"))
	require.NoError(t, err)
	for _, m := range more {
		rel, err := filepath.Rel(repoRoot, m)
		require.NoError(t, err)
		files = append(files, filepath.ToSlash(rel))
	}
	return files
}

// TestDocSnippetsCompile builds and vets every Go snippet of the
// documentation; a failure names the Markdown file and line.
func TestDocSnippetsCompile(t *testing.T) {
	var all []snippet
	perFile := map[string]int{}
	for _, name := range docs(t) {
		s, err := extract(filepath.Join(repoRoot, name), name)
		require.NoError(t, err)
		perFile[name] = len(s)
		all = append(all, s...)
	}
	// The front door's quick starts are snippets: if none is found, the
	// extraction is broken, not the documentation perfect.
	require.GreaterOrEqual(t, perFile["README.md"], 2, "README.md's Go snippets")
	t.Logf("%d snippets: %v", len(all), perFile)
	if err := check(t, all); err != nil {
		t.Fatalf("a documentation snippet does not compile:\n%v", err)
	}
}

// TestDocSnippetsReportFileAndLine proves the check fails, naming the
// Markdown file and the snippet's line, when a snippet stops compiling, is
// not a whole file or is not gofmt-formatted.
func TestDocSnippetsReportFileAndLine(t *testing.T) {
	md := filepath.Join(t.TempDir(), "broken.md")
	require.NoError(t, os.WriteFile(md, []byte("# Broken\n\ntext\n\n```go\npackage app\n\nimport \"github.com/recourse-dev/recourse/layers/retry\"\n\nvar p = retry.Policy{MaxAttempts: \"four\"}\n```\n\n```go\nx := 1\n```\n\n```go\npackage app\nvar  y = 1\n```\n"), 0o644))
	s, err := extract(md, "broken.md")
	require.NoError(t, err)
	require.Len(t, s, 3)
	require.Equal(t, 6, s[0].line)

	err = check(t, s[:1])
	require.Error(t, err)
	require.Contains(t, err.Error(), "broken.md:10:")

	err = check(t, s[1:])
	require.Error(t, err)
	require.Contains(t, err.Error(), "broken.md:14: a go snippet must be a whole file")

	err = check(t, s[2:])
	require.Error(t, err)
	require.Contains(t, err.Error(), "broken.md:18: the snippet is not gofmt-formatted")
}

// TestREADMEIsAFrontDoor keeps the README short and its first lines the
// two commands that work on a fresh machine with Go.
func TestREADMEIsAFrontDoor(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(repoRoot, "README.md"))
	require.NoError(t, err)
	lines := strings.Split(string(b), "\n")
	require.Less(t, len(lines), 300, "README.md's lines: the rest belongs in docs/")
	head := strings.Join(lines[:min(len(lines), 8)], "\n")
	require.Contains(t, head, "make demo")
	require.Contains(t, head, "make test")
}
