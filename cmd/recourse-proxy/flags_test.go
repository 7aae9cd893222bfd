package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/recourse-dev/recourse/event"
	"github.com/recourse-dev/recourse/layers/fallback"
	"github.com/recourse-dev/recourse/layers/quota"
	"github.com/recourse-dev/recourse/layers/stall"
	"github.com/recourse-dev/recourse/proxy"
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
	assert.Equal(t, []event.Category{event.CategoryTransport}, cfg.Policy.RetryableCategories)
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
		{[]string{"-upstream", "x"}, map[string]string{"RECOURSE_PROXY_MAX_ATTEMPTS": "many"}, `RECOURSE_PROXY_MAX_ATTEMPTS is "many"; want an integer, for example 4 (it sets -max-attempts)`},
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
		assert.Contains(t, err.Error(), "or -allow-remote")
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
		if !noEnv[f.Name] {
			assert.Contains(t, out.String(), "["+envName(f.Name)+"]")
		}
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
	for _, s := range []string{"429,500", " 503 , ", "", "transport,http", "5xx", "127.0.0.1:8787", "[::1]:1", ":80", "a:b:c", "model,credential", "upstream, model", "context_length_exceeded", "header_timeout,first_output_timeout", "never", "1=none,2=header_timeout", "3=idle_timeout,x=none"} {
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
		set := &settings{quota: true, quotaRatio: 0.2, quotaWindow: time.Minute, quotaKey: s}
		if q, err := set.quotaLayer(); (q == nil) == (err == nil) {
			t.Fatalf("-quota-key %q: layer %v, error %v", s, q, err)
		}
		// The fallback rules of a list pass the library's one validation
		// whenever the flags accept them (R20.2, R20.12).
		fs := &settings{fallbackCodes: s, fallbackNeverCodes: s + ",never", fallbackOnStall: s, headerTimeout: time.Second, firstOutputTimeout: time.Second, idleTimeout: time.Second}
		targets := []fallback.Target{{Model: "a"}, {Model: "b"}}
		if r, err := fs.fallbackRules(nil, targets); err == nil {
			if verr := r.Validate(); verr != nil {
				t.Fatalf("flags %q accepted rules the library refuses: %v", s, verr)
			}
			for _, tg := range targets {
				if verr := (fallback.Rules{Stalls: tg.Stalls}).Validate(); verr != nil {
					t.Fatalf("flags %q accepted a target's stalls the library refuses: %v", s, verr)
				}
			}
		}
	})
}

// reserves counts the resends q allows in a row for an upstream, a model
// and a credential, after deposits calls.
func reserves(t *testing.T, q *quota.Layer, deposits int, model, auth string) (int, string) {
	t.Helper()
	u, _ := url.Parse("https://api.openai.com/v1/chat/completions")
	h := http.Header{}
	if auth != "" {
		h.Set("Authorization", auth)
	}
	g := q.Bind(u, model, h)
	for range deposits {
		g.Deposit()
	}
	for n := 0; n < 100; n++ {
		if _, v := g.Reserve(context.Background()); v.Refusal != nil {
			return n, v.Refusal.Text()
		}
	}
	return 100, ""
}

// -quota-cooldown=false (or its environment variable) keeps the quota and
// drops the shared cooldown.
func TestQuotaCooldownFlag(t *testing.T) {
	for _, tc := range []struct {
		args []string
		env  map[string]string
	}{
		{[]string{"-quota-cooldown=false"}, nil},
		{nil, map[string]string{"RECOURSE_PROXY_QUOTA_COOLDOWN": "false"}},
	} {
		s, err := parse(append([]string{"-upstream", "https://api.openai.com"}, tc.args...), env(tc.env), &bytes.Buffer{})
		require.NoError(t, err)
		cfg, err := s.config()
		require.NoError(t, err)
		require.NotNil(t, cfg.Quota)
		assert.False(t, cfg.Quota.SharesCooldown(), "args %v env %v", tc.args, tc.env)
	}
}

