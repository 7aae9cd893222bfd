// Command image builds recourse-proxy's container image without a
// container daemon: it builds the proxy statically from the work tree
// (CGO_ENABLED=0, -trimpath, GOOS=linux), reads the version the binary
// reports from its build information, and writes an OCI image layout as a
// tar file (an oci-archive, which docker load, podman load and skopeo
// read) holding one layer: the proxy, its health probe and the CA bundle
// of Debian's ca-certificates package. The image runs as user 65532,
// exposes 8787 and carries the OCI labels. Run it with make image.
package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"debug/buildinfo"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"
)

// The image's fixed settings; the Dockerfile test holds deploy/Dockerfile
// to the same ones.
const (
	binaryPath = "/usr/local/bin/recourse-proxy"
	probePath  = "/usr/local/bin/recourse-probe"
	caPath     = "/etc/ssl/certs/ca-certificates.crt"
	imageUser  = "65532:65532"
	port       = "8787/tcp"
	sourceURL  = "https://github.com/recourse-dev/recourse"
	title      = "recourse-proxy"
	licenses   = "Apache-2.0"
	archiveTar = "recourse-proxy.oci.tar"
)

// entrypoint and defaultCmd are the image's ENTRYPOINT and CMD: the proxy
// listens beyond loopback only because the default command says so.
var (
	entrypoint = []string{binaryPath}
	defaultCmd = []string{"-listen", "0.0.0.0:8787", "-allow-remote"}
)

// Media types of the OCI image specification.
const (
	mediaIndex    = "application/vnd.oci.image.index.v1+json"
	mediaManifest = "application/vnd.oci.image.manifest.v1+json"
	mediaConfig   = "application/vnd.oci.image.config.v1+json"
	mediaLayer    = "application/vnd.oci.image.layer.v1.tar+gzip"
)

// descriptor is an OCI content descriptor.
type descriptor struct {
	MediaType   string            `json:"mediaType"`
	Digest      string            `json:"digest"`
	Size        int64             `json:"size"`
	Annotations map[string]string `json:"annotations,omitempty"`
}

// manifest is an OCI image manifest; index an OCI image index.
type manifest struct {
	SchemaVersion int          `json:"schemaVersion"`
	MediaType     string       `json:"mediaType"`
	Config        descriptor   `json:"config"`
	Layers        []descriptor `json:"layers"`
}

type index struct {
	SchemaVersion int          `json:"schemaVersion"`
	MediaType     string       `json:"mediaType"`
	Manifests     []descriptor `json:"manifests"`
}

// imageConfig is the part of an OCI image configuration this image sets.
type imageConfig struct {
	Created      string `json:"created"`
	Architecture string `json:"architecture"`
	OS           string `json:"os"`
	Config       struct {
		User         string              `json:"User"`
		ExposedPorts map[string]struct{} `json:"ExposedPorts"`
		Env          []string            `json:"Env"`
		Entrypoint   []string            `json:"Entrypoint"`
		Cmd          []string            `json:"Cmd"`
		WorkingDir   string              `json:"WorkingDir"`
		Labels       map[string]string   `json:"Labels"`
	} `json:"config"`
	RootFS struct {
		Type    string   `json:"type"`
		DiffIDs []string `json:"diff_ids"`
	} `json:"rootfs"`
}

// options are what build needs.
type options struct {
	root   string // the repository's root
	out    string // the directory the archive is written to
	caFile string // the CA bundle to copy in
}

func main() {
	var o options
	flag.StringVar(&o.root, "root", "../..", "the repository's root directory")
	flag.StringVar(&o.out, "out", "../../build/image", "the directory the OCI archive is written to")
	flag.StringVar(&o.caFile, "ca", caPath, "the CA bundle to put in the image (Debian's ca-certificates)")
	flag.Parse()
	path, version, err := build(o)
	if err != nil {
		fmt.Fprintln(os.Stderr, "image:", err)
		os.Exit(1)
	}
	fmt.Printf("image: %s (recourse-proxy %s, %s/%s)\n", path, version, "linux", runtime.GOARCH)
}

