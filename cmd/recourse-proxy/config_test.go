package main

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/recourse-dev/recourse/proxy"
)

// writeConfig writes a -config file of text (tabs in it become spaces) and
// returns its path.
func writeConfig(t *testing.T, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "recourse-proxy.yaml")
	require.NoError(t, os.WriteFile(p, []byte(strings.ReplaceAll(text, "\t", "  ")), 0o600))
	return p
}

// buildWith builds as the command does with args and the environment kv.
func buildWith(t *testing.T, args []string, kv map[string]string) (*built, error) {
	t.Helper()
	b := &builder{args: args, getenv: env(kv)}
	return b.build()
}

const teamFile = `# a team's proxy
max-attempts: 3
idle-timeout: 20s
routes:
	- name: openai
		provider: openai
		upstream: https://api.openai.com
		upstream-key-env: OPENAI_KEY
	- name: claude
		provider: anthropic
		upstream: https://api.anthropic.com
		upstream-key-env: ANTHROPIC_KEY
		max-attempts: 5
		first-output-timeout: 60s
		retry-statuses: [429, 529]
	- name: gemini
		provider: gemini
		upstream: https://generativelanguage.googleapis.com
		upstream-key-file: KEYFILE
	- name: local
		provider: ollama
		upstream: http://127.0.0.1:11434
		admit: allow
	- name: mlx
		provider: omlx
		prefix: /mlx
		upstream: http://127.0.0.1:8000
		fallback: http://127.0.0.1:8001#other, small
		fallback-key-env: [MLX_FALLBACK_KEY, ""]
default-route: openai
`

// R21.16: a -config file's routes each get their own settings: the
// file's top level over the flags and variables, a route's keys over the
// top level, each route's held key from the variable or file it names and
// never another's.
func TestR21_16_ConfigFileRoutes(t *testing.T) {
	keyFile := filepath.Join(t.TempDir(), "gemini.key")
	require.NoError(t, os.WriteFile(keyFile, []byte("AIza-gemini-held\n"), 0o600))
	path := writeConfig(t, strings.Replace(teamFile, "KEYFILE", keyFile, 1))
	b, err := buildWith(t, []string{"-config", path, "-max-attempts", "2", "-header-timeout", "9s"}, map[string]string{
		"OPENAI_KEY": "sk-openai-held", "ANTHROPIC_KEY": "sk-ant-held", "MLX_FALLBACK_KEY": "mlx-fb-key",
		"RECOURSE_PROXY_BASE_DELAY": "50ms",
	})
	require.NoError(t, err)
	assert.Equal(t, []string{"openai", "claude", "gemini", "local", "mlx"}, b.routes)
	require.Len(t, b.configs, 5)
	byName := map[string]proxy.Config{}
	for i, n := range b.routes {
		byName[n] = b.configs[i]
	}
	assert.Equal(t, 3, byName["openai"].Policy.MaxAttempts, "the file's top level wins over the flag")
	assert.Equal(t, 5, byName["claude"].Policy.MaxAttempts, "the route wins over the top level")
	assert.Equal(t, []int{429, 529}, byName["claude"].Policy.RetryableStatuses, "a list is the flag's comma-separated value")
	assert.Equal(t, 50*time.Millisecond, *byName["local"].Policy.BaseDelay, "a variable applies to every route")
	assert.Equal(t, "sk-openai-held", byName["openai"].UpstreamKey)
	assert.Equal(t, "sk-ant-held", byName["claude"].UpstreamKey)
	assert.Equal(t, "AIza-gemini-held", byName["gemini"].UpstreamKey)
	assert.Empty(t, byName["local"].UpstreamKey)
	assert.Empty(t, byName["mlx"].UpstreamKey)
	assert.NotNil(t, byName["local"].Policy.Admit, "admit: allow")
	assert.Nil(t, byName["openai"].Policy.Admit)
	require.Len(t, byName["mlx"].Fallback, 2)
	assert.NotNil(t, byName["mlx"].Fallback[0].Credential, "the first target's key comes from MLX_FALLBACK_KEY")
	assert.Nil(t, byName["mlx"].Fallback[1].Credential)
	for _, c := range b.configs {
		assert.Len(t, c.PerAttempt, 1, "each route has stall limits (-header-timeout, idle-timeout)")
		assert.NotNil(t, c.Quota, "each route has its quota")
	}
	assert.NotSame(t, byName["openai"].Quota, byName["claude"].Quota)
	_, ok := b.handler.(*proxy.Router)
	assert.True(t, ok)

	// A file without routes is the one-wire proxy's flags.
	b, err = buildWith(t, []string{"-config", writeConfig(t, "provider: ollama\nupstream: http://127.0.0.1:11434\nmax-attempts: 6\n")}, nil)
	require.NoError(t, err)
	_, ok = b.handler.(*proxy.Handler)
	assert.True(t, ok)
	assert.Equal(t, 6, b.configs[0].Policy.MaxAttempts)
}

