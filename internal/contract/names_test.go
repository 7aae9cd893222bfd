package contract_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// This file keeps the documentation's Go names honest: a doc comment, the
// README or CONTRACT.md that names `pkg.Ident`, `*pkg.Ident` or
// `pkg.Type.Member` of this repository must name something that exists.

// pkgDecls is what one package declares outside its tests.
type pkgDecls struct {
	// names holds every top-level constant, variable, function and type.
	names map[string]bool
	// types holds the top-level type names.
	types map[string]bool
	// members holds, per type, its methods, its fields and the methods of
	// an interface type.
	members map[string]map[string]bool
	// embeds holds, per type, the types it embeds: "T" for one of the same
	// package, "pkg.T" for one of another, "?" for one that cannot be
	// resolved here (a type of the standard library, say).
	embeds map[string][]string
}

func newPkgDecls() *pkgDecls {
	return &pkgDecls{names: map[string]bool{}, types: map[string]bool{}, members: map[string]map[string]bool{}, embeds: map[string][]string{}}
}

func (p *pkgDecls) member(typ, name string) {
	if p.members[typ] == nil {
		p.members[typ] = map[string]bool{}
	}
	p.members[typ][name] = true
}

// nameIndex maps the last element of a package's import path to what the
// packages of that name declare. Several packages may share a name.
type nameIndex map[string][]*pkgDecls

// repoIndex is the nameIndex of the repository and each directory's package.
type repoIndex struct {
	names nameIndex
	dirs  map[string]*pkgDecls
}

// indexRepo parses the non-test .go files of every module of the
// repository (package main excluded: it names nothing others can use),
// skipping .git, node_modules and testdata.
func indexRepo(t *testing.T, root string) repoIndex {
	t.Helper()
	idx := nameIndex{}
	byDir := map[string]*pkgDecls{}
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); name == ".git" || name == "node_modules" || name == "testdata" {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		if f.Name.Name == "main" {
			return nil
		}
		dir := filepath.Dir(path)
		p := byDir[dir]
		if p == nil {
			p = newPkgDecls()
			byDir[dir] = p
			base := filepath.Base(dir)
			idx[base] = append(idx[base], p)
		}
		indexFile(p, f)
		return nil
	})
	require.NoError(t, err)
	return repoIndex{names: idx, dirs: byDir}
}

// indexFile adds the declarations of f to p.
func indexFile(p *pkgDecls, f *ast.File) {
	for _, decl := range f.Decls {
		switch d := decl.(type) {
		case *ast.FuncDecl:
			if d.Recv == nil {
				p.names[d.Name.Name] = true
				continue
			}
			if recv := receiverType(d.Recv.List[0].Type); recv != "" {
				p.member(recv, d.Name.Name)
			}
		case *ast.GenDecl:
			for _, spec := range d.Specs {
				switch s := spec.(type) {
				case *ast.ValueSpec:
					for _, n := range s.Names {
						p.names[n.Name] = true
					}
				case *ast.TypeSpec:
					p.names[s.Name.Name] = true
					p.types[s.Name.Name] = true
					indexType(p, s.Name.Name, s.Type)
				}
			}
		}
	}
}

// indexType records the fields, interface methods and embedded types of
// the type typ, declared as expr.
func indexType(p *pkgDecls, typ string, expr ast.Expr) {
	var fields *ast.FieldList
	switch e := expr.(type) {
	case *ast.StructType:
		fields = e.Fields
	case *ast.InterfaceType:
		fields = e.Methods
	default:
		return
	}
	for _, f := range fields.List {
		if len(f.Names) > 0 {
			for _, n := range f.Names {
				p.member(typ, n.Name)
			}
			continue
		}
		// An embedded type: its name is a member, its members are promoted.
		ref := embeddedRef(f.Type)
		if i := strings.LastIndexByte(ref, '.'); i >= 0 {
			p.member(typ, ref[i+1:])
		} else if ref != "?" {
			p.member(typ, ref)
		}
		p.embeds[typ] = append(p.embeds[typ], ref)
	}
}

// receiverType returns the name of a method's receiver type, generic or not.
func receiverType(e ast.Expr) string {
	switch t := e.(type) {
	case *ast.StarExpr:
		return receiverType(t.X)
	case *ast.IndexExpr:
		return receiverType(t.X)
	case *ast.IndexListExpr:
		return receiverType(t.X)
	case *ast.Ident:
		return t.Name
	}
	return ""
}

