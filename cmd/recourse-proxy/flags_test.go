package main

import (
	"bytes"
	"errors"
	"flag"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/recourse-dev/recourse/layer"
)

func env(kv map[string]string) func(string) string { return func(k string) string { return kv[k] } }

func TestFlagsAndEnvironment(t *testing.T) {
	s, err := parse([]string{"-upstream", "http://127.0.0.1:11434", "-provider", "ollama", "-max-attempts", "6"}, env(map[string]string{
		"RECOURSE_PROXY_MAX_ATTEMPTS":        "2", // the flag wins
		"RECOURSE_PROXY_ADMIT":               "allow",
		"RECOURSE_PROXY_BASE_DELAY":          "250ms",
		"RECOURSE_PROXY_RETRY_STATUSES":      "503, 529",
		"RECOURSE_PROXY_RETRY_CATEGORIES":    "transport",
		"RECOURSE_PROXY_BUDGET":              "1m",
		"RECOURSE_PROXY_STREAM_COMMIT_AFTER": "0",
	}), &bytes.Buffer{})
	require.NoError(t, err)
	cfg, err := s.config()
	require.NoError(t, err)
	assert.Equal(t, "ollama", cfg.Provider)
	assert.Equal(t, 6, cfg.Policy.MaxAttempts)
	assert.Equal(t, 250*time.Millisecond, *cfg.Policy.BaseDelay)
	assert.Equal(t, 30*time.Second, *cfg.Policy.DelayCeiling)
	assert.Equal(t, time.Minute, *cfg.Policy.Budget)
	assert.Equal(t, []int{503, 529}, cfg.Policy.RetryableStatuses)
	assert.Equal(t, []layer.Category{layer.CategoryTransport}, cfg.Policy.RetryableCategories)
	assert.NotNil(t, cfg.Policy.Admit)
	assert.Equal(t, time.Nanosecond, cfg.StreamCommitAfter, "0 commits at the first backoff")
}

func TestDefaults(t *testing.T) {
	s, err := parse([]string{"-upstream", "https://api.openai.com"}, env(nil), &bytes.Buffer{})
	require.NoError(t, err)
	cfg, err := s.config()
	require.NoError(t, err)
	assert.Equal(t, "openai", cfg.Provider)
	assert.Equal(t, "127.0.0.1:8787", s.listen)
	assert.Equal(t, 4, cfg.Policy.MaxAttempts)
	assert.Nil(t, cfg.Policy.Admit, "deny: the codec's rule, admission_required for local providers")
	assert.Nil(t, cfg.Policy.Budget)
	assert.Equal(t, 10*time.Second, cfg.StreamCommitAfter)
	assert.Equal(t, int64(32<<20), cfg.MaxBodyBytes)
	assert.Equal(t, 30*time.Second, s.grace)
}

func TestBadSettings(t *testing.T) {
	for _, tc := range []struct {
		args []string
		env  map[string]string
		want string
	}{
		{nil, nil, "-upstream is required"},
		{[]string{"-upstream", "x", "-max-attempts", "0"}, nil, "-max-attempts must be between 1 and 1000"},
		{[]string{"-upstream", "x", "-admit", "maybe"}, nil, `-admit is "maybe"`},
		{[]string{"-upstream", "x", "-retry-statuses", "5xx"}, nil, `"5xx" is not an HTTP status`},
		{[]string{"-upstream", "x", "-retry-categories", "network"}, nil, `"network" is not a category`},
		{[]string{"-upstream", "x", "-max-body", "0"}, nil, "-max-body must be positive"},
		{[]string{"-upstream", "x"}, map[string]string{"RECOURSE_PROXY_MAX_ATTEMPTS": "many"}, "RECOURSE_PROXY_MAX_ATTEMPTS: parse error"},
		{[]string{"-upstream", "x", "extra"}, nil, `unexpected argument "extra"`},
	} {
		s, err := parse(tc.args, env(tc.env), &bytes.Buffer{})
		if err == nil {
			_, err = s.config()
		}
		require.Error(t, err, tc.want)
		assert.Contains(t, err.Error(), tc.want)
	}
}

func TestLoopbackByDefault(t *testing.T) {
	for _, ok := range []string{"127.0.0.1:8787", "[::1]:8787", "localhost:8787", "127.0.0.2:1"} {
		assert.NoError(t, checkListen(ok, false), ok)
	}
	for _, bad := range []string{":8787", "0.0.0.0:8787", "[::]:8787", "192.168.1.4:8787", "example.com:80"} {
		err := checkListen(bad, false)
		require.Error(t, err, bad)
		assert.Contains(t, err.Error(), "add -allow-remote")
		assert.NoError(t, checkListen(bad, true), bad)
	}
	assert.Error(t, checkListen("8787", true))
}

func TestHelpNamesEveryFlagAndVariable(t *testing.T) {
	var out bytes.Buffer
	_, err := parse([]string{"-h"}, env(nil), &out)
	require.True(t, errors.Is(err, flag.ErrHelp))
	fs := flag.NewFlagSet("", flag.ContinueOnError)
	define(fs, &settings{})
	fs.VisitAll(func(f *flag.Flag) {
		assert.Regexp(t, `(?m)^  -`+f.Name+`( \w+)?$`, out.String())
		assert.Contains(t, out.String(), "["+envName(f.Name)+"]")
	})
	assert.True(t, strings.HasPrefix(out.String(), "recourse-proxy: a local recovery proxy"))
}

func TestLoggerSettings(t *testing.T) {
	var buf bytes.Buffer
	s := &settings{logFormat: "json", logLevel: "warn"}
	l, err := s.logger(&buf)
	require.NoError(t, err)
	l.Info("hidden")
	l.Warn("shown")
	assert.Equal(t, 1, strings.Count(buf.String(), `"msg":"shown"`))
	assert.NotContains(t, buf.String(), "hidden")
	_, err = (&settings{logFormat: "xml", logLevel: "info"}).logger(&buf)
	assert.ErrorContains(t, err, `-log-format is "xml"`)
	_, err = (&settings{logFormat: "text", logLevel: "loud"}).logger(&buf)
	assert.ErrorContains(t, err, `-log-level is "loud"`)
}

// FuzzSettingLists feeds arbitrary text to the list and address parsers:
// no panic, and what they accept is in range.
func FuzzSettingLists(f *testing.F) {
	for _, s := range []string{"429,500", " 503 , ", "", "transport,http", "5xx", "127.0.0.1:8787", "[::1]:1", ":80", "a:b:c"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if st, err := parseStatuses(s); err == nil {
			for _, n := range st {
				if n < 100 || n > 599 {
					t.Fatalf("accepted status %d", n)
				}
			}
		}
		if cs, err := parseCategories(s); err == nil {
			for _, c := range cs {
				if !c.Valid() {
					t.Fatalf("accepted category %q", c)
				}
			}
		}
		_ = checkListen(s, false)
		_ = checkListen(s, true)
	})
}