// R21.16: a bad file is refused with its path, the line and the field,
// and never quotes a key.
func TestR21_16_ConfigFileErrorsNameFileLineAndField(t *testing.T) {
	route := "routes:\n\t- name: a\n\t\tprovider: openai\n\t\tupstream: https://api.openai.com\n"
	for _, c := range []struct{ file, want string }{
		{"", ":1: the file is empty"},
		{"routes: [\n", ":1: not YAML the proxy can read"},
		{"- a\n- b\n", ":1: want a mapping of settings"},
		{"max-attempts: 3\n---\nmax-attempts: 4\n", ":2: a second YAML document"},
		{"max-attempts: 3\n---\nroutes: [\n", ":3: not YAML the proxy can read"},
		{"max-attempt: 3\n", ":1: max-attempt: is not a setting"},
		{"max-attempts: three\n", `:1: max-attempts: is "three"; want an integer`},
		{"max-attempts: 3\nmax-attempts: 4\n", ":2: max-attempts: is given twice (first at line 1)"},
		{"name: x\n", ":1: name: is a key of a route"},
		{"config: other.yaml\n", ":1: config: is not a setting"},
		{route + "\t\tlisten: 0.0.0.0:1\n", ":5: routes[0].listen: is a setting of the whole process"},
		{route + "\t\tidle-timeout: 5\n", `:5: routes[0].idle-timeout: is "5"; want a duration`},
		{route + "\t\theader-timeout: -1s\n", ":5: routes[0].header-timeout: -header-timeout is -1s"},
		{route + "\t\tupstream-key-env: sk-live-CANARY-key\n", ":5: routes[0].upstream-key-env: want the name of an environment variable"},
		{route + "\t- name: a\n\t\tprovider: ollama\n\t\tupstream: http://127.0.0.1:11434\n", `:5: routes[1].name: "a" names the route at line 2 too`},
		{route + "\t- provider: ollama\n", ":5: routes[1]: has no name"},
		{route + "\t- name: b\n\t\tprovider: ollama\n", ":5: routes[1] (b): has no upstream"},
		{route + "\t- name: b\n\t\tupstream: http://127.0.0.1:11434\n", ":5: routes[1] (b): has no provider"},
		{"upstream: https://api.openai.com\n" + route, ":1: upstream: is set at the top level"},
		{"upstream-key-file: /k\n" + route, ":1: upstream-key-file: is set at the top level"},
		{route + "\t\tupstream-key-env: OPENAI_KEY\n\t\tupstream-key-file: /k\n", ":6: routes[0].upstream-key-env: and upstream-key-file are both set"},
		{route + "\t- name: b\n\t\tprovider: omlx\n\t\tupstream: http://127.0.0.1:8000\n", ":5: routes[1].prefix: is empty, and route \"a\" without a prefix recovers POST /v1/chat/completions too"},
		{route + "\t- name: B\n\t\tprovider: ollama\n\t\tupstream: http://127.0.0.1:11434\n", ":5: routes[1].name: is \"B\"; want lower-case"},
		{route + "\t\tprefix: mlx\n", ":2: routes[0].prefix: is \"mlx\"; want a path starting with /"},
		{"routes:\n\t- name: a\n\t\tprovider: claude\n\t\tupstream: https://x\n", `:3: routes[0].provider: is "claude"; want one of`},
		{"routes:\n\t- name: a\n\t\tprovider: openai\n\t\tupstream: https://x/v1\n", ":4: routes[0].upstream: ends in /v1"},
		{route + "default-route: b\n", `:5: default-route: "b" names no route`},
		{route + "routes-extra: 1\n", ":5: routes-extra: is not a setting"},
		{"routes: []\n", ":1: routes: want a list of routes"},
	} {
		path := writeConfig(t, c.file)
		_, err := buildWith(t, []string{"-config", path}, nil)
		if assert.Error(t, err, c.file) {
			assert.Contains(t, err.Error(), path+c.want, c.file)
			assert.NotContains(t, err.Error(), "CANARY")
		}
	}
	// With routes, the one-wire key variables are refused: each route names
	// its own.
	_, err := buildWith(t, []string{"-config", writeConfig(t, route)}, map[string]string{envUpstreamKey: "sk-CANARY"})
	require.Error(t, err)
	assert.Contains(t, err.Error(), envUpstreamKey+" is set")
	assert.NotContains(t, err.Error(), "CANARY")
	_, err = buildWith(t, []string{"-config", filepath.Join(t.TempDir(), "missing.yaml")}, nil)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "-config:")
	big := writeConfig(t, "# "+strings.Repeat("x", maxConfigBytes)+"\n")
	_, err = buildWith(t, []string{"-config", big}, nil)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "larger than")
}

