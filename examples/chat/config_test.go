package main

import (
	"io"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/recourse-dev/recourse/layers/stall"
)

func TestParseConfigPicksProvider(t *testing.T) {
	for name, tc := range map[string]struct {
		args []string
		env  map[string]string
		want config
	}{
		"nothing set: scripted": {
			want: config{provider: providerScripted, dialect: dialectOpenAI, model: scriptedModel},
		},
		"-faults wins over the environment": {
			args: []string{"-faults", "-dialect", "ollama"},
			env:  map[string]string{"OLLAMA_HOST": "127.0.0.1", "OPENAI_API_KEY": "sk-x"},
			want: config{provider: providerScripted, faults: true, dialect: dialectOllama, model: scriptedModel},
		},
		"OLLAMA_HOST": {
			env:  map[string]string{"OLLAMA_HOST": "127.0.0.1", "OLLAMA_MODEL": "qwen3", "OPENAI_API_KEY": "sk-x"},
			want: config{provider: providerOllama, dialect: dialectOpenAI, baseURL: "http://127.0.0.1:11434", model: "qwen3"},
		},
		"OPENAI_API_KEY": {
			env:  map[string]string{"OPENAI_API_KEY": "sk-x"},
			want: config{provider: providerOpenAI, dialect: dialectOpenAI, baseURL: "https://api.openai.com", apiKey: "sk-x", model: "gpt-4o-mini"},
		},
		"OPENAI_BASE_URL and OPENAI_MODEL": {
			env: map[string]string{"OPENAI_API_KEY": "sk-x", "OPENAI_BASE_URL": "http://127.0.0.1:8080/v1/", "OPENAI_MODEL": "m"},
			want: config{provider: providerOpenAI, dialect: dialectOpenAI, baseURL: "http://127.0.0.1:8080",
				apiKey: "sk-x", model: "m"},
		},
		"-provider scripted": {
			args: []string{"-provider", "scripted"},
			env:  map[string]string{"OPENAI_API_KEY": "sk-x"},
			want: config{provider: providerScripted, dialect: dialectOpenAI, model: scriptedModel},
		},
		"-provider omlx": {
			args: []string{"-provider", "omlx"},
			env:  map[string]string{"OMLX_BASE_URL": "http://127.0.0.1:8000/v1", "OMLX_MODEL": "qwen"},
			want: config{provider: providerOMLX, dialect: dialectOpenAI, baseURL: "http://127.0.0.1:8000", model: "qwen"},
		},
	} {
		t.Run(name, func(t *testing.T) {
			got, err := parseConfig(tc.args, func(k string) string { return tc.env[k] }, io.Discard)
			require.NoError(t, err)
			if got.provider == providerScripted {
				assert.Equal(t, 2400*time.Millisecond, got.baseDelay)
				assert.Equal(t, 0.5, got.jitter(), "fixed jitter: waits of 1.2s, 2.4s, 4.8s")
			} else {
				assert.Equal(t, time.Second, got.baseDelay)
				assert.Nil(t, got.jitter)
			}
			if got.provider == providerScripted {
				assert.Equal(t, scriptedStall, got.stall)
			} else {
				assert.Equal(t, realStall, got.stall)
			}
			got.baseDelay, got.jitter, got.gap, got.stall = 0, nil, 0, stall.Limits{}
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestParseConfigErrors(t *testing.T) {
	for name, args := range map[string][]string{
		"-faults with a real provider": {"-faults", "-provider", "openai"},
		"unknown provider":             {"-provider", "gemini"},
		"unknown dialect":              {"-dialect", "anthropic"},
		"openai without a key":         {"-provider", "openai"},
		"omlx without its variables":   {"-provider", "omlx"},
		"stray argument":               {"hello"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := parseConfig(args, func(string) string { return "" }, io.Discard)
			assert.Error(t, err)
		})
	}
}

func TestOllamaBase(t *testing.T) {
	for in, want := range map[string]string{
		"127.0.0.1":               "http://127.0.0.1:11434",
		"localhost:11434":         "http://localhost:11434",
		"http://ollama.lan:8080/": "http://ollama.lan:8080",
		"https://ollama.internal": "https://ollama.internal:443",
	} {
		got, err := ollamaBase(in)
		require.NoError(t, err)
		assert.Equal(t, want, got, in)
	}
}

// Without faults the scripted model answers at once, and asking for a die
// runs the tool.
func TestEndToEndWithoutFaults(t *testing.T) {
	var rolls atomic.Int32
	cfg := faultConfig(dialectOpenAI, &rolls)
	cfg.faults = false
	h := startHeadless(t, cfg)
	asked, err := h.turn(t, "hi", "y")
	require.NoError(t, err)
	_, err = h.turn(t, "roll the dice please", "y")
	require.NoError(t, err)
	h.quit(t)
	assert.Empty(t, asked)
	assert.Equal(t, []string{
		"user: hi", "assistant: " + answerPlain("hi"),
		"user: roll the dice please", "assistant: " + answerDice("4"),
	}, h.app.model.Transcript())
	assert.Equal(t, int32(1), rolls.Load())
	assert.Equal(t, 3, h.app.backend.scripted.Hits())
	assert.Empty(t, h.obs.statuses, "nothing failed, so nothing was shown")
}
