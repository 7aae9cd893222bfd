package main

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// proxyFlags returns the flag names and environment variables the
// proxy's -h lists.
func proxyFlags(t *testing.T, bin string) (flags, envs map[string]bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, bin, "-h").CombinedOutput()
	if err != nil {
		t.Fatalf("recourse-proxy -h: %v", err)
	}
	flags, envs = map[string]bool{}, map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^  -([a-z][a-z0-9-]*)`).FindAllStringSubmatch(string(out), -1) {
		flags[m[1]] = true
	}
	for _, m := range regexp.MustCompile(`RECOURSE_PROXY_[A-Z0-9_]*[A-Z0-9]`).FindAllString(string(out), -1) {
		envs[m] = true
	}
	if !flags["listen"] || !flags["redis"] || !envs["RECOURSE_PROXY_UPSTREAM"] {
		t.Fatalf("-h lists neither -listen, -redis nor RECOURSE_PROXY_UPSTREAM:\n%s", out)
	}
	return flags, envs
}

// flagNames returns the flag names among args: "-name" or "-name=value".
func flagNames(args []string) []string {
	var names []string
	for _, a := range args {
		if strings.HasPrefix(a, "-") && len(a) > 1 && (a[1] < '0' || a[1] > '9') {
			name, _, _ := strings.Cut(strings.TrimLeft(a, "-"), "=")
			names = append(names, name)
		}
	}
	return names
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("../..", path))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// dockerInstruction is one instruction of a Dockerfile, continuation lines
// joined.
type dockerInstruction struct {
	stage int
	op    string
	args  string
}

func parseDockerfile(src string) []dockerInstruction {
	var ins []dockerInstruction
	stage := -1
	var cur string
	sc := bufio.NewScanner(strings.NewReader(src))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if cur == "" && (line == "" || strings.HasPrefix(line, "#")) {
			continue
		}
		if strings.HasSuffix(line, "\\") {
			cur += strings.TrimSuffix(line, "\\") + " "
			continue
		}
		cur += line
		op, args, _ := strings.Cut(cur, " ")
		op = strings.ToUpper(op)
		if op == "FROM" {
			stage++
		}
		ins = append(ins, dockerInstruction{stage, op, strings.TrimSpace(args)})
		cur = ""
	}
	return ins
}

// TestR21_14_DockerfileAgreesWithImage holds deploy/Dockerfile, which CI
// cannot build, to the image make image builds: a golang builder stage
// building statically with -trimpath, a distroless or scratch final
// stage, and the same user, labels, port, environment, files,
// entrypoint and command.
func TestR21_14_DockerfileAgreesWithImage(t *testing.T) {
	img, _ := image(t)
	cfg := img.config.Config
	ins := parseDockerfile(readFile(t, "deploy/Dockerfile"))
	var froms []string
	last := 0
	for _, in := range ins {
		if in.op == "FROM" {
			froms = append(froms, in.args)
			last = in.stage
		}
	}
	if len(froms) != 2 || !strings.HasPrefix(froms[0], "golang:") || !strings.HasSuffix(froms[0], " AS build") {
		t.Fatalf("stages %q; want a golang builder named build, then the image", froms)
	}
	if f := froms[1]; !strings.HasPrefix(f, "gcr.io/distroless/static") && f != "scratch" {
		t.Errorf("the final stage is %q; want distroless static or scratch", f)
	}
	var build, final []dockerInstruction
	for _, in := range ins {
		if in.stage == last {
			final = append(final, in)
		} else if in.stage >= 0 {
			build = append(build, in)
		}
	}
	var buildText strings.Builder
	for _, in := range build {
		buildText.WriteString(in.op + " " + in.args + "\n")
	}
	for _, want := range []string{"CGO_ENABLED=0", "-trimpath", "cmd/recourse-proxy@${VERSION}", "./probe"} {
		if !strings.Contains(buildText.String(), want) {
			t.Errorf("the builder stage never says %q", want)
		}
	}

	labels := map[string]string{}
	var got struct {
		user, expose, entrypoint, cmd string
		env, copies                   []string
		versionArg                    bool
	}
	for _, in := range final {
		switch in.op {
		case "ARG":
			got.versionArg = got.versionArg || in.args == "VERSION"
		case "USER":
			got.user = in.args
		case "EXPOSE":
			got.expose = in.args
		case "ENTRYPOINT":
			got.entrypoint = in.args
		case "CMD":
			got.cmd = in.args
		case "ENV":
			got.env = append(got.env, in.args)
		case "COPY":
			f := strings.Fields(in.args)
			got.copies = append(got.copies, f[len(f)-1])
		case "LABEL":
			for _, m := range regexp.MustCompile(`([a-z.]+)="([^"]*)"`).FindAllStringSubmatch(in.args, -1) {
				labels[m[1]] = m[2]
			}
		}
	}
	if got.user != cfg.User {
		t.Errorf("USER %q; the image's is %q", got.user, cfg.User)
	}
	if got.expose+"/tcp" != "8787/tcp" || len(cfg.ExposedPorts) != 1 {
		t.Errorf("EXPOSE %q; the image exposes %v", got.expose, cfg.ExposedPorts)
	}
	if _, ok := cfg.ExposedPorts[got.expose+"/tcp"]; !ok {
		t.Errorf("EXPOSE %q is not the image's port %v", got.expose, cfg.ExposedPorts)
	}
	for name, arr := range map[string]struct {
		text string
		want []string
	}{"ENTRYPOINT": {got.entrypoint, cfg.Entrypoint}, "CMD": {got.cmd, cfg.Cmd}} {
		var v []string
		if err := json.Unmarshal([]byte(arr.text), &v); err != nil {
			t.Errorf("%s %s is not in the exec (JSON) form: %v", name, arr.text, err)
		} else if !slices.Equal(v, arr.want) {
			t.Errorf("%s %q; the image's is %q", name, v, arr.want)
		}
	}
	if !slices.Equal(got.env, cfg.Env) {
		t.Errorf("ENV %q; the image's is %q", got.env, cfg.Env)
	}
	for _, p := range []string{binaryPath, probePath} {
		if !slices.Contains(got.copies, p) {
			t.Errorf("the final stage copies nothing to %s", p)
		}
	}
	if !got.versionArg {
		t.Errorf("the final stage does not declare ARG VERSION")
	}
	if len(labels) != len(cfg.Labels) {
		t.Errorf("LABEL %v; the image's are %v", labels, cfg.Labels)
	}
	for k, v := range cfg.Labels {
		want := v
		if k == "org.opencontainers.image.version" {
			want = "${VERSION}"
		}
		if labels[k] != want {
			t.Errorf("LABEL %s=%q; want %q", k, labels[k], want)
		}
	}
}