// embeddedRef names an embedded type as pkgDecls.embeds holds it.
func embeddedRef(e ast.Expr) string {
	switch t := e.(type) {
	case *ast.StarExpr:
		return embeddedRef(t.X)
	case *ast.IndexExpr:
		return embeddedRef(t.X)
	case *ast.IndexListExpr:
		return embeddedRef(t.X)
	case *ast.Ident:
		if t.Name == "error" || t.Name == "any" || t.Name == "comparable" {
			return "?"
		}
		return t.Name
	case *ast.SelectorExpr:
		if x, ok := t.X.(*ast.Ident); ok {
			return x.Name + "." + t.Sel.Name
		}
	}
	return "?"
}

// resolves reports whether pkg.name (and, when member is not empty,
// pkg.name.member) exists; false for a package the index does not hold.
func (idx nameIndex) resolves(pkg, name, member string) bool {
	for _, p := range idx[pkg] {
		if !p.names[name] {
			continue
		}
		if member == "" || !p.types[name] {
			// A member of a constant, variable or function's result is not
			// resolved here.
			return true
		}
		if idx.hasMember(p, name, member, map[*pkgDecls]map[string]bool{}) {
			return true
		}
	}
	return false
}

// hasMember reports whether type typ of p has member, directly or promoted
// from an embedded type; an embedded type this index cannot see may hold
// anything, so it counts as having it.
func (idx nameIndex) hasMember(p *pkgDecls, typ, member string, seen map[*pkgDecls]map[string]bool) bool {
	if seen[p] == nil {
		seen[p] = map[string]bool{}
	}
	if seen[p][typ] {
		return false
	}
	seen[p][typ] = true
	if p.members[typ][member] {
		return true
	}
	for _, ref := range p.embeds[typ] {
		if ref == "?" {
			return true
		}
		pkg, name, qualified := strings.Cut(ref, ".")
		if !qualified {
			if idx.hasMember(p, ref, member, seen) {
				return true
			}
			continue
		}
		others := idx[pkg]
		if len(others) == 0 {
			return true // a type of another module or the standard library
		}
		for _, o := range others {
			if o.types[name] && idx.hasMember(o, name, member, seen) {
				return true
			}
		}
	}
	return false
}

// goName matches pkg.Ident and pkg.Ident.Member, optionally behind a *, not
// inside a longer dotted name or a path.
var goName = regexp.MustCompile(`(?:^|[^\w.*/])\*?([a-z][a-z0-9]*)\.([A-Z]\w*)(?:\.([A-Za-z_]\w*))?`)

// bareError matches *SomethingError: a typed error named without its
// package.
var bareError = regexp.MustCompile(`(?:^|[^\w.*/])\*([A-Z]\w*Error)\b`)

// bareMember matches Type.Member named without the package.
var bareMember = regexp.MustCompile(`(?:^|[^\w.*/])([A-Z]\w*)\.([A-Z]\w*)\b`)

// typeOwners returns the packages of the index that declare type name.
func (idx nameIndex) typeOwners(name string) []*pkgDecls {
	var out []*pkgDecls
	for _, ps := range idx {
		for _, p := range ps {
			if p.types[name] {
				out = append(out, p)
			}
		}
	}
	return out
}

// hasType reports whether some package of the index declares type name.
func (idx nameIndex) hasType(name string) bool {
	for _, ps := range idx {
		for _, p := range ps {
			if p.types[name] {
				return true
			}
		}
	}
	return false
}

// unknownBareNames returns the names s gives without a package that do not
// exist: a *SomethingError that no package declares, and Type.Member where
// Type is a type of own (the package whose comment s is) or, in Markdown
// (own nil), of some package of the repository (CONTRACT.md's unqualified
// types are layer's), and Member is a member of none of them. In a Go
// comment a type of another package is not guessed at: Request.Clone there
// is as likely net/http's as chat's.
func (idx nameIndex) unknownBareNames(s string, own *pkgDecls, at string, firstLine int) []unknownName {
	var out []unknownName
	report := func(name string, off int) {
		out = append(out, unknownName{name: name, at: at + ":" + strconv.Itoa(firstLine+strings.Count(s[:off], "\n"))})
	}
	for _, m := range bareError.FindAllStringSubmatchIndex(s, -1) {
		if name := s[m[2]:m[3]]; !idx.hasType(name) {
			report("*"+name, m[2])
		}
	}
	for _, m := range bareMember.FindAllStringSubmatchIndex(s, -1) {
		typ, member := s[m[2]:m[3]], s[m[4]:m[5]]
		var owners []*pkgDecls
		switch {
		case own != nil && own.types[typ]:
			owners = []*pkgDecls{own}
		case own == nil:
			owners = idx.typeOwners(typ)
		}
		if len(owners) > 0 && !slices.ContainsFunc(owners, func(p *pkgDecls) bool {
			return idx.hasMember(p, typ, member, map[*pkgDecls]map[string]bool{})
		}) {
			report(typ+"."+member, m[2])
		}
	}
	return out
}

