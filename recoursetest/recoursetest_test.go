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
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, resp.Header, string(b)
}

func TestConstantsMatchTheBodies(t *testing.T) {
	events := OpenAIStream("x")
	if events[len(events)-1] != StreamDone || !strings.Contains(OpenAIChat("x"), `"model":"`+OpenAIModel+`"`) ||
		!strings.Contains(OpenAIChat("x"), `"id":"`+OpenAIID+`"`) || !strings.Contains(OllamaChat("x"), `"model":"`+OllamaModel+`"`) {
		t.Error("the canned bodies do not use the constants")
	}
}

func TestZeroStepAnswers200WithEmptyBody(t *testing.T) {
	srv := NewServer(Step{})
	defer srv.Close()
	status, h, body := post(t, srv.URL, "x")
	if status != 200 || body != "" || h.Get("Content-Type") != "" {
		t.Fatalf("zero step: %d %q %q", status, h.Get("Content-Type"), body)
	}
}

func TestStepMethodsReturnCopies(t *testing.T) {
	base := JSON(200, `{}`, "X-A", "1")
	derived := base.WithHeader("X-A", "2").Cut(1)
	srv := NewServer(base, derived)
	defer srv.Close()
	if _, h, body := post(t, srv.URL, ""); h.Get("X-A") != "1" || body != "{}" {
		t.Fatalf("base step changed: X-A %q body %q", h.Get("X-A"), body)
	}
	// The derived step is cut after one byte of a two-byte fixed-length body.
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr}).Post(srv.URL, "application/json", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if resp.Header.Get("X-A") != "2" || string(b) != "{" || err != io.ErrUnexpectedEOF {
		t.Fatalf("derived step: X-A %q body %q err %v", resp.Header.Get("X-A"), b, err)
	}
}

func TestRequestsAreCopies(t *testing.T) {
	srv := NewServer(JSON(200, `{}`))
	defer srv.Close()
	post(t, srv.URL+"/p?q=1", "body")
	first := srv.Requests()
	first[0].Body[0] = 'X'
	first[0].Header.Set("Content-Type", "changed")
	again := srv.Requests()
	if len(again) != 1 || string(again[0].Body) != "body" || again[0].Header.Get("Content-Type") != "application/json" {
		t.Fatalf("Requests shares memory with the server: %+v", again)
	}
	if r := again[0]; r.Method != "POST" || r.Path != "/p" || r.RawQuery != "q=1" || r.Proto != "HTTP/1.1" {
		t.Fatalf("request: %+v", r)
	}
}

func TestExhaustedScriptAnswers500(t *testing.T) {
	srv := NewServer()
	defer srv.Close()
	status, _, body := post(t, srv.URL, "")
	if status != 500 || body != `{"error":{"message":"script exhausted","type":"server_error"}}` || srv.Count() != 1 {
		t.Fatalf("exhausted: %d %q count %d", status, body, srv.Count())
	}
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
			defer func() {
				msg, _ := recover().(string)
				if !strings.HasPrefix(msg, "recoursetest: ") {
					t.Fatalf("panic %q does not start with recoursetest:", msg)
				}
			}()
			f()
		})
	}
}

// TestRelabel proves that a server that cannot listen panics with this
// package's name and the cause.
func TestRelabel(t *testing.T) {
	defer func() {
		if msg := recover(); msg != "recoursetest: cannot listen on 127.0.0.1: boom" {
			t.Fatalf("listen failure panic %q", msg)
		}
	}()
	startOn(func(string, string) (net.Listener, error) { return nil, errors.New("boom") }, http.NotFoundHandler())
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
		if err != nil {
			t.Fatal(err)
		}
		files[p] = f
	}
	var list []*ast.File
	for _, f := range files {
		list = append(list, f)
	}
	pkg, err := doc.NewFromFiles(fset, list, "github.com/recourse-dev/recourse/recoursetest")
	if err != nil {
		t.Fatal(err)
	}
	check := func(name, text string) {
		t.Helper()
		if !strings.HasPrefix(text, name+" ") {
			t.Errorf("%s: doc %q does not start with its name", name, text)
		}
		if strings.Contains(text, "scripted.") || strings.Contains(text, "internal/") {
			t.Errorf("%s: doc mentions the internal package: %q", name, text)
		}
	}
	if !strings.HasPrefix(pkg.Doc, "Package recoursetest ") {
		t.Errorf("package doc %q", pkg.Doc)
	}
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
	if len(pkg.Funcs)+len(pkg.Types) < 10 {
		t.Fatalf("only %d functions and %d types found: the walk is broken", len(pkg.Funcs), len(pkg.Types))
	}
}