// composeService is what the test reads of one compose service.
type composeService struct {
	image, command, health string
	env                    []string
}

// parseCompose reads the services of a compose file written in this
// repository's block style: a service is a two-space key under services:,
// its command and health check test are one-line JSON arrays, its
// environment a block of KEY: value lines.
func parseCompose(src string) map[string]*composeService {
	svcs := map[string]*composeService{}
	var cur *composeService
	inServices, inEnv := false, false
	for _, line := range strings.Split(src, "\n") {
		trimmed := strings.TrimSpace(line)
		if trimmed == "" || strings.HasPrefix(trimmed, "#") {
			continue
		}
		indent := len(line) - len(strings.TrimLeft(line, " "))
		if indent == 0 {
			inServices, cur = trimmed == "services:", nil
			continue
		}
		if !inServices {
			continue
		}
		if indent == 2 {
			cur = &composeService{}
			svcs[strings.TrimSuffix(trimmed, ":")] = cur
			inEnv = false
			continue
		}
		if cur == nil {
			continue
		}
		key, val, _ := strings.Cut(trimmed, ":")
		switch {
		case indent == 4:
			inEnv = key == "environment"
			switch key {
			case "image":
				cur.image = strings.TrimSpace(val)
			case "command":
				cur.command = strings.TrimSpace(val)
			}
		case inEnv && indent == 6:
			cur.env = append(cur.env, key)
		case key == "test" && indent == 6:
			cur.health = strings.TrimSpace(val)
		}
	}
	return svcs
}

// TestR21_14_ComposeFlagsExist reads deploy/compose.yaml: one Redis and
// two proxies on it, every flag and variable a proxy is given one the
// proxy's -h lists, and each proxy's health check the image's probe on
// /readyz.
func TestR21_14_ComposeFlagsExist(t *testing.T) {
	img, bin := image(t)
	flags, envs := proxyFlags(t, bin)
	svcs := parseCompose(readFile(t, "deploy/compose.yaml"))
	var proxies []string
	for name, s := range svcs {
		if strings.Contains(s.image, "recourse-proxy") {
			proxies = append(proxies, name)
		}
	}
	if len(proxies) != 2 {
		t.Fatalf("proxy services %q; want two", proxies)
	}
	if r := svcs["redis"]; r == nil || !strings.HasPrefix(r.image, "redis:") {
		t.Fatalf("no redis service")
	}
	for _, name := range proxies {
		s := svcs[name]
		var args []string
		if err := json.Unmarshal([]byte(s.command), &args); err != nil {
			t.Errorf("%s: command %s is not a JSON array: %v", name, s.command, err)
			continue
		}
		names := flagNames(args)
		for _, f := range names {
			if !flags[f] {
				t.Errorf("%s passes -%s, which recourse-proxy does not have", name, f)
			}
		}
		for _, want := range []string{"redis", "quota-fleet-cap", "listen", "allow-remote"} {
			if !slices.Contains(names, want) {
				t.Errorf("%s does not pass -%s", name, want)
			}
		}
		if i := slices.Index(args, "-redis"); i < 0 || i+1 >= len(args) || !strings.HasPrefix(args[i+1], "redis:") {
			t.Errorf("%s's -redis is not the redis service", name)
		}
		for _, e := range s.env {
			if !envs[e] {
				t.Errorf("%s sets %s, which recourse-proxy does not read", name, e)
			}
		}
		var test []string
		if err := json.Unmarshal([]byte(s.health), &test); err != nil || len(test) != 3 || test[0] != "CMD" ||
			test[1] != probePath || !strings.HasSuffix(test[2], ":8787/readyz") {
			t.Errorf("%s's health check %s; want [\"CMD\", %q, \"http://127.0.0.1:8787/readyz\"]", name, s.health, probePath)
		} else if img.data[strings.TrimPrefix(test[1], "/")] == nil {
			t.Errorf("%s's health check runs %s, which the image does not hold", name, test[1])
		}
	}
}