// R21.16: -config has its environment variable, like every flag.
func TestR21_16_ConfigFromTheEnvironment(t *testing.T) {
	path := writeConfig(t, "routes:\n\t- name: a\n\t\tprovider: gemini\n\t\tupstream: https://generativelanguage.googleapis.com\n")
	b, err := buildWith(t, nil, map[string]string{"RECOURSE_PROXY_CONFIG": path})
	require.NoError(t, err)
	assert.Equal(t, []string{"a"}, b.routes)
	var out bytes.Buffer
	_, err = parse([]string{"-h"}, env(nil), &out)
	require.Error(t, err)
	assert.Contains(t, out.String(), "[RECOURSE_PROXY_CONFIG]")
}

func FuzzConfigFile(f *testing.F) {
	f.Add(teamFile)
	f.Add("routes:\n  - name: a\n    provider: openai\n    upstream: https://x\n")
	f.Add("max-attempts: [1, 2]\nroutes: {a: b}\n")
	f.Add("&a x: *a\n")
	f.Fuzz(func(t *testing.T, text string) {
		p := filepath.Join(t.TempDir(), "c.yaml")
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Skip()
		}
		_, fs, err := parseFlags(nil, env(nil), &bytes.Buffer{})
		require.NoError(t, err)
		fc, err := readConfigFile(p, fs)
		if err != nil {
			var ce *configError
			if strings.Contains(err.Error(), p+":") {
				assert.ErrorAs(t, err, &ce)
			}
			return
		}
		for _, r := range fc.routes {
			assert.NotEmpty(t, r.name)
		}
	})
}

// R22.1: the proxy's default retry statuses are the policy's, which add
// the provider's overload status: Claude's 529 is retried by a proxy
// started without -retry-statuses, as by the library. A list given is
// taken as given.
func TestR22_1_ProxyRetriesClaudesOverloadByDefault(t *testing.T) {
	s, err := parse([]string{"-provider", "anthropic", "-upstream", "https://api.anthropic.com"}, env(nil), &bytes.Buffer{})
	require.NoError(t, err)
	cfg, err := s.config()
	require.NoError(t, err)
	assert.Nil(t, cfg.Policy.RetryableStatuses, "the policy's defaults, with the codec's overload status")
	s, err = parse([]string{"-provider", "anthropic", "-upstream", "https://api.anthropic.com", "-retry-statuses", "503"}, env(nil), &bytes.Buffer{})
	require.NoError(t, err)
	cfg, err = s.config()
	require.NoError(t, err)
	assert.Equal(t, []int{503}, cfg.Policy.RetryableStatuses)
}

