package recoursetest

import (
	"errors"
	"go/ast"
	"go/doc"
	"go/parser"
	"go/token"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestMain fails the package if a test or an example leaves a goroutine
// behind.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// post sends a POST with body to url on a dedicated transport and returns
// the status, the header and the body read.
func post(t *testing.T, url, body string) (int, http.Header, string) {
	t.Helper()
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, CheckRedirect: func(*http.Request, []*http.Request) error {
		return http.ErrUseLastResponse
	}}
	resp, err := client.Post(url, "application/json", strings.NewReader(body))
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, resp.Header, string(b)
}

func TestConstantsMatchTheBodies(t *testing.T) {
	events := OpenAIStream("x")
	assert.Equal(t, StreamDone, events[len(events)-1], "StreamDone ends OpenAIStream")
	assert.Contains(t, OpenAIChat("x"), `"model":"`+OpenAIModel+`"`)
	assert.Contains(t, OpenAIChat("x"), `"id":"`+OpenAIID+`"`)
	assert.Contains(t, OllamaChat("x"), `"model":"`+OllamaModel+`"`)
}

func TestZeroStepAnswers200WithEmptyBody(t *testing.T) {
	srv := NewServer(Step{})
	defer srv.Close()
	status, h, body := post(t, srv.URL, "x")
	assert.Equal(t, 200, status, "zero step status")
	assert.Empty(t, body, "zero step body")
	assert.Empty(t, h.Get("Content-Type"), "zero step Content-Type")
}

func TestStepMethodsReturnCopies(t *testing.T) {
	base := JSON(200, `{}`, "X-A", "1")
	derived := base.WithHeader("X-A", "2").Cut(1)
	srv := NewServer(base, derived)
	defer srv.Close()
	_, h, body := post(t, srv.URL, "")
	assert.Equal(t, "1", h.Get("X-A"), "base step header unchanged")
	assert.Equal(t, "{}", body, "base step body unchanged")
	// The derived step is cut after one byte of a two-byte fixed-length body.
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr}).Post(srv.URL, "application/json", nil)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	assert.Equal(t, "2", resp.Header.Get("X-A"), "derived step header")
	assert.Equal(t, "{", string(b), "derived step body")
	assert.ErrorIs(t, err, io.ErrUnexpectedEOF, "derived step cut")
}

func TestRequestsAreCopies(t *testing.T) {
	srv := NewServer(JSON(200, `{}`))
	defer srv.Close()
	post(t, srv.URL+"/p?q=1", "body")
	first := srv.Requests()
	first[0].Body[0] = 'X'
	first[0].Header.Set("Content-Type", "changed")
	again := srv.Requests()
	require.Len(t, again, 1)
	assert.Equal(t, "body", string(again[0].Body), "Requests shares memory with the server")
	assert.Equal(t, "application/json", again[0].Header.Get("Content-Type"), "Requests shares memory with the server")
	r := again[0]
	assert.Equal(t, []string{"POST", "/p", "q=1", "HTTP/1.1"}, []string{r.Method, r.Path, r.RawQuery, r.Proto}, "request line")
}

func TestExhaustedScriptAnswers500(t *testing.T) {
	srv := NewServer()
	defer srv.Close()
	status, _, body := post(t, srv.URL, "")
	assert.Equal(t, 500, status, "exhausted status")
	assert.JSONEq(t, `{"error":{"message":"script exhausted","type":"server_error"}}`, body, "exhausted body")
	assert.Equal(t, 1, srv.Count(), "exhausted count")
}

func TestCloseIsIdempotent(t *testing.T) {
	srv, target := NewServer(), NewTarget()
	srv.Close()
	srv.Close()
	target.Close()
	target.Close()
}

// TestPanicsNameThisPackage proves a misuse panics with this package's name,
// never the internal one.
func TestPanicsNameThisPackage(t *testing.T) {
	for name, f := range map[string]func(){
		// The odd pair list is built at run time so that vet-like checkers
		// (staticcheck SA5012) accept the deliberate misuse.
		"odd header pairs": func() { JSON(200, "", strings.Fields("Retry-After")...) },
		"non-3xx redirect": func() { Redirect(200, "http://127.0.0.1:1/") },
	} {
		t.Run(name, func(t *testing.T) {
			msg := func() (msg string) {
				defer func() { msg, _ = recover().(string) }()
				f()
				return ""
			}()
			assert.True(t, strings.HasPrefix(msg, "recoursetest: "), "panic %q does not start with recoursetest:", msg)
		})
	}
}

// TestRelabel proves that a server that cannot listen panics with this
// package's name and the cause.
func TestRelabel(t *testing.T) {
	require.PanicsWithValue(t, "recoursetest: cannot listen on 127.0.0.1: boom", func() {
		startOn(func(string, string) (net.Listener, error) { return nil, errors.New("boom") }, http.NotFoundHandler())
	})
}

// TestEveryExportedIdentifierIsDocumented keeps the package's godoc complete
// and free of the internal package's name: every exported type, function,
// method, constant and struct field has a doc comment that starts with its
// name.
func TestEveryExportedIdentifierIsDocumented(t *testing.T) {
	fset := token.NewFileSet()
	files := map[string]*ast.File{}
	paths, _ := filepath.Glob("*.go")
	for _, p := range paths {
		if strings.HasSuffix(p, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, p, nil, parser.ParseComments)
		require.NoError(t, err)
		files[p] = f
	}
	var list []*ast.File
	for _, f := range files {
		list = append(list, f)
	}
	pkg, err := doc.NewFromFiles(fset, list, "github.com/recourse-dev/recourse/recoursetest")
	require.NoError(t, err)
	check := func(name, text string) {
		t.Helper()
		assert.True(t, strings.HasPrefix(text, name+" "), "%s: doc %q does not start with its name", name, text)
		assert.False(t, strings.Contains(text, "scripted.") || strings.Contains(text, "internal/"), "%s: doc mentions the internal package: %q", name, text)
	}
	assert.True(t, strings.HasPrefix(pkg.Doc, "Package recoursetest "), "package doc %q", pkg.Doc)
	for _, c := range pkg.Consts {
		for _, s := range c.Decl.Specs {
			vs := s.(*ast.ValueSpec)
			check(vs.Names[0].Name, vs.Doc.Text())
		}
	}
	for _, f := range pkg.Funcs {
		check(f.Name, f.Doc)
	}
	for _, typ := range pkg.Types {
		check(typ.Name, typ.Doc)
		for _, f := range append(typ.Funcs, typ.Methods...) {
			check(f.Name, f.Doc)
		}
		st, ok := typ.Decl.Specs[0].(*ast.TypeSpec).Type.(*ast.StructType)
		if !ok {
			continue
		}
		for _, fld := range st.Fields.List {
			for _, n := range fld.Names {
				if n.IsExported() {
					check(n.Name, fld.Doc.Text())
				}
			}
		}
	}
	require.GreaterOrEqual(t, len(pkg.Funcs)+len(pkg.Types), 10, "only %d functions and %d types found: the walk is broken", len(pkg.Funcs), len(pkg.Types))
}