// unitDirectives returns the [Service] directives of a systemd unit, each
// key with its values in order.
func unitDirectives(src string) map[string][]string {
	d := map[string][]string{}
	section := ""
	for _, line := range strings.Split(src, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") || strings.HasPrefix(line, ";") {
			continue
		}
		if strings.HasPrefix(line, "[") {
			section = strings.Trim(line, "[]")
			continue
		}
		if k, v, ok := strings.Cut(line, "="); ok {
			d[section+"."+k] = append(d[section+"."+k], v)
		}
	}
	return d
}

// TestR21_14_SystemdUnitHardenedAndVerified reads
// deploy/recourse-proxy.service: its hardening options, its flags and its
// environment file's variables against the proxy's -h, and, where
// systemd-analyze is installed, verifies it with ExecStart pointing at the
// image's proxy.
func TestR21_14_SystemdUnitHardenedAndVerified(t *testing.T) {
	_, bin := image(t)
	flags, envs := proxyFlags(t, bin)
	src := readFile(t, "deploy/recourse-proxy.service")
	d := unitDirectives(src)
	for k, want := range map[string]string{
		"DynamicUser": "yes", "NoNewPrivileges": "yes", "ProtectSystem": "strict", "ProtectHome": "yes",
		"PrivateTmp": "yes", "PrivateDevices": "yes", "RestrictAddressFamilies": "AF_INET AF_INET6 AF_UNIX",
		"CapabilityBoundingSet": "", "MemoryDenyWriteExecute": "yes", "LockPersonality": "yes",
		"Restart": "on-failure", "RestrictSUIDSGID": "yes", "RestrictNamespaces": "yes",
	} {
		if v := d["Service."+k]; len(v) != 1 || v[0] != want {
			t.Errorf("%s=%q; want %q", k, v, want)
		}
	}
	if v := d["Service.SystemCallFilter"]; len(v) == 0 || v[0] != "@system-service" {
		t.Errorf("SystemCallFilter=%q; want @system-service first", v)
	}
	exec1 := d["Service.ExecStart"]
	if len(exec1) != 1 {
		t.Fatalf("ExecStart=%q", exec1)
	}
	args := strings.Fields(exec1[0])
	if args[0] != binaryPath {
		t.Errorf("ExecStart runs %s; the image and docs install %s", args[0], binaryPath)
	}
	for _, f := range flagNames(args[1:]) {
		if !flags[f] {
			t.Errorf("ExecStart passes -%s, which recourse-proxy does not have", f)
		}
	}
	if i := slices.Index(args, "-listen"); i < 0 || !strings.HasPrefix(args[i+1], "127.0.0.1:") {
		t.Errorf("ExecStart does not listen on loopback: %q", args)
	}
	ef := d["Service.EnvironmentFile"]
	if len(ef) != 1 || !strings.HasPrefix(ef[0], "/etc/recourse-proxy/") {
		t.Errorf("EnvironmentFile=%q", ef)
	}

	// The environment file: every variable, commented out or not.
	vars := regexp.MustCompile(`(?m)^#?([A-Z][A-Z0-9_]*)=`).FindAllStringSubmatch(readFile(t, "deploy/recourse-proxy.env"), -1)
	if len(vars) < 3 {
		t.Errorf("deploy/recourse-proxy.env names %d variables", len(vars))
	}
	for _, m := range vars {
		if !envs[m[1]] {
			t.Errorf("deploy/recourse-proxy.env sets %s, which recourse-proxy does not read", m[1])
		}
	}

	sa, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Logf("systemd-analyze is not installed: the unit was checked by parsing only")
		return
	}
	dir := t.TempDir()
	unit := strings.Replace(src, "ExecStart="+binaryPath, "ExecStart="+bin, 1)
	unit = strings.Replace(unit, "EnvironmentFile="+ef[0], "EnvironmentFile="+filepath.Join(dir, "env"), 1)
	if err := os.WriteFile(filepath.Join(dir, "env"), []byte("RECOURSE_PROXY_UPSTREAM=http://127.0.0.1:1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "recourse-proxy.service")
	if err := os.WriteFile(path, []byte(unit), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, sa, "verify", "--man=no", path).CombinedOutput()
	if err != nil || len(strings.TrimSpace(string(out))) > 0 {
		t.Errorf("systemd-analyze verify: %v\n%s", err, out)
	}
}
