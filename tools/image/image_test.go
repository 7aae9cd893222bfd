package main

import (
	"archive/tar"
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"debug/elf"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// built is the image the tests share: built once, read back from its
// archive.
var (
	buildOnce sync.Once
	built     struct {
		img *readImage
		bin string // the proxy extracted from the layer
		err error
	}
	workDir string
)

func TestMain(m *testing.M) {
	d, err := os.MkdirTemp("", "recourse-image-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	workDir = d
	code := m.Run()
	os.RemoveAll(d)
	os.Exit(code)
}

// readImage is an image read back from an OCI archive: the manifest and
// configuration as the archive holds them, and the layer's files.
type readImage struct {
	manifest manifest
	config   imageConfig
	files    map[string]*tar.Header
	data     map[string][]byte
}

// image builds the image into the test's directory once and reads it back.
func image(t *testing.T) (*readImage, string) {
	t.Helper()
	buildOnce.Do(func() {
		path, _, err := build(options{root: "../..", out: filepath.Join(workDir, "out"), caFile: caPath})
		if err != nil {
			built.err = err
			return
		}
		img, err := readArchive(path)
		if err != nil {
			built.err = err
			return
		}
		built.img = img
		built.bin = filepath.Join(workDir, "recourse-proxy")
		built.err = extract(img, binaryPath, built.bin)
		if built.err == nil {
			built.err = extract(img, probePath, filepath.Join(workDir, "recourse-probe"))
		}
	})
	if built.err != nil {
		t.Fatalf("building the image: %v", built.err)
	}
	return built.img, built.bin
}

func extract(img *readImage, path, to string) error {
	b, ok := img.data[strings.TrimPrefix(path, "/")]
	if !ok {
		return fmt.Errorf("%s is not in the layer", path)
	}
	return os.WriteFile(to, b, 0o755)
}

// readArchive reads an OCI archive as a runtime would: index.json, the
// manifest it names, the configuration and layer that names, each blob
// checked against its digest and size.
func readArchive(path string) (*readImage, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	entries := map[string][]byte{}
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		if h.Typeflag == tar.TypeReg {
			b, err := io.ReadAll(tr)
			if err != nil {
				return nil, err
			}
			entries[h.Name] = b
		}
	}
	if string(entries["oci-layout"]) != `{"imageLayoutVersion":"1.0.0"}` {
		return nil, fmt.Errorf("oci-layout is %q", entries["oci-layout"])
	}
	blob := func(d descriptor) ([]byte, error) {
		b, ok := entries["blobs/sha256/"+strings.TrimPrefix(d.Digest, "sha256:")]
		if !ok {
			return nil, fmt.Errorf("blob %s missing", d.Digest)
		}
		s := sha256.Sum256(b)
		if "sha256:"+hex.EncodeToString(s[:]) != d.Digest || int64(len(b)) != d.Size {
			return nil, fmt.Errorf("blob %s does not match its descriptor", d.Digest)
		}
		return b, nil
	}
	var idx index
	if err := json.Unmarshal(entries["index.json"], &idx); err != nil {
		return nil, fmt.Errorf("index.json: %w", err)
	}
	if len(idx.Manifests) != 1 || idx.Manifests[0].MediaType != mediaManifest {
		return nil, fmt.Errorf("index.json names %d manifests", len(idx.Manifests))
	}
	img := &readImage{files: map[string]*tar.Header{}, data: map[string][]byte{}}
	mb, err := blob(idx.Manifests[0])
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(mb, &img.manifest); err != nil {
		return nil, err
	}
	cb, err := blob(img.manifest.Config)
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(cb, &img.config); err != nil {
		return nil, err
	}
	if len(img.manifest.Layers) != 1 || img.manifest.Layers[0].MediaType != mediaLayer {
		return nil, fmt.Errorf("the manifest has %d layers", len(img.manifest.Layers))
	}
	lb, err := blob(img.manifest.Layers[0])
	if err != nil {
		return nil, err
	}
	zr, err := gzip.NewReader(bytes.NewReader(lb))
	if err != nil {
		return nil, err
	}
	raw, err := io.ReadAll(zr)
	if err != nil {
		return nil, err
	}
	if s := sha256.Sum256(raw); len(img.config.RootFS.DiffIDs) != 1 || img.config.RootFS.DiffIDs[0] != "sha256:"+hex.EncodeToString(s[:]) {
		return nil, fmt.Errorf("the layer does not match the configuration's diff_ids")
	}
	lr := tar.NewReader(bytes.NewReader(raw))
	for {
		h, err := lr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		img.files[h.Name] = h
		if h.Typeflag == tar.TypeReg {
			if img.data[h.Name], err = io.ReadAll(lr); err != nil {
				return nil, err
			}
		}
	}
	return img, nil
}

// TestR21_14_ImageRunsItsBinary builds the image without a daemon, reads
// it back from its OCI archive and runs the proxy it holds.
func TestR21_14_ImageRunsItsBinary(t *testing.T) {
	img, bin := image(t)
	cfg := img.config

	uid, _, _ := strings.Cut(cfg.Config.User, ":")
	if n, err := strconv.Atoi(uid); err != nil || n == 0 {
		t.Errorf("User is %q; want a numeric user other than root", cfg.Config.User)
	}
	if cfg.OS != "linux" || cfg.Architecture == "" {
		t.Errorf("platform %s/%s", cfg.OS, cfg.Architecture)
	}
	if _, ok := cfg.Config.ExposedPorts["8787/tcp"]; !ok || len(cfg.Config.ExposedPorts) != 1 {
		t.Errorf("ExposedPorts %v; want 8787/tcp", cfg.Config.ExposedPorts)
	}
	if !slices.Equal(cfg.Config.Entrypoint, []string{"/usr/local/bin/recourse-proxy"}) {
		t.Errorf("Entrypoint %q", cfg.Config.Entrypoint)
	}
	if !slices.Equal(cfg.Config.Cmd, []string{"-listen", "0.0.0.0:8787", "-allow-remote"}) {
		t.Errorf("Cmd %q; the default command must choose to listen beyond loopback", cfg.Config.Cmd)
	}
	l := cfg.Config.Labels
	version := l["org.opencontainers.image.version"]
	if version == "" || l["org.opencontainers.image.title"] != "recourse-proxy" ||
		l["org.opencontainers.image.licenses"] != "Apache-2.0" ||
		l["org.opencontainers.image.source"] != "https://github.com/recourse-dev/recourse" {
		t.Errorf("labels %v", l)
	}

	ca := img.data["etc/ssl/certs/ca-certificates.crt"]
	if n := bytes.Count(ca, []byte("-----BEGIN CERTIFICATE-----")); n < 50 {
		t.Errorf("the CA bundle holds %d certificates", n)
	}
	for name, h := range img.files {
		if h.Uid != 0 || h.Gid != 0 {
			t.Errorf("%s is owned by %d:%d; want root, read-only to the image's user", name, h.Uid, h.Gid)
		}
	}
	if h := img.files["usr/local/bin/recourse-proxy"]; h == nil || h.Mode&0o001 == 0 || h.Mode&0o022 != 0 {
		t.Errorf("the proxy's mode is not executable by all and writable by root only: %v", h)
	}

	ef, err := elf.Open(bin)
	if err != nil {
		t.Fatalf("the proxy is not an ELF binary: %v", err)
	}
	for _, p := range ef.Progs {
		if p.Type == elf.PT_INTERP {
			t.Errorf("the proxy is dynamically linked")
		}
	}
	ef.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, bin, "-version").Output()
	if err != nil {
		t.Fatalf("-version: %v", err)
	}
	t.Logf("the image's version label: %s", version)
	fields := strings.Fields(string(out))
	if len(fields) < 2 || fields[0] != "recourse-proxy" || fields[1] != version {
		t.Errorf("-version printed %q; the image's version label is %q", out, version)
	}

	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusTeapot)
	}))
	defer upstream.Close()
	cmd := exec.CommandContext(ctx, bin, "-listen", "127.0.0.1:0", "-upstream", upstream.URL)
	cmd.Env = []string{} // none of this machine's RECOURSE_PROXY_ variables
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		re := regexp.MustCompile(`addr=(127\.0\.0\.1:\d+)`)
		for sc.Scan() {
			if m := re.FindStringSubmatch(sc.Text()); m != nil {
				select {
				case addr <- m[1]:
				default:
				}
			}
		}
		done <- cmd.Wait()
	}()
	defer func() {
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("the proxy exited with %v after SIGTERM", err)
			}
		case <-ctx.Done():
			cmd.Process.Kill()
			t.Errorf("the proxy did not stop on SIGTERM")
		}
	}()
	var a string
	select {
	case a = <-addr:
	case <-ctx.Done():
		t.Fatal("the proxy never said where it listens")
	}
	resp, err := http.Get("http://" + a + "/healthz")
	if err != nil {
		t.Fatalf("GET /healthz: %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || strings.TrimSpace(string(body)) != "ok" {
		t.Errorf("GET /healthz: %d %q; want 200 ok", resp.StatusCode, body)
	}
	resp, err = http.Get("http://" + a + "/anything")
	if err != nil {
		t.Fatalf("GET /anything: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusTeapot {
		t.Errorf("a forwarded request got %d; want the upstream's 418", resp.StatusCode)
	}

	probe := filepath.Join(workDir, "recourse-probe")
	if err := exec.CommandContext(ctx, probe, "http://"+a+"/readyz").Run(); err != nil {
		t.Errorf("the image's probe on /readyz: %v", err)
	}
	if err := exec.CommandContext(ctx, probe, "http://"+a+"/forwarded").Run(); err == nil {
		t.Errorf("the probe passed the upstream's 418")
	}
}