// R21.12, R21.16: a file that listens beyond loopback is refused unless it
// admits clients by key (client-keys) or says allow-remote, as the flags
// are.
func TestR21_16_ConfigListenBeyondLoopbackNeedsKeys(t *testing.T) {
	route := "routes:\n\t- name: a\n\t\tprovider: openai\n\t\tupstream: https://api.openai.com\n"
	for _, c := range []struct {
		top string
		ok  bool
	}{
		{"listen: 0.0.0.0:8787\n", false},
		{"listen: 0.0.0.0:8787\nallow-remote: true\n", true},
		{"listen: 0.0.0.0:8787\nclient-keys: " + clientKeysFile(t) + "\n", true},
		{"listen: 127.0.0.1:8787\n", true},
	} {
		s, _, _, err := processSettings([]string{"-config", writeConfig(t, c.top+route)}, env(nil))
		require.NoError(t, err)
		err = checkListen(s.listen, s.remoteAllowed())
		assert.Equal(t, c.ok, err == nil, "%s: %v", c.top, err)
	}
}

// R21.16: a route inherits no upstream: one set by a variable (as an
// environment file of the one-wire proxy would) is refused beside routes.
func TestR21_16_RoutesInheritNoUpstream(t *testing.T) {
	path := writeConfig(t, "routes:\n\t- name: a\n\t\tprovider: openai\n\t\tupstream: https://api.openai.com\n")
	_, err := buildWith(t, []string{"-config", path}, map[string]string{"RECOURSE_PROXY_UPSTREAM": "https://api.anthropic.com"})
	require.Error(t, err)
	assert.Contains(t, err.Error(), path+":1: upstream: is set at the top level, by its flag or by RECOURSE_PROXY_UPSTREAM")
}

// R21.16: a reload that would leave a proxy listening beyond loopback
// without client keys is refused, the running configuration kept; the
// client keys file is read again at each reload.
func TestR21_16_ReloadKeepsListeningSafe(t *testing.T) {
	keys := clientKeysFile(t)
	route := "routes:\n\t- name: a\n\t\tprovider: openai\n\t\tupstream: https://api.openai.com\n"
	path := writeConfig(t, "listen: 0.0.0.0:8787\nclient-keys: "+keys+"\n"+route)
	var logs bytes.Buffer
	b := &builder{args: []string{"-config", path}, getenv: env(nil), log: slog.New(slog.NewTextHandler(&logs, nil)), listen: "0.0.0.0:8787"}
	first, err := b.build()
	require.NoError(t, err)
	sw := &swapper{}
	sw.cur.Store(first)
	require.NoError(t, os.WriteFile(path, []byte(strings.ReplaceAll("listen: 0.0.0.0:8787\n"+route, "\t", "  ")), 0o600))
	sw.reload(t.Context(), b)
	assert.Contains(t, logs.String(), "reload refused: the running configuration stays")
	assert.Contains(t, logs.String(), "not a loopback address")
	assert.Same(t, first, sw.cur.Load())
	require.NoError(t, os.WriteFile(path, []byte(strings.ReplaceAll("listen: 0.0.0.0:8787\nclient-keys: "+keys+"\n"+strings.Replace(route, "name: a", "name: b", 1), "\t", "  ")), 0o600))
	sw.reload(t.Context(), b)
	assert.Contains(t, logs.String(), "msg=reloaded")
	assert.Equal(t, []string{"b"}, sw.cur.Load().routes)
	assert.NotContains(t, logs.String(), "setting=client-keys", "the client keys are read again, not left for a restart")
}