func TestStallHintAndQuotaFlags(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		env  map[string]string
	}{
		{"flags", []string{"-header-timeout", "1m", "-first-output-timeout", "10m", "-idle-timeout", "5m", "-provider-hints",
			"-quota-ratio", "0.5", "-quota-window", "2m", "-quota-floor", "1", "-quota-key", "model"}, nil},
		{"environment", nil, map[string]string{
			"RECOURSE_PROXY_HEADER_TIMEOUT":       "1m",
			"RECOURSE_PROXY_FIRST_OUTPUT_TIMEOUT": "10m",
			"RECOURSE_PROXY_IDLE_TIMEOUT":         "5m",
			"RECOURSE_PROXY_PROVIDER_HINTS":       "true",
			"RECOURSE_PROXY_QUOTA":                "true",
			"RECOURSE_PROXY_QUOTA_RATIO":          "0.5",
			"RECOURSE_PROXY_QUOTA_WINDOW":         "2m",
			"RECOURSE_PROXY_QUOTA_FLOOR":          "1",
			"RECOURSE_PROXY_QUOTA_KEY":            "model",
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := parse(append([]string{"-upstream", "https://api.openai.com"}, tc.args...), env(tc.env), &bytes.Buffer{})
			require.NoError(t, err)
			cfg, err := s.config()
			require.NoError(t, err)
			require.Len(t, cfg.PerAttempt, 1)
			sl, ok := cfg.PerAttempt[0].(*stall.Layer)
			require.True(t, ok)
			assert.Equal(t, stall.Limits{Header: time.Minute, FirstOutput: 10 * time.Minute, Idle: 5 * time.Minute}, sl.Limits())
			assert.True(t, cfg.Policy.ProviderHints)
			require.NotNil(t, cfg.Quota)
			n, text := reserves(t, cfg.Quota, 4, "gpt-4o", "")
			assert.Equal(t, 2, n, "ratio 0.5 of 4 calls")
			assert.Equal(t, "retry quota for api.openai.com exhausted: 2 resends in the last 120 s", text)
			n, _ = reserves(t, cfg.Quota, 0, "gpt-4o-mini", "")
			assert.Equal(t, 1, n, "another model has a quota of its own: its floor")
			assert.True(t, cfg.Quota.SharesCooldown(), "the shared cooldown is on with the quota by default")
		})
	}
}

func TestStallHintAndQuotaDefaults(t *testing.T) {
	s, err := parse([]string{"-upstream", "https://api.openai.com"}, env(nil), &bytes.Buffer{})
	require.NoError(t, err)
	cfg, err := s.config()
	require.NoError(t, err)
	assert.Empty(t, cfg.PerAttempt, "no stall limit by default")
	assert.False(t, cfg.Policy.ProviderHints)
	require.NotNil(t, cfg.Quota, "the quota is on by default")
	n, text := reserves(t, cfg.Quota, 10, "a", "Bearer one")
	assert.Equal(t, 3, n, "the floor of 3 (0.2 of 10 calls is 2)")
	assert.Equal(t, "retry quota for api.openai.com exhausted: 3 resends in the last 60 s", text)
	n, _ = reserves(t, cfg.Quota, 0, "b", "Bearer two")
	assert.Equal(t, 0, n, "keyed by upstream alone: models and credentials share it")

	for _, off := range []struct {
		args []string
		env  map[string]string
	}{{[]string{"-quota=false"}, nil}, {nil, map[string]string{"RECOURSE_PROXY_QUOTA": "false"}}} {
		s, err := parse(append([]string{"-upstream", "https://api.openai.com"}, off.args...), env(off.env), &bytes.Buffer{})
		require.NoError(t, err)
		cfg, err := s.config()
		require.NoError(t, err)
		assert.Nil(t, cfg.Quota)
	}

	s, err = parse([]string{"-upstream", "https://api.openai.com", "-quota-key", "credential", "-idle-timeout", "30s"}, env(nil), &bytes.Buffer{})
	require.NoError(t, err)
	cfg, err = s.config()
	require.NoError(t, err)
	assert.Equal(t, stall.Limits{Idle: 30 * time.Second}, cfg.PerAttempt[0].(*stall.Layer).Limits())
	n, _ = reserves(t, cfg.Quota, 0, "a", "Bearer one")
	assert.Equal(t, 3, n)
	n, _ = reserves(t, cfg.Quota, 0, "a", "Bearer two")
	assert.Equal(t, 3, n, "another credential has a quota of its own")
}

