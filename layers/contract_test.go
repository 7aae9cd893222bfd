package layers_test

import (
	"testing"
	"time"

	"github.com/recourse-dev/recourse/codecs/openai"
	"github.com/recourse-dev/recourse/internal/stage/capture"
	"github.com/recourse-dev/recourse/internal/stage/progress"
	"github.com/recourse-dev/recourse/internal/stage/redirectguard"
	"github.com/recourse-dev/recourse/layer"
	"github.com/recourse-dev/recourse/layer/layertest"
	"github.com/recourse-dev/recourse/layers/retry"
	"github.com/recourse-dev/recourse/layers/sender"
	"github.com/recourse-dev/recourse/layers/stall"
)

func TestLayerContract(t *testing.T) {
	disabled, err := retry.New(openai.New(), nil)
	if err != nil {
		t.Fatal(err)
	}
	limits, err := stall.New(stall.Limits{Header: time.Minute, FirstOutput: time.Minute, Idle: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range []layer.Layer{disabled, capture.New(), progress.New(), redirectguard.New(), sender.New(nil), limits} {
		t.Run(l.Name(), func(t *testing.T) { layertest.Layer(t, l) })
	}
}
