package omlx_test

import (
	"testing"

	"github.com/recourse-dev/recourse/codec"
	"github.com/recourse-dev/recourse/codecs/omlx"
)

func TestR15_2_OMLXCapabilities(t *testing.T) {
	t.Parallel()
	c := omlx.New()
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
		if ev.Endpoint != "POST /v1/chat/completions" ||
			ev.DocumentationURL != "https://github.com/jundot/omlx#api-compatibility" ||
			ev.InspectedOn != "2026-10-17" || ev.Basis == "" {
			t.Errorf("%s evidence = %+v", k, ev)
		}
	}
	if len(caps.Values) != len(codec.AllCapabilities()) || len(caps.Evidence) != len(codec.AllCapabilities()) {
		t.Errorf("declared %d values and %d evidence entries, want %d", len(caps.Values), len(caps.Evidence), len(codec.AllCapabilities()))
	}
	caps.Values[codec.ClientAbort] = codec.Supported
	delete(caps.Evidence, codec.Idempotency)
	if again := c.Capabilities(); again.Get(codec.ClientAbort) != codec.Unknown || again.Validate() != nil {
		t.Error("mutating a returned Capabilities changed the codec's declaration")
	}
}
