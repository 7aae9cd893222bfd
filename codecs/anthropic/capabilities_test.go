package anthropic_test

import (
	"testing"

	"github.com/recourse-dev/recourse/codec"
	"github.com/recourse-dev/recourse/codecs/anthropic"
)

func TestR22_8_CapabilitiesWithEvidence(t *testing.T) {
	caps := anthropic.New().Capabilities()
	if err := caps.Validate(); err != nil {
		t.Fatal(err)
	}
	want := map[codec.Capability]codec.Support{
		codec.ClientAbort: codec.Unknown, codec.RequestCancellation: codec.Unsupported, codec.RequestStatus: codec.Unsupported,
		codec.Idempotency: codec.Unsupported, codec.ExactAttemptTermination: codec.Unknown,
	}
	for k, v := range want {
		if caps.Get(k) != v {
			t.Errorf("%s = %s, want %s", k, caps.Get(k), v)
		}
		if ev := caps.Evidence[k]; ev.Endpoint != "POST /v1/messages" || ev.InspectedOn != "2026-12-02" {
			t.Errorf("%s evidence %+v", k, ev)
		}
	}
	caps.Values[codec.ClientAbort] = codec.Supported
	if anthropic.New().Capabilities().Get(codec.ClientAbort) != codec.Unknown {
		t.Error("Capabilities shares its maps")
	}
}

func TestR22_1_FactsDeclareTheOverloadStatus(t *testing.T) {
	f := anthropic.New().Facts()
	if f != (codec.Facts{OverloadStatus: 529}) {
		t.Errorf("Facts = %+v", f)
	}
	if anthropic.New().Provider() != codec.Anthropic || anthropic.New().Path() != "/v1/messages" {
		t.Error("provider or path")
	}
}