// build builds the proxy and its probe and writes the OCI archive into
// o.out; it returns the archive's path and the proxy's version.
func build(o options) (string, string, error) {
	ca, err := os.ReadFile(o.caFile)
	if err != nil {
		return "", "", fmt.Errorf("the CA bundle: %w (install Debian's ca-certificates)", err)
	}
	if !bytes.Contains(ca, []byte("BEGIN CERTIFICATE")) {
		return "", "", fmt.Errorf("%s holds no certificate", o.caFile)
	}
	tmp, err := os.MkdirTemp("", "recourse-image-")
	if err != nil {
		return "", "", err
	}
	defer os.RemoveAll(tmp)
	proxyBin := filepath.Join(tmp, "recourse-proxy")
	probeBin := filepath.Join(tmp, "recourse-probe")
	if err := goBuild(filepath.Join(o.root, "cmd", "recourse-proxy"), proxyBin, "."); err != nil {
		return "", "", err
	}
	if err := goBuild(filepath.Join(o.root, "tools", "image"), probeBin, "./probe"); err != nil {
		return "", "", err
	}
	bi, err := buildinfo.ReadFile(proxyBin)
	if err != nil {
		return "", "", fmt.Errorf("reading the proxy's build information: %w", err)
	}
	version := bi.Main.Version
	if version == "" {
		version = "(devel)"
	}
	pb, err := os.ReadFile(proxyBin)
	if err != nil {
		return "", "", err
	}
	qb, err := os.ReadFile(probeBin)
	if err != nil {
		return "", "", err
	}
	layerTar, err := layer([]file{
		{"etc/ssl/certs/ca-certificates.crt", 0o644, ca},
		{"usr/local/bin/recourse-proxy", 0o755, pb},
		{"usr/local/bin/recourse-probe", 0o755, qb},
	})
	if err != nil {
		return "", "", err
	}
	var gz bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&gz, gzip.BestCompression)
	if _, err := zw.Write(layerTar); err != nil {
		return "", "", err
	}
	if err := zw.Close(); err != nil {
		return "", "", err
	}

	var cfg imageConfig
	cfg.Created = time.Unix(0, 0).UTC().Format(time.RFC3339)
	cfg.Architecture = runtime.GOARCH
	cfg.OS = "linux"
	cfg.Config.User = imageUser
	cfg.Config.ExposedPorts = map[string]struct{}{port: {}}
	cfg.Config.Env = []string{"SSL_CERT_FILE=" + caPath}
	cfg.Config.Entrypoint = entrypoint
	cfg.Config.Cmd = defaultCmd
	cfg.Config.WorkingDir = "/"
	cfg.Config.Labels = labels(version)
	cfg.RootFS.Type = "layers"
	cfg.RootFS.DiffIDs = []string{digest(layerTar)}
	cfgJSON, err := json.Marshal(cfg)
	if err != nil {
		return "", "", err
	}
	m := manifest{
		SchemaVersion: 2,
		MediaType:     mediaManifest,
		Config:        descriptor{MediaType: mediaConfig, Digest: digest(cfgJSON), Size: int64(len(cfgJSON))},
		Layers:        []descriptor{{MediaType: mediaLayer, Digest: digest(gz.Bytes()), Size: int64(gz.Len())}},
	}
	mJSON, err := json.Marshal(m)
	if err != nil {
		return "", "", err
	}
	tag := tagOf(version)
	idx := index{SchemaVersion: 2, MediaType: mediaIndex, Manifests: []descriptor{{
		MediaType: mediaManifest, Digest: digest(mJSON), Size: int64(len(mJSON)),
		Annotations: map[string]string{
			"org.opencontainers.image.ref.name": tag,
			"io.containerd.image.name":          "recourse-proxy:" + tag,
		},
	}}}
	idxJSON, err := json.Marshal(idx)
	if err != nil {
		return "", "", err
	}
	blobs := [][]byte{cfgJSON, gz.Bytes(), mJSON}
	files := []file{
		{"oci-layout", 0o644, []byte(`{"imageLayoutVersion":"1.0.0"}`)},
		{"index.json", 0o644, idxJSON},
	}
	for _, b := range blobs {
		files = append(files, file{"blobs/sha256/" + strings.TrimPrefix(digest(b), "sha256:"), 0o644, b})
	}
	archive, err := layer(files)
	if err != nil {
		return "", "", err
	}
	if err := os.MkdirAll(o.out, 0o755); err != nil {
		return "", "", err
	}
	path := filepath.Join(o.out, archiveTar)
	if err := os.WriteFile(path+".part", archive, 0o644); err != nil {
		return "", "", err
	}
	return path, version, os.Rename(path+".part", path)
}

// labels returns the image's OCI labels.
func labels(version string) map[string]string {
	return map[string]string{
		"org.opencontainers.image.title":    title,
		"org.opencontainers.image.version":  version,
		"org.opencontainers.image.source":   sourceURL,
		"org.opencontainers.image.licenses": licenses,
	}
}

// tagOf returns an image tag for version: "(devel)" is "devel", any
// character a tag does not allow is a dash, and at most 128 characters
// are kept.
func tagOf(version string) string {
	t := strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '.', r == '_', r == '-':
			return r
		}
		return '-'
	}, version)
	if len(t) > 128 {
		t = t[:128]
	}
	t = strings.Trim(t, "-.")
	if t == "" {
		t = "devel"
	}
	return t
}

// goBuild builds pkg in dir statically into out, for Linux on this
// machine's architecture. -buildvcs=auto overrides a GOFLAGS that turns
// stamping off: in a git clone the binary's version is the one Go derives
// from the commit (a pseudo-version, +dirty with uncommitted changes); in
// a git worktree or without git it is (devel).
func goBuild(dir, out, pkg string) error {
	cmd := exec.Command("go", "build", "-trimpath", "-buildvcs=auto", "-o", out, pkg)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+runtime.GOARCH)
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build %s in %s: %w\n%s", pkg, dir, err, b)
	}
	return nil
}

// file is one regular file of a tar.
type file struct {
	name string
	mode int64
	data []byte
}

// layer returns a tar of files, owned by root, dated the Unix epoch, with
// their parent directories, in the order given: the same inputs give the
// same bytes.
func layer(files []file) ([]byte, error) {
	var b bytes.Buffer
	tw := tar.NewWriter(&b)
	epoch := time.Unix(0, 0)
	dirs := map[string]bool{}
	for _, f := range files {
		if f.name == "" || strings.HasPrefix(f.name, "/") {
			return nil, errors.New("a tar entry must be a relative path")
		}
		parts := strings.Split(f.name, "/")
		for i := 1; i < len(parts); i++ {
			d := strings.Join(parts[:i], "/") + "/"
			if dirs[d] {
				continue
			}
			dirs[d] = true
			if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: d, Mode: 0o755, ModTime: epoch, Format: tar.FormatPAX}); err != nil {
				return nil, err
			}
		}
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: f.name, Mode: f.mode, Size: int64(len(f.data)), ModTime: epoch, Format: tar.FormatPAX}); err != nil {
			return nil, err
		}
		if _, err := tw.Write(f.data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// digest returns b's OCI digest.
func digest(b []byte) string {
	s := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(s[:])
}
