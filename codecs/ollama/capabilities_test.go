package ollama_test

import (
	"testing"

	"github.com/recourse-dev/recourse/codec"
	"github.com/recourse-dev/recourse/codecs/ollama"
)

func TestR15_2_OllamaCapabilities(t *testing.T) {
	t.Parallel()
	c := ollama.New()
	caps := c.Capabilities()
	if err := caps.Validate(); err != nil {
		t.Fatalf("Validate: %v", err)
	}
	want := map[codec.Capability]codec.Support{
		codec.ClientAbort:             codec.Unknown,
		codec.RequestCancellation:     codec.Unsupported,
		codec.RequestStatus:           codec.Unsupported,
		codec.Idempotency:             codec.Unsupported,
		codec.ExactAttemptTermination: codec.Unknown,
	}
	for _, k := range codec.AllCapabilities() {
		if got := caps.Get(k); got != want[k] {
			t.Errorf("%s = %q, want %q", k, got, want[k])
		}
		ev := caps.Evidence[k]
		if ev.Endpoint != "POST /api/chat" ||
			ev.DocumentationURL != "https://github.com/ollama/ollama/blob/main/docs/api.md#generate-a-chat-completion" ||
			ev.InspectedOn != "2026-10-17" || ev.Basis == "" {
			t.Errorf("%s evidence = %+v", k, ev)
		}
	}
	if len(caps.Values) != len(codec.AllCapabilities()) || len(caps.Evidence) != len(codec.AllCapabilities()) {
		t.Errorf("declared %d values and %d evidence entries, want %d", len(caps.Values), len(caps.Evidence), len(codec.AllCapabilities()))
	}

	// The result is the caller's: changing it changes no later declaration.
	caps.Values[codec.ClientAbort] = codec.Supported
	delete(caps.Evidence, codec.Idempotency)
	if again := c.Capabilities(); again.Get(codec.ClientAbort) != codec.Unknown || again.Validate() != nil {
		t.Error("mutating a returned Capabilities changed the codec's declaration")
	}
}
