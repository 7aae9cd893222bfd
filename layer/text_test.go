package layer_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/recourse-dev/recourse/layer"
)

// R21.6: one delay wording for every surface.
func TestR21_6_FormatDelay(t *testing.T) {
	cases := map[time.Duration]string{
		-time.Second:             "0ms",
		0:                        "0ms",
		999 * time.Microsecond:   "0ms",
		100 * time.Millisecond:   "100ms",
		999 * time.Millisecond:   "999ms",
		time.Second:              "1.0s",
		1249 * time.Millisecond:  "1.2s",
		1250 * time.Millisecond:  "1.3s",
		2 * time.Second:          "2.0s",
		12 * time.Second:         "12.0s",
		59950 * time.Millisecond: "60.0s",
	}
	for d, want := range cases {
		assert.Equal(t, want, layer.FormatDelay(d), "%v", d)
	}
}
