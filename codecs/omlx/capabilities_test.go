package omlx_test

import (
	"testing"

	"github.com/recourse-dev/recourse/codecs/omlx"
	"github.com/recourse-dev/recourse/layer"
)

func TestR15_2_OMLXCapabilities(t *testing.T) {
	t.Parallel()
	c := omlx.New()
	caps := c.Capabilities()
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
	for _, k := range layer.AllCapabilities() {
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
	if len(caps.Values) != len(layer.AllCapabilities()) || len(caps.Evidence) != len(layer.AllCapabilities()) {
		t.Errorf("declared %d values and %d evidence entries, want %d", len(caps.Values), len(caps.Evidence), len(layer.AllCapabilities()))
	}
	caps.Values[layer.ClientAbort] = layer.Supported
	delete(caps.Evidence, layer.Idempotency)
	if again := c.Capabilities(); again.Get(layer.ClientAbort) != layer.Unknown || again.Validate() != nil {
		t.Error("mutating a returned Capabilities changed the codec's declaration")
	}
}
