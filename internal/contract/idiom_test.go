package contract_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// This file keeps the configuration idiom of layer/doc.go (R3.5) from
// drifting: every Option type of the repository is a plain function over
// the value it configures, returning nothing, and no option constructor is
// a second name for another.

// optionDecl is one exported type whose name ends in "Option".
type optionDecl struct {
	where string // "pkg/dir.Name"
	typ   ast.Expr
}

// sourceFiles parses every non-test Go file of the repository (every
// module in it), keyed by the directory relative to root.
func sourceFiles(t *testing.T, root string) map[string][]*ast.File {
	t.Helper()
	fset := token.NewFileSet()
	out := map[string][]*ast.File{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if n := d.Name(); p != root && (strings.HasPrefix(n, ".") || n == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, p, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, filepath.Dir(p))
		out[rel] = append(out[rel], f)
		return nil
	})
	require.NoError(t, err)
	return out
}

// isOptionFunc reports whether e is func(*T) or func(T) with no results.
func isOptionFunc(e ast.Expr) bool {
	ft, ok := e.(*ast.FuncType)
	if !ok || ft.Results != nil && len(ft.Results.List) > 0 {
		return false
	}
	return ft.Params != nil && len(ft.Params.List) == 1 && len(ft.Params.List[0].Names) <= 1
}

// TestR3_5_OptionsCannotFail: an exported Option type (any exported type
// named Option or ending in Option) is a function over the value it
// configures that returns nothing — not an error, not an interface. A bad
// option value is reported by the constructor that applies it.
func TestR3_5_OptionsCannotFail(t *testing.T) {
	files := sourceFiles(t, repoRoot(t))
	var decls []optionDecl
	for dir, fs := range files {
		for _, f := range fs {
			for _, d := range f.Decls {
				g, ok := d.(*ast.GenDecl)
				if !ok || g.Tok != token.TYPE {
					continue
				}
				for _, s := range g.Specs {
					ts := s.(*ast.TypeSpec)
					if ts.Name.IsExported() && strings.HasSuffix(ts.Name.Name, "Option") {
						decls = append(decls, optionDecl{where: dir + "." + ts.Name.Name, typ: ts.Type})
					}
				}
			}
		}
	}
	require.NotEmpty(t, decls, "the repository declares option types")
	var bad []string
	for _, d := range decls {
		if !isOptionFunc(d.typ) {
			bad = append(bad, d.where)
		}
	}
	sort.Strings(bad)
	assert.Empty(t, bad, "option types that are not a func(*T) without results (R3.5)")
}

// TestR3_5_OneNamePerOption: no exported function that returns an option
// only forwards its parameters, unchanged, to another function of its
// package — one option, one name.
func TestR3_5_OneNamePerOption(t *testing.T) {
	files := sourceFiles(t, repoRoot(t))
	var aliases []string
	checked := 0
	for dir, fs := range files {
		for _, f := range fs {
			for _, d := range f.Decls {
				fd, ok := d.(*ast.FuncDecl)
				if !ok || fd.Recv != nil || !fd.Name.IsExported() || fd.Body == nil || !returnsOption(fd) {
					continue
				}
				checked++
				if target, ok := forwards(fd); ok {
					aliases = append(aliases, dir+"."+fd.Name.Name+" = "+target)
				}
			}
		}
	}
	require.NotZero(t, checked, "the repository declares option constructors")
	sort.Strings(aliases)
	assert.Empty(t, aliases, "option constructors that are a second name for another (R3.5)")
}

// returnsOption reports whether fd's single result is a type whose name
// ends in "Option".
func returnsOption(fd *ast.FuncDecl) bool {
	r := fd.Type.Results
	if r == nil || len(r.List) != 1 {
		return false
	}
	id, ok := r.List[0].Type.(*ast.Ident)
	return ok && strings.HasSuffix(id.Name, "Option")
}

// forwards reports whether fd's body is exactly `return F(p1, …, pn)` (or
// `return F(ps...)`), passing fd's own parameters in order to a function F
// of the same package, and names F.
func forwards(fd *ast.FuncDecl) (string, bool) {
	if len(fd.Body.List) != 1 {
		return "", false
	}
	ret, ok := fd.Body.List[0].(*ast.ReturnStmt)
	if !ok || len(ret.Results) != 1 {
		return "", false
	}
	call, ok := ret.Results[0].(*ast.CallExpr)
	if !ok {
		return "", false
	}
	fn, ok := call.Fun.(*ast.Ident)
	if !ok || !fn.IsExported() {
		return "", false
	}
	var params []string
	for _, p := range fd.Type.Params.List {
		for _, n := range p.Names {
			params = append(params, n.Name)
		}
	}
	if len(params) != len(call.Args) {
		return "", false
	}
	for i, a := range call.Args {
		id, ok := a.(*ast.Ident)
		if !ok || id.Name != params[i] {
			return "", false
		}
	}
	return fn.Name, true
}