// unknownName is a name that a text gives and that does not exist.
type unknownName struct {
	name string
	at   string
}

// unknownNames returns the names of the index's packages that s gives and
// that do not exist; at is prefixed to each line number. Names of packages
// the index does not hold (the standard library's, say) are not checked.
func (idx nameIndex) unknownNames(s, at string, firstLine int) []unknownName {
	var out []unknownName
	for _, m := range goName.FindAllStringSubmatchIndex(s, -1) {
		pkg, name := s[m[2]:m[3]], s[m[4]:m[5]]
		member := ""
		if m[6] >= 0 {
			member = s[m[6]:m[7]]
		}
		if _, ok := idx[pkg]; !ok || idx.resolves(pkg, name, member) {
			continue
		}
		full := pkg + "." + name
		if member != "" {
			full += "." + member
		}
		line := firstLine + strings.Count(s[:m[2]], "\n")
		out = append(out, unknownName{name: full, at: at + ":" + strconv.Itoa(line)})
	}
	return out
}

// backticked matches a Markdown code span or fenced block.
var backticked = regexp.MustCompile("(?s)```.*?```|`[^`\n]+`")

// markdownUnknownNames returns the unknown names in the code spans and
// fenced blocks of a Markdown text.
func (idx nameIndex) markdownUnknownNames(text, at string) []unknownName {
	var out []unknownName
	for _, m := range backticked.FindAllStringIndex(text, -1) {
		line := 1 + strings.Count(text[:m[0]], "\n")
		out = append(out, idx.unknownNames(text[m[0]:m[1]], at, line)...)
		out = append(out, idx.unknownBareNames(text[m[0]:m[1]], nil, at, line)...)
	}
	return out
}

// goCommentUnknownNames returns the unknown names in the comments of a
// non-test Go file.
func (idx nameIndex) goCommentUnknownNames(t *testing.T, own *pkgDecls, path, rel string) []unknownName {
	t.Helper()
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, path, nil, parser.ParseComments|parser.SkipObjectResolution)
	require.NoError(t, err)
	var out []unknownName
	for _, g := range f.Comments {
		for _, c := range g.List {
			line := fset.Position(c.Slash).Line
			out = append(out, idx.unknownNames(c.Text, rel, line)...)
			out = append(out, idx.unknownBareNames(c.Text, own, rel, line)...)
		}
	}
	return out
}

// rootModuleGoFiles returns the non-test .go files of the root module: every
// directory below root that is not in a module of its own.
func rootModuleGoFiles(t *testing.T, root string) []string {
	t.Helper()
	var files []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); name == ".git" || name == "node_modules" || name == "testdata" {
				return filepath.SkipDir
			}
			if path != root {
				if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil {
					return filepath.SkipDir
				}
			}
			return nil
		}
		if strings.HasSuffix(path, ".go") && !strings.HasSuffix(path, "_test.go") {
			files = append(files, path)
		}
		return nil
	})
	require.NoError(t, err)
	return files
}

// otherLibraries are names of other libraries whose package has the name of
// one of this repository's, as "document name": the OpenAI SDKs' error
// types, which the documentation names to say what a client sees, and the
// openai-go names of the README's quick start (its Go snippets are compiled
// by examples/docsnippets, which checks them against openai-go).
var otherLibraries = map[string]bool{
	"docs/clients.md openai.APIError":                  true, // go-openai's
	"docs/proxy.md openai.Error":                       true, // openai-go's
	"README.md openai.NewClient":                       true, // openai-go's
	"README.md openai.ChatCompletionNewParams":         true, // openai-go's
	"README.md openai.ChatCompletionMessageParamUnion": true, // openai-go's
	"README.md openai.UserMessage":                     true, // openai-go's
	"docs/anthropic.md anthropic.Client":               true, // anthropic-sdk-go's
	"docs/anthropic.md anthropic.NewClient":            true, // anthropic-sdk-go's
	"docs/anthropic.md anthropic.Error":                true, // anthropic-sdk-go's
}

