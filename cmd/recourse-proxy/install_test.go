//go:build goinstall

package main

import (
	"archive/zip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// installVersion is the version the check publishes the three modules at:
// the one cmd/recourse-proxy/go.mod requires of the root module and the
// Redis store.
const installVersion = "v0.1.0"

// TestGoInstallAtVersion proves that `go install
// github.com/recourse-dev/recourse/cmd/recourse-proxy@version` works as it
// will once the three modules are tagged: it publishes the work tree's
// root module, redisstore and cmd/recourse-proxy at installVersion into a
// module proxy on the file system (list, .info, .mod, .zip, as the module
// proxy protocol lays them out), then runs go install with no workspace
// and no replace, resolving every other module from the local module
// cache's download directory (itself a module proxy) or the machine's
// proxy, and runs the installed binary. Run with make proxy-install.
func TestGoInstallAtVersion(t *testing.T) {
	root, err := filepath.Abs("../..")
	require.NoError(t, err)
	files := gitFiles(t, root)
	nested := map[string]bool{}
	for _, f := range files {
		if d := filepath.Dir(f); filepath.Base(f) == "go.mod" && d != "." {
			nested[filepath.ToSlash(d)] = true
		}
	}
	proxyDir := t.TempDir()
	for dir, path := range map[string]string{
		"":                   "github.com/recourse-dev/recourse",
		"redisstore":         "github.com/recourse-dev/recourse/redisstore",
		"cmd/recourse-proxy": "github.com/recourse-dev/recourse/cmd/recourse-proxy",
	} {
		publish(t, proxyDir, root, dir, path, files, nested)
	}
	modcache := strings.TrimSpace(goEnv(t, "GOMODCACHE"))
	upstream := strings.TrimSpace(goEnv(t, "GOPROXY"))
	bin := t.TempDir()
	work := t.TempDir()
	cmd := exec.Command("go", "install", "github.com/recourse-dev/recourse/cmd/recourse-proxy@"+installVersion)
	cmd.Dir = work
	cmd.Env = append(os.Environ(),
		"GOWORK=off", "GOBIN="+bin, "GOFLAGS=-mod=mod -modcacherw", // -modcacherw: the private cache below can be removed
		"GOPROXY=file://"+filepath.ToSlash(proxyDir)+",file://"+filepath.ToSlash(filepath.Join(modcache, "cache", "download"))+","+upstream,
		"GONOSUMDB=github.com/recourse-dev/recourse", "GONOSUMCHECK=1",
		// A private module cache: the published versions must not reach
		// the machine's cache, where a later build could pick them up.
		"GOMODCACHE="+filepath.Join(t.TempDir(), "modcache"))
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "go install …@%s:\n%s", installVersion, out)

	exe := filepath.Join(bin, "recourse-proxy")
	help, err := exec.Command(exe, "-h").CombinedOutput()
	require.NoError(t, err, string(help))
	assert.Contains(t, string(help), "-redis")
	assert.Contains(t, string(help), "-repeat-window")
	info, err := exec.Command("go", "version", "-m", exe).CombinedOutput()
	require.NoError(t, err)
	for _, m := range []string{"mod\tgithub.com/recourse-dev/recourse/cmd/recourse-proxy\t" + installVersion,
		"dep\tgithub.com/recourse-dev/recourse\t" + installVersion, "dep\tgithub.com/recourse-dev/recourse/redisstore\t" + installVersion,
		"dep\tgithub.com/redis/go-redis/v9\t"} {
		assert.Contains(t, string(info), m)
	}
	assert.NotContains(t, string(info), "=>", "no replacement in the installed build")
	t.Logf("go install …/cmd/recourse-proxy@%s:\n%s", installVersion, info)
}

// gitFiles lists the work tree's files as git sees them: tracked and
// untracked but not ignored, relative to root.
func gitFiles(t *testing.T, root string) []string {
	t.Helper()
	cmd := exec.Command("git", "ls-files", "-co", "--exclude-standard")
	cmd.Dir = root
	out, err := cmd.Output()
	require.NoError(t, err)
	var files []string
	for _, f := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if _, err := os.Lstat(filepath.Join(root, f)); err == nil {
			files = append(files, f)
		}
	}
	return files
}

func goEnv(t *testing.T, name string) string {
	t.Helper()
	out, err := exec.Command("go", "env", name).Output()
	require.NoError(t, err)
	return string(out)
}

// publish lays out module path (the directory dir of root, "" for root
// itself) at installVersion in the file-system module proxy proxyDir: the
// module's files, without those of nested modules, in a zip whose every
// name starts with path@version/.
func publish(t *testing.T, proxyDir, root, dir, path string, files []string, nested map[string]bool) {
	t.Helper()
	at := filepath.Join(proxyDir, filepath.FromSlash(path), "@v")
	require.NoError(t, os.MkdirAll(at, 0o755))
	z, err := os.Create(filepath.Join(at, installVersion+".zip"))
	require.NoError(t, err)
	zw := zip.NewWriter(z)
	prefix := ""
	if dir != "" {
		prefix = dir + "/"
	}
	for _, f := range files {
		f = filepath.ToSlash(f)
		if !strings.HasPrefix(f, prefix) {
			continue
		}
		rel := strings.TrimPrefix(f, prefix)
		if inNested(prefix, rel, nested) || strings.HasPrefix(rel, "vendor/") || strings.Contains(rel, "/vendor/") {
			continue
		}
		st, err := os.Lstat(filepath.Join(root, f))
		require.NoError(t, err)
		if !st.Mode().IsRegular() {
			continue
		}
		b, err := os.ReadFile(filepath.Join(root, f))
		require.NoError(t, err)
		w, err := zw.Create(path + "@" + installVersion + "/" + rel)
		require.NoError(t, err)
		_, err = w.Write(b)
		require.NoError(t, err)
	}
	require.NoError(t, zw.Close())
	require.NoError(t, z.Close())
	mod, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(prefix), "go.mod"))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(at, installVersion+".mod"), mod, 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(at, installVersion+".info"), []byte(`{"Version":"`+installVersion+`","Time":"2026-12-01T00:00:00Z"}`), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(at, "list"), []byte(installVersion+"\n"), 0o644))
}

// inNested reports whether rel (inside the module at prefix) belongs to a
// module nested in it.
func inNested(prefix, rel string, nested map[string]bool) bool {
	d := filepath.ToSlash(filepath.Dir(rel))
	for d != "." && d != "/" {
		if nested[prefix+d] {
			return true
		}
		d = filepath.ToSlash(filepath.Dir(d))
	}
	return false
}
