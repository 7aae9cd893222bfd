package openai_test

import (
	"testing"

	"github.com/recourse-dev/recourse/codecs/openai"
	"github.com/recourse-dev/recourse/layer"
)

func TestProviderAndPath(t *testing.T) {
	t.Parallel()
	c := openai.New()
	if got := c.Provider(); got != layer.OpenAI {
		t.Errorf("Provider = %q, want %q", got, layer.OpenAI)
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
	want := map[layer.Capability]layer.Support{
		layer.ClientAbort:             layer.Unknown,
		layer.RequestCancellation:     layer.Unsupported,
		layer.RequestStatus:           layer.Unsupported,
		layer.Idempotency:             layer.Unsupported,
		layer.ExactAttemptTermination: layer.Unknown,
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
	caps.Values[layer.Idempotency] = layer.Supported
	delete(caps.Evidence, layer.ClientAbort)
	again := c.Capabilities()
	if again.Get(layer.Idempotency) != layer.Unsupported {
		t.Errorf("Idempotency = %q after a caller modified an earlier result", again.Get(layer.Idempotency))
	}
	if err := again.Validate(); err != nil {
		t.Errorf("Validate after a caller modified an earlier result: %v", err)
	}
}