func TestBadStallAndQuotaSettings(t *testing.T) {
	for _, tc := range []struct {
		args []string
		env  map[string]string
		want string
	}{
		{[]string{"-idle-timeout", "-1s"}, nil, "-idle-timeout is -1s; want a positive duration, or 0 for no limit"},
		{[]string{"-header-timeout", "-5m"}, nil, "-header-timeout is -5m0s"},
		{[]string{"-first-output-timeout", "1000h"}, nil, "-first-output-timeout is 1000h0m0s; the largest limit is"},
		{[]string{"-quota-ratio", "-0.1"}, nil, "-quota-ratio is -0.1; want a number of 0 or more"},
		{[]string{"-quota-ratio", "NaN"}, nil, "-quota-ratio is NaN"},
		{[]string{"-quota-ratio", "+Inf"}, nil, "-quota-ratio is +Inf"},
		{[]string{"-quota-window", "5ms"}, nil, "-quota-window is 5ms; want at least 10ms"},
		{[]string{"-quota-floor", "-1"}, nil, "-quota-floor is -1; want 0 or more"},
		{[]string{"-quota-key", "model,host"}, nil, `-quota-key: "host" is not a key`},
		{[]string{"-quota=false", "-quota-floor", "5"}, nil, "-quota-floor is set but -quota is false"},
		{[]string{"-quota=false", "-quota-cooldown=false"}, nil, "-quota-cooldown is set but -quota is false"},
		{nil, map[string]string{"RECOURSE_PROXY_QUOTA": "false", "RECOURSE_PROXY_QUOTA_RATIO": "0.5"}, "-quota-ratio is set but -quota is false"},
		{nil, map[string]string{"RECOURSE_PROXY_IDLE_TIMEOUT": "30"}, `RECOURSE_PROXY_IDLE_TIMEOUT is "30"; want a duration`},
		{nil, map[string]string{"RECOURSE_PROXY_PROVIDER_HINTS": "maybe"}, `RECOURSE_PROXY_PROVIDER_HINTS is "maybe"; want true or false`},
		{nil, map[string]string{"RECOURSE_PROXY_QUOTA_RATIO": "a fifth"}, `RECOURSE_PROXY_QUOTA_RATIO is "a fifth"; want a number`},
	} {
		s, err := parse(append([]string{"-upstream", "https://api.openai.com"}, tc.args...), env(tc.env), &bytes.Buffer{})
		if err == nil {
			_, err = s.config()
		}
		require.Error(t, err, tc.want)
		assert.Contains(t, err.Error(), tc.want)
	}
}

// TestR21_3_RepeatWindowFlag: -repeat-window sets the proxy's memory of
// final answers, 0 turns it off, and its variable works.
func TestR21_3_RepeatWindowFlag(t *testing.T) {
	for _, tc := range []struct {
		args []string
		env  map[string]string
		want time.Duration
	}{
		{nil, nil, proxy.DefaultRepeatWindow},
		{[]string{"-repeat-window", "90s"}, nil, 90 * time.Second},
		{[]string{"-repeat-window", "0"}, nil, -1},
		{nil, map[string]string{"RECOURSE_PROXY_REPEAT_WINDOW": "0"}, -1},
		{nil, map[string]string{"RECOURSE_PROXY_REPEAT_WINDOW": "5m"}, 5 * time.Minute},
	} {
		s, err := parse(append([]string{"-upstream", "https://api.openai.com"}, tc.args...), env(tc.env), &bytes.Buffer{})
		require.NoError(t, err)
		cfg, err := s.config()
		require.NoError(t, err)
		assert.Equal(t, tc.want, cfg.RepeatWindow, "%v %v", tc.args, tc.env)
	}
	s, err := parse([]string{"-upstream", "https://api.openai.com", "-repeat-window", "-1s"}, env(nil), &bytes.Buffer{})
	require.NoError(t, err)
	_, err = s.config()
	require.Error(t, err)
	assert.Contains(t, err.Error(), "-repeat-window is -1s")
}
