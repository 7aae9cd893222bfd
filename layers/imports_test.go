package layers_test

import (
	"go/build"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/recourse-dev/recourse"

// A rule forbids the packages matching From to import the packages
// matching To (both module-relative; a trailing "/..." matches the package
// and everything below it).
type rule struct {
	from, to string
	why      string
	except   func(from, to string) bool
}

// rules is the import discipline of the module's non-test code: layer
// packages import the vocabulary (layer/, chat/) and internal helpers,
// never each other; only otelbridge imports OpenTelemetry; the vocabulary
// imports no layer, codec or chain; the event vocabulary (package event)
// imports only the standard library, codec and chat; the codec interface
// imports only the standard library and chat; codecs import neither the
// vocabulary nor a layer.
var rules = []rule{
	{from: "layers/...", to: "layers/...", why: "layer packages import the vocabulary, never each other",
		except: func(from, to string) bool { return from == to || strings.HasPrefix(to, from+"/internal/") }},
	{from: "otelbridge", to: "layers/...", why: "tracing reads events and the per-call value, not a layer's package"},
	{from: "layer/...", to: "layers/...", why: "the vocabulary depends on no layer"},
	{from: "layer/...", to: "codecs/...", why: "the vocabulary depends on no codec"},
	{from: "layer/...", to: "chain", why: "the vocabulary depends on no chain"},
	{from: "event/...", to: "...", why: "the event vocabulary imports only the standard library, package codec and package chat: never layer, a layer, the client or the chain",
		except: func(_, to string) bool { return to == "chat" || to == "codec" || match("event/...", to) || std(to) }},
	{from: "codec/...", to: "...", why: "the codec interface imports only the standard library and package chat",
		except: func(_, to string) bool { return to == "chat" || match("codec/...", to) || std(to) }},
	{from: "codecs/...", to: "layer/...", why: "codecs implement package codec; the recovery vocabulary is the engine's"},
	{from: "codecs/...", to: "event/...", why: "codecs implement package codec; the recovery vocabulary is the engine's"},
	{from: "codecs/...", to: "layers/...", why: "codecs declare facts; they do not call the layers"},
	{from: "codecs/...", to: "chain", why: "codecs do not assemble chains"},
	{from: "...", to: "go.opentelemetry.io/...", why: "only otelbridge imports OpenTelemetry",
		except: func(from, _ string) bool { return from == "otelbridge" || strings.HasPrefix(from, "otelbridge/") }},
	{from: "proxy/...", to: "...", why: "the proxy, in the root module, imports only the standard library and this module",
		except: func(_, to string) bool { first, _, _ := strings.Cut(to, "/"); return !strings.Contains(first, ".") }},
	{from: "layers/...", to: "proxy/...", why: "layers know nothing of the proxy built on them"},
	// Test support: recoursetest, the public scripted provider, is its
	// bottom and imports no package of the module; internal/rigtest is the
	// one rig, on top of recoursetest and the chain, and nothing else under
	// internal/ imports a package above it.
	{from: "recoursetest", to: "internal/...", why: "the public test server holds its own implementation"},
	{from: "recoursetest", to: "chain", why: "the public test server depends on no recourse package"},
	{from: "recoursetest", to: "client", why: "the public test server depends on no recourse package"},
	{from: "recoursetest", to: "layer/...", why: "the public test server depends on no recourse package"},
	{from: "recoursetest", to: "layers/...", why: "the public test server depends on no recourse package"},
	{from: "recoursetest", to: "event/...", why: "the public test server depends on no recourse package"},
	{from: "recoursetest", to: "codecs/...", why: "the public test server depends on no recourse package"},
	{from: "internal/...", to: "chain", why: "only the rig, internal/rigtest, assembles a chain under internal/",
		except: func(from, _ string) bool { return from == "internal/rigtest" }},
	{from: "internal/...", to: "client", why: "only the rig, internal/rigtest, builds a native client under internal/",
		except: func(from, _ string) bool { return from == "internal/rigtest" }},
	{from: "internal/...", to: "layers/...", why: "only the rig, internal/rigtest, imports a layer under internal/",
		except: func(from, _ string) bool { return from == "internal/rigtest" }},
	{from: "internal/...", to: "broker/...", why: "nothing under internal/ imports the broker above it"},
	{from: "internal/...", to: "proxy/...", why: "nothing under internal/ imports the proxy above it"},
	{from: "...", to: "internal/rigtest", why: "the rig is for tests; no non-test code builds on it"},
	// The chain only assembles: the native client is built on it, not in it.
	{from: "chain", to: "client", why: "the chain only assembles; the native client builds on it"},
	{from: "chain", to: "layers/fallback", why: "the chain only assembles; fallback targets are the native client's"},
	// The engine's stages are the chain's: only package chain installs
	// them, and they import the vocabulary only.
	{from: "...", to: "internal/stage/...", why: "only the chain installs the engine's stages",
		except: func(from, _ string) bool { return from == "chain" }},
	{from: "internal/stage/...", to: "internal/...", why: "a stage imports the vocabulary and the attempt's wire state, not another internal package",
		except: func(_, to string) bool { return to == "internal/attempt" }},
	// An attempt's wire state is the engine's: the engine, its stages, the
	// sender and the chain reach it; a layer reads layer.Attempt.
	{from: "...", to: "internal/attempt", why: "only the engine, its stages, the sender, the chain and the native client reach an attempt's wire state",
		except: func(from, _ string) bool {
			return from == "chain" || from == "client" || from == "layers/retry" || from == "layers/sender" || match("internal/stage/...", from)
		}},
	{from: "...", to: "internal/attemptkey", why: "only layer and internal/attempt share the attempt's context key",
		except: func(from, _ string) bool { return from == "layer" || from == "internal/attempt" }},
}

// std reports whether pkg is a package of the standard library.
func std(pkg string) bool {
	p, err := build.Default.Import(pkg, "", build.FindOnly)
	return err == nil && p.Goroot
}

func match(pattern, pkg string) bool {
	if pattern == "..." {
		return true
	}
	if base, ok := strings.CutSuffix(pattern, "/..."); ok {
		return pkg == base || strings.HasPrefix(pkg, base+"/")
	}
	return pkg == pattern
}

// violations returns one line per forbidden edge of graph (package →
// imports, module-relative for the module's own packages, full paths for
// others).
func violations(graph map[string][]string) []string {
	var out []string
	for from, imports := range graph {
		for _, to := range imports {
			for _, r := range rules {
				if match(r.from, from) && match(r.to, to) && (r.except == nil || !r.except(from, to)) {
					out = append(out, from+" imports "+to+": "+r.why)
				}
			}
		}
	}
	slices.Sort(out)
	return out
}

// moduleGraph reads the imports of every non-test Go file of the root
// module (other modules, testdata and hidden directories are skipped).
func moduleGraph(t *testing.T) map[string][]string {
	t.Helper()
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(root, "go.mod")); err != nil || !strings.Contains(string(b), "module "+module+"\n") {
		t.Fatalf("%s is not the root of %s", root, module)
	}
	graph := map[string][]string{}
	fset := token.NewFileSet()
	err = filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			name := d.Name()
			if path != root && (strings.HasPrefix(name, ".") || name == "testdata" || name == "node_modules") {
				return filepath.SkipDir
			}
			if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil && path != root {
				return filepath.SkipDir // another module (examples, tools)
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, filepath.Dir(path))
		pkg := filepath.ToSlash(rel)
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			if own, ok := strings.CutPrefix(p, module+"/"); ok {
				p = own
			}
			if !slices.Contains(graph[pkg], p) {
				graph[pkg] = append(graph[pkg], p)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return graph
}

// TestImportGraph fails on a forbidden import edge in the module's
// non-test code.
func TestImportGraph(t *testing.T) {
	graph := moduleGraph(t)
	for _, must := range []string{"codec", "codec/codectest", "internal/attempt", "layers/retry", "internal/stage/capture", "layers/stall", "otelbridge", "layer", "event", "chain", "client", "proxy", "recoursetest", "internal/rigtest"} {
		if _, ok := graph[must]; !ok {
			t.Fatalf("the graph has no package %s: the walk is broken", must)
		}
	}
	for _, v := range violations(graph) {
		t.Error(v)
	}
}

// TestImportRulesCatchForbiddenEdges proves the rules fire: each of these
// edges is one that existed before the composition work or would break it.
func TestImportRulesCatchForbiddenEdges(t *testing.T) {
	for _, edge := range [][2]string{
		{"layers/retry", "layers/admission"},
		{"internal/stage/capture", "internal/stage/redirectguard"},
		{"layers/stall", "internal/stage/progress"},
		{"layers/stall", "internal/attempt"},
		{"otelbridge", "internal/attempt"},
		{"layers/retry", "internal/attemptkey"},
		{"chain", "client"},
		{"chain", "layers/fallback"},
		{"layers/retry", "internal/stage/capture"},
		{"proxy", "internal/stage/redirectguard"},
		{"layers/retry", "layers/stall"},
		{"otelbridge", "layers/retry"},
		{"layer", "layers/retry"},
		{"codecs/ollama", "layers/retry"},
		{"layers/retry", "go.opentelemetry.io/otel/trace"},
		{"proxy", "github.com/openai/openai-go/v3"},
		{"layers/retry", "proxy"},
		{"recoursetest", "internal/scripted"},
		{"internal/scripted", "chain"},
		{"cmd/recourse-demo", "internal/rigtest"},
		{"codec", "layer"},
		{"codec", "layers/retry"},
		{"codec", "codecs/openai"},
		{"codec", "github.com/google/uuid"},
		{"codec/codectest", "layer"},
		{"codec/codectest", "layer/layertest"},
		{"codecs/ollama", "layer"},
		{"codecs/internal/ssechat", "layer"},
		{"event", "layer"},
		{"event", "layer/layertest"},
		{"event", "layers/retry"},
		{"event", "client"},
		{"event", "chain"},
		{"event", "codecs/openai"},
		{"event", "github.com/google/uuid"},
		{"codecs/openai", "event"},
		{"recoursetest", "event"},
	} {
		if v := violations(map[string][]string{edge[0]: {edge[1]}}); len(v) == 0 {
			t.Errorf("%s → %s is not refused", edge[0], edge[1])
		}
	}
	allowed := map[string][]string{
		"layers/retry":     {"layer", "chat"},
		"codec":            {"chat", "net/http", "regexp"},
		"codec/codectest":  {"chat", "codec", "testing"},
		"codecs/openai":    {"codec", "chat", "codecs/internal/openaiwire"},
		"otelbridge":       {"layer", "event", "go.opentelemetry.io/otel/trace"},
		"event":            {"chat", "codec", "encoding/json", "net/http"},
		"layer":            {"event", "codec", "chat"},
		"chain":            {"layers/retry", "internal/stage/capture", "layers/sender"},
		"internal/rigtest": {"chain", "layers/retry", "recoursetest"},
	}
	if v := violations(allowed); len(v) != 0 {
		t.Errorf("allowed edges refused: %v", v)
	}
}