// TestDocsNameOnlyExistingGoNames: every `pkg.Ident`, `*pkg.Ident` and
// `pkg.Type.Member` that a comment of a non-test .go file of the root
// module, a code span or block of README.md, CONTRACT.md, CONTRIBUTING.md
// or docs/*.md names, where pkg
// is the last path element of one of the repository's packages, exists.
func TestDocsNameOnlyExistingGoNames(t *testing.T) {
	root := repoRoot(t)
	repo := indexRepo(t, root)
	idx := repo.names
	require.Contains(t, idx, "retry", "the index holds the module's packages")
	var unknown []unknownName
	files := rootModuleGoFiles(t, root)
	require.NotEmpty(t, files)
	for _, path := range files {
		rel, err := filepath.Rel(root, path)
		require.NoError(t, err)
		unknown = append(unknown, idx.goCommentUnknownNames(t, repo.dirs[filepath.Dir(path)], path, filepath.ToSlash(rel))...)
	}
	docs := []string{"README.md", "CONTRACT.md", "CONTRIBUTING.md"}
	more, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	require.NoError(t, err)
	for _, m := range more {
		docs = append(docs, "docs/"+filepath.Base(m))
	}
	for _, doc := range docs {
		text, err := os.ReadFile(filepath.Join(root, doc))
		require.NoError(t, err)
		unknown = append(unknown, idx.markdownUnknownNames(string(text), doc)...)
	}
	sort.Slice(unknown, func(i, j int) bool { return unknown[i].at < unknown[j].at })
	var lines []string
	for _, u := range unknown {
		doc, _, _ := strings.Cut(u.at, ":")
		if otherLibraries[doc+" "+u.name] {
			continue
		}
		lines = append(lines, u.at+": "+u.name)
	}
	assert.Empty(t, lines, "names that do not exist in this repository")
}

// TestNameCheckFires: the check reports made-up names in every form it
// reads and accepts real ones, promoted members included.
func TestNameCheckFires(t *testing.T) {
	idx := nameIndex{}
	p := newPkgDecls()
	f, err := parser.ParseFile(token.NewFileSet(), "x.go", `package layer
type Failure struct{ Category string; Progress }
type Progress struct{ RawBytes int64 }
type Wrapped struct{ http.Handler }
func (*Failure) Text() string { return "" }
func New() {}
const MaxAttempts = 3
`, 0)
	require.NoError(t, err)
	indexFile(p, f)
	idx["layer"] = []*pkgDecls{p}

	var got []string
	for _, u := range idx.unknownNames(`see layer.Failure, *layer.Failure, layer.Failure.Text, layer.Failure.Category,
layer.Failure.RawBytes (promoted), layer.Wrapped.ServeHTTP (embedded elsewhere), layer.New, layer.MaxAttempts,
http.Client (not this repository), github.com/x/layer.Made (a path), and then
layer.Invented, *layer.Missing, layer.Failure.Nothing and layer.Failure.Progress.Nothing`, "doc.go", 1) {
		got = append(got, u.name+"@"+u.at)
	}
	assert.Equal(t, []string{"layer.Invented@doc.go:4", "layer.Missing@doc.go:4", "layer.Failure.Nothing@doc.go:4"}, got[:3])
	assert.Len(t, got, 3, "layer.Failure.Progress.Nothing: Progress is a member; deeper names are not checked")

	md := "Prose names layer.Ghost outside code, which is not checked.\n\n| `Admit layer.Hook` | x |\n\n```go\np := layer.New()\nq := layer.Phantom\n```\n" +
		"`Failure.Category`, `Failure.Invented`, `*MadeUpError`, `Unknown.Field`\n"
	got = got[:0]
	for _, u := range idx.markdownUnknownNames(md, "README.md") {
		got = append(got, u.name+"@"+u.at)
	}
	assert.Equal(t, []string{"layer.Hook@README.md:3", "layer.Phantom@README.md:7", "Failure.Invented@README.md:9", "*MadeUpError@README.md:9"}, got,
		"an unqualified type of CONTRACT.md is layer's; one no package declares is not checked")

	own := newPkgDecls()
	g, err := parser.ParseFile(token.NewFileSet(), "y.go", "package retry\ntype Report struct{ Stream int }\ntype PanicError struct{}\n", 0)
	require.NoError(t, err)
	indexFile(own, g)
	idx["retry"] = []*pkgDecls{own}
	got = got[:0]
	for _, u := range idx.unknownBareNames("Report.Stream, Report.Frames, Failure.Invented (layer's, not this package's), *PanicError, *CapturePanicError", own, "retry.go", 10) {
		got = append(got, u.name+"@"+u.at)
	}
	assert.Equal(t, []string{"*CapturePanicError@retry.go:10", "Report.Frames@retry.go:10"}, got)

	got = got[:0]
	for _, u := range idx.markdownUnknownNames("`Report.Stream`, `Report.Missing`; in a comment of package layer, Report is not guessed at", "README.md") {
		got = append(got, u.name+"@"+u.at)
	}
	assert.Equal(t, []string{"Report.Missing@README.md:1"}, got, "in Markdown a type of any package is checked")
	assert.Empty(t, idx.unknownBareNames("Report.Missing", p, "layer.go", 1), "in a Go comment only the package's own types are")
}
