package main

import (
	"bytes"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/recourse-dev/recourse/event"
	"github.com/recourse-dev/recourse/layers/fallback"
)

// -fallback names the targets in order: model names, upstream URLs of the
// same wire and URL#model; an upstream target's key comes from its own
// variable and from nowhere else.
func TestR20_10_FallbackFlagNamesTheTargets(t *testing.T) {
	s, err := parse([]string{"-upstream", "https://api.openai.com", "-fallback", "gpt-4o-mini, https://openrouter.ai/api#openai/gpt-4o, http://127.0.0.1:8000",
		"-fallback-statuses", "404"}, env(map[string]string{"RECOURSE_PROXY_FALLBACK_KEY_2": "sk-or-key"}), &bytes.Buffer{})
	require.NoError(t, err)
	cfg, err := s.config()
	require.NoError(t, err)
	require.Len(t, cfg.Fallback, 3)
	assert.Equal(t, "gpt-4o-mini", cfg.Fallback[0].Model)
	assert.Empty(t, cfg.Fallback[0].Upstream)
	assert.Nil(t, cfg.Fallback[0].Credential)
	assert.Equal(t, "https://openrouter.ai/api", cfg.Fallback[1].Upstream)
	assert.Equal(t, "openai/gpt-4o", cfg.Fallback[1].Model)
	require.NotNil(t, cfg.Fallback[1].Credential)
	h := http.Header{}
	require.NoError(t, cfg.Fallback[1].Credential(t.Context(), h))
	assert.Equal(t, "Bearer sk-or-key", h.Get("Authorization"))
	assert.Equal(t, "http://127.0.0.1:8000", cfg.Fallback[2].Upstream)
	assert.Nil(t, cfg.Fallback[2].Credential, "no variable, no key")
	assert.Equal(t, []int{404}, cfg.FallbackStatuses)

	// On a wire whose key has a header of its own, a fallback target's
	// key goes there, never into Authorization (R21.12).
	for provider, header := range map[string]string{"anthropic": "X-Api-Key", "gemini": "X-Goog-Api-Key"} {
		s, err := parse([]string{"-provider", provider, "-upstream", "https://api.example.com", "-fallback", "https://other.example.com#m"},
			env(map[string]string{"RECOURSE_PROXY_FALLBACK_KEY_1": "sk-fb-key"}), &bytes.Buffer{})
		require.NoError(t, err)
		cfg, err := s.config()
		require.NoError(t, err)
		require.Len(t, cfg.Fallback, 1)
		require.NotNil(t, cfg.Fallback[0].Credential)
		h := http.Header{}
		require.NoError(t, cfg.Fallback[0].Credential(t.Context(), h))
		assert.Equal(t, "sk-fb-key", h.Get(header), provider)
		assert.Empty(t, h.Get("Authorization"), provider)
	}

	for _, args := range [][]string{
		{"-fallback-statuses", "404"},
		{"-fallback", "ftp://host"},
		{"-fallback", " , "},
		{"-fallback", "m", "-fallback-statuses", "x"},
	} {
		s, err := parse(append([]string{"-upstream", "https://api.openai.com"}, args...), env(nil), &bytes.Buffer{})
		require.NoError(t, err)
		_, err = s.config()
		assert.Error(t, err, args)
	}

	// A bad status names the flag it came from.
	s, err = parse([]string{"-upstream", "https://api.openai.com", "-fallback", "m", "-fallback-statuses", "99"}, env(nil), &bytes.Buffer{})
	require.NoError(t, err)
	_, err = s.config()
	require.Error(t, err)
	assert.Equal(t, `-fallback-statuses: "99" is not an HTTP status`, err.Error())
}

// -fallback-statuses refuses a status outside 400–599 with the same
// validation as the library's entry points (fallback.Rules.Validate),
// naming the flag.
func TestR20_2_FallbackStatusesRefuseANonFailureStatus(t *testing.T) {
	for _, st := range []string{"307", "200", "100"} {
		s, err := parse([]string{"-upstream", "https://api.openai.com", "-fallback", "m", "-fallback-statuses", "404," + st}, env(nil), &bytes.Buffer{})
		require.NoError(t, err)
		_, err = s.config()
		require.Error(t, err, st)
		assert.Equal(t, "-fallback-statuses: "+fallback.Rules{Statuses: []int{307}}.Validate().Error(), err.Error(), st)
	}
}

