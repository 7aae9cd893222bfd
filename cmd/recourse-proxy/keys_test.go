package main

import (
	"bytes"
	"encoding/hex"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/recourse-dev/recourse/proxy"
)

// R21.12: the held upstream key comes from its environment variable or a
// file, never from the command line; the client keys from a file of
// hashes; and with client keys a non-loopback -listen needs no
// -allow-remote.
func TestR21_12_KeySettings(t *testing.T) {
	dir := t.TempDir()
	keyFile := filepath.Join(dir, "upstream.key")
	require.NoError(t, os.WriteFile(keyFile, []byte("sk-from-file\n"), 0o600))
	sum := proxy.HashKey("rp-team")
	clients := filepath.Join(dir, "clients")
	require.NoError(t, os.WriteFile(clients, []byte(hex.EncodeToString(sum[:])+" team completions\n"), 0o600))

	fs := flag.NewFlagSet("", flag.ContinueOnError)
	define(fs, &settings{})
	assert.Nil(t, fs.Lookup("upstream-key"), "no flag carries the key itself")

	config := func(args []string, kv map[string]string) error {
		s, err := parse(append([]string{"-upstream", "https://api.openai.com"}, args...), env(kv), &bytes.Buffer{})
		require.NoError(t, err)
		_, err = s.config()
		return err
	}
	s, err := parse([]string{"-upstream", "https://api.openai.com"}, env(map[string]string{envUpstreamKey: "sk-from-env"}), &bytes.Buffer{})
	require.NoError(t, err)
	cfg, err := s.config()
	require.NoError(t, err)
	assert.Equal(t, "sk-from-env", cfg.UpstreamKey)
	assert.Nil(t, cfg.ClientKeys)

	s, err = parse([]string{"-upstream", "https://api.openai.com", "-upstream-key-file", keyFile, "-client-keys", clients, "-listen", "0.0.0.0:8787"}, env(nil), &bytes.Buffer{})
	require.NoError(t, err)
	cfg, err = s.config()
	require.NoError(t, err)
	assert.Equal(t, "sk-from-file", cfg.UpstreamKey)
	assert.Equal(t, []proxy.ClientKey{{Hash: sum, Name: "team", Routes: []string{"completions"}}}, cfg.ClientKeys)
	assert.NoError(t, checkListen(s.listen, s.remoteAllowed()), "client keys make a remote listen an explicit choice")

	s, err = parse([]string{"-upstream", "https://api.openai.com", "-listen", "0.0.0.0:8787"}, env(nil), &bytes.Buffer{})
	require.NoError(t, err)
	assert.Error(t, checkListen(s.listen, s.remoteAllowed()), "without keys, still refused")

	for _, c := range []struct {
		args []string
		kv   map[string]string
		want string
	}{
		{[]string{"-upstream-key-file", keyFile}, map[string]string{envUpstreamKey: "sk-x"}, "give the upstream key one way"},
		{[]string{"-upstream-key-file", filepath.Join(dir, "none")}, nil, "-upstream-key-file:"},
		{[]string{"-client-keys", keyFile}, nil, "-client-keys: client keys, line 1: the first field is not a SHA-256"},
	} {
		err := config(c.args, c.kv)
		require.Error(t, err, c.want)
		assert.Contains(t, err.Error(), c.want)
		assert.NotContains(t, err.Error(), "sk-from-file")
		assert.NotContains(t, err.Error(), "sk-x")
	}
}
