package anthropic_test

import (
	"testing"

	"github.com/recourse-dev/recourse/codecs/anthropic"
	"github.com/recourse-dev/recourse/layer"
)

func TestR22_8_CapabilitiesWithEvidence(t *testing.T) {
	caps := anthropic.New().Capabilities()
	if err := caps.Validate(); err != nil {
		t.Fatal(err)
	}
	want := map[layer.Capability]layer.Support{
		layer.ClientAbort: layer.Unknown, layer.RequestCancellation: layer.Unsupported, layer.RequestStatus: layer.Unsupported,
		layer.Idempotency: layer.Unsupported, layer.ExactAttemptTermination: layer.Unknown,
	}
	for k, v := range want {
		if caps.Get(k) != v {
			t.Errorf("%s = %s, want %s", k, caps.Get(k), v)
		}
		if ev := caps.Evidence[k]; ev.Endpoint != "POST /v1/messages" || ev.InspectedOn != "2026-12-02" {
			t.Errorf("%s evidence %+v", k, ev)
		}
	}
	caps.Values[layer.ClientAbort] = layer.Supported
	if anthropic.New().Capabilities().Get(layer.ClientAbort) != layer.Unknown {
		t.Error("Capabilities shares its maps")
	}
}

func TestR22_1_FactsDeclareTheOverloadStatus(t *testing.T) {
	f := anthropic.New().Facts()
	if f != (layer.Facts{OverloadStatus: 529}) {
		t.Errorf("Facts = %+v", f)
	}
	if anthropic.New().Provider() != layer.Anthropic || anthropic.New().Path() != "/v1/messages" {
		t.Error("provider or path")
	}
}