// -fallback-codes and -fallback-never-codes (or their variables) name the
// provider codes that fall back and those that never do; a code named by
// both, and either flag without -fallback, is refused naming the flag.
func TestR20_2_FallbackCodeFlags(t *testing.T) {
	s, err := parse([]string{"-upstream", "https://api.openai.com", "-fallback", "gpt-4o", "-fallback-codes", "context_length_exceeded"},
		env(map[string]string{"RECOURSE_PROXY_FALLBACK_NEVER_CODES": "content_policy_violation, content_filter"}), &bytes.Buffer{})
	require.NoError(t, err)
	cfg, err := s.config()
	require.NoError(t, err)
	assert.Equal(t, []string{"context_length_exceeded"}, cfg.FallbackRules.Codes)
	assert.Equal(t, []string{"content_policy_violation", "content_filter"}, cfg.FallbackRules.NeverCodes)

	for want, args := range map[string][]string{
		"-fallback-codes: fallback: config Rules.Codes names a code NeverCodes names too: a code either falls back or never does": {"-fallback", "m", "-fallback-codes", "x", "-fallback-never-codes", "x"},
		"-fallback-codes is set but -fallback is empty; drop it, or name the targets":                                             {"-fallback-codes", "x"},
		"-fallback-never-codes is set but -fallback is empty; drop it, or name the targets":                                       {"-fallback-never-codes", "x"},
	} {
		s, err := parse(append([]string{"-upstream", "https://api.openai.com"}, args...), env(nil), &bytes.Buffer{})
		require.NoError(t, err)
		_, err = s.config()
		require.Error(t, err)
		assert.Equal(t, want, err.Error())
	}
}

// -fallback-on-stall (or its variable) names the stall limits after which
// a target is left at once; a limit that is off, or a name that is no
// limit, is refused naming the flag.
func TestR20_12_FallbackOnStallFlag(t *testing.T) {
	s, err := parse([]string{"-upstream", "https://api.openai.com", "-fallback", "gpt-4o", "-header-timeout", "30s", "-first-output-timeout", "10s"},
		env(map[string]string{"RECOURSE_PROXY_FALLBACK_ON_STALL": "header_timeout,first_output_timeout"}), &bytes.Buffer{})
	require.NoError(t, err)
	cfg, err := s.config()
	require.NoError(t, err)
	assert.Equal(t, []event.StallLimit{event.StallHeader, event.StallFirstOutput}, cfg.FallbackRules.Stalls)

	for want, args := range map[string][]string{
		"-fallback-on-stall names header_timeout but its limit is off; set -header-timeout":      {"-fallback", "m", "-fallback-on-stall", "header_timeout"},
		`-fallback-on-stall: "slow" is not header_timeout, first_output_timeout or idle_timeout`: {"-fallback", "m", "-fallback-on-stall", "slow"},
		"-fallback-on-stall is set but -fallback is empty; drop it, or name the targets":         {"-fallback-on-stall", "header_timeout", "-header-timeout", "1s"},
	} {
		s, err := parse(append([]string{"-upstream", "https://api.openai.com"}, args...), env(nil), &bytes.Buffer{})
		require.NoError(t, err)
		_, err = s.config()
		require.Error(t, err)
		assert.Equal(t, want, err.Error())
	}
}

// -fallback-on-stall's N=limit items set the N-th target's own Stalls
// (R20.16), N=none an empty list; a plain item stays the rules'.
func TestR20_16_FallbackOnStallPerTarget(t *testing.T) {
	s, err := parse([]string{"-upstream", "https://api.openai.com", "-fallback", "gpt-4o,o3,gpt-4o-mini", "-header-timeout", "30s", "-first-output-timeout", "10s",
		"-fallback-on-stall", "header_timeout,1=none,2=header_timeout,2=first_output_timeout"}, env(nil), &bytes.Buffer{})
	require.NoError(t, err)
	cfg, err := s.config()
	require.NoError(t, err)
	assert.Equal(t, []event.StallLimit{event.StallHeader}, cfg.FallbackRules.Stalls)
	require.Len(t, cfg.Fallback, 3)
	assert.Equal(t, []event.StallLimit{}, cfg.Fallback[0].Stalls, "1=none: never left on a stall")
	assert.Equal(t, []event.StallLimit{event.StallHeader, event.StallFirstOutput}, cfg.Fallback[1].Stalls)
	assert.Nil(t, cfg.Fallback[2].Stalls, "the rules'")

	for want, args := range map[string][]string{
		`-fallback-on-stall: in "3=header_timeout", "3" is not the number of a -fallback target (1 to 2)`: {"-fallback", "a,b", "-header-timeout", "1s", "-fallback-on-stall", "3=header_timeout"},
		`-fallback-on-stall: in "x=none", "x" is not the number of a -fallback target (1 to 2)`:           {"-fallback", "a,b", "-fallback-on-stall", "x=none"},
		`-fallback-on-stall: "slow" is not header_timeout, first_output_timeout or idle_timeout`:          {"-fallback", "a,b", "-fallback-on-stall", "1=slow"},
		"-fallback-on-stall names idle_timeout but its limit is off; set -idle-timeout":                   {"-fallback", "a,b", "-fallback-on-stall", "2=idle_timeout"},
	} {
		s, err := parse(append([]string{"-upstream", "https://api.openai.com"}, args...), env(nil), &bytes.Buffer{})
		require.NoError(t, err)
		_, err = s.config()
		require.Error(t, err)
		assert.Equal(t, want, err.Error())
	}
}
