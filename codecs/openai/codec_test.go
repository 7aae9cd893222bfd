package openai_test

import (
	"testing"

	"github.com/recourse-dev/recourse/codec"
	"github.com/recourse-dev/recourse/codecs/openai"
)

func TestProviderAndPath(t *testing.T) {
	t.Parallel()
	c := openai.New()
	if got := c.Provider(); got != codec.OpenAI {
		t.Errorf("Provider = %q, want %q", got, codec.OpenAI)
	}
	if got := c.Path(); got != "/v1/chat/completions" {
		t.Errorf("Path = %q, want /v1/chat/completions", got)
	}
}

// TestR15_2_Capabilities checks the five declared values and their evidence.
func TestR15_2_Capabilities(t *testing.T) {
	t.Parallel()
	caps := openai.New().Capabilities()
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
	if len(caps.Values) != len(want) || len(caps.Evidence) != len(want) {
		t.Errorf("declared %d values and %d evidence entries, want %d each", len(caps.Values), len(caps.Evidence), len(want))
	}
	bases := map[string]bool{}
	for k, v := range want {
		if got := caps.Get(k); got != v {
			t.Errorf("%s = %q, want %q", k, got, v)
		}
		ev := caps.Evidence[k]
		if ev.Endpoint != "POST /v1/chat/completions" ||
			ev.DocumentationURL != "https://platform.openai.com/docs/api-reference/chat/create" ||
			ev.InspectedOn != "2026-10-17" {
			t.Errorf("%s evidence = %+v", k, ev)
		}
		if bases[ev.Basis] {
			t.Errorf("%s basis is shared with another capability: %q", k, ev.Basis)
		}
		bases[ev.Basis] = true
	}
}

// TestR15_2_CapabilitiesAreFreshCopies checks that a caller modifying the
// returned maps cannot change the codec's declaration.
func TestR15_2_CapabilitiesAreFreshCopies(t *testing.T) {
	t.Parallel()
	c := openai.New()
	caps := c.Capabilities()
	caps.Values[codec.Idempotency] = codec.Supported
	delete(caps.Evidence, codec.ClientAbort)
	again := c.Capabilities()
	if again.Get(codec.Idempotency) != codec.Unsupported {
		t.Errorf("Idempotency = %q after a caller modified an earlier result", again.Get(codec.Idempotency))
	}
	if err := again.Validate(); err != nil {
		t.Errorf("Validate after a caller modified an earlier result: %v", err)
	}
}
