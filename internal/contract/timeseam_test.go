package contract_test

import (
	"go/ast"
	"go/token"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// This file keeps the library's time seams to the one R3.6 allows: the
// retry policy's clocks and Sleep hook. Every other layer reads the time
// package, which a testing/synctest bubble fakes.

// allowedTimeSeams are the exported names that may carry a source of time.
var allowedTimeSeams = map[string]bool{
	"layers/retry.Policy.WallClock":      true,
	"layers/retry.Policy.MonotonicClock": true,
	"layers/retry.Policy.Sleep":          true,
}

// isTimeSource reports whether e is the type of a source of time or of a
// wait: func() time.Time, func() time.Duration, a func taking a
// time.Duration and returning an error, or a named type called Clock or
// Timer.
func isTimeSource(e ast.Expr) bool {
	switch t := e.(type) {
	case *ast.Ident:
		return t.Name == "Clock" || t.Name == "Timer"
	case *ast.SelectorExpr:
		return t.Sel.Name == "Clock" || t.Sel.Name == "Timer"
	case *ast.StarExpr:
		return isTimeSource(t.X)
	case *ast.FuncType:
		res := fieldTypes(t.Results)
		params := fieldTypes(t.Params)
		if len(params) == 0 && len(res) == 1 && (res[0] == "time.Time" || res[0] == "time.Duration") {
			return true
		}
		if len(params) == 2 && params[0] == "context.Context" && params[1] == "time.Duration" && len(res) == 1 && res[0] == "error" {
			return true
		}
	}
	return false
}

// fieldTypes returns the source form of each type in l, once per name.
func fieldTypes(l *ast.FieldList) []string {
	if l == nil {
		return nil
	}
	var out []string
	for _, f := range l.List {
		s := typeString(f.Type)
		for range max(1, len(f.Names)) {
			out = append(out, s)
		}
	}
	return out
}

func typeString(e ast.Expr) string {
	switch t := e.(type) {
	case *ast.Ident:
		return t.Name
	case *ast.SelectorExpr:
		return typeString(t.X) + "." + t.Sel.Name
	case *ast.StarExpr:
		return "*" + typeString(t.X)
	}
	return "?"
}

// TestR3_6_OneTimeSeam: no exported field, option, function parameter or
// interface of any module's public packages is a source of time, other
// than the retry policy's WallClock, MonotonicClock and Sleep; no exported
// function is named after a clock (WithClock); no exported interface has a
// Now, AfterFunc or Sleep method.
func TestR3_6_OneTimeSeam(t *testing.T) {
	var found []string
	for dir, files := range sourceFiles(t, repoRoot(t)) {
		if strings.Contains("/"+dir+"/", "/internal/") || strings.HasPrefix(dir, "tools") {
			continue
		}
		for _, f := range files {
			for _, d := range f.Decls {
				switch d := d.(type) {
				case *ast.FuncDecl:
					if !d.Name.IsExported() {
						continue
					}
					if strings.Contains(d.Name.Name, "Clock") {
						found = append(found, dir+"."+d.Name.Name)
					}
					for _, p := range d.Type.Params.List {
						if isTimeSource(p.Type) {
							found = append(found, dir+"."+d.Name.Name+" parameter")
						}
					}
				case *ast.GenDecl:
					if d.Tok != token.TYPE {
						continue
					}
					for _, s := range d.Specs {
						ts := s.(*ast.TypeSpec)
						if !ts.Name.IsExported() {
							continue
						}
						name := dir + "." + ts.Name.Name
						switch typ := ts.Type.(type) {
						case *ast.StructType:
							for _, fl := range typ.Fields.List {
								for _, n := range fl.Names {
									if n.IsExported() && isTimeSource(fl.Type) && !allowedTimeSeams[name+"."+n.Name] {
										found = append(found, name+"."+n.Name)
									}
								}
							}
						case *ast.InterfaceType:
							for _, m := range typ.Methods.List {
								for _, n := range m.Names {
									if n.Name == "Now" || n.Name == "AfterFunc" || n.Name == "Sleep" {
										found = append(found, name+"."+n.Name)
									}
								}
							}
						case *ast.FuncType:
							if isTimeSource(typ) {
								found = append(found, name)
							}
						}
					}
				}
			}
		}
	}
	sort.Strings(found)
	assert.Empty(t, found, "public time seams beyond the retry policy's clocks (R3.6)")
	// The allowed seam is still there: the check would otherwise pass on a
	// tree it cannot read.
	var policy int
	for dir, files := range sourceFiles(t, repoRoot(t)) {
		if dir != "layers/retry" {
			continue
		}
		for _, f := range files {
			ast.Inspect(f, func(n ast.Node) bool {
				if fl, ok := n.(*ast.Field); ok && isTimeSource(fl.Type) {
					for _, nm := range fl.Names {
						if allowedTimeSeams["layers/retry.Policy."+nm.Name] {
							policy++
						}
					}
				}
				return true
			})
		}
	}
	assert.Equal(t, 3, policy, "the retry policy's WallClock, MonotonicClock and Sleep")
}
