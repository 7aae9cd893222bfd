package codec_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/recourse-dev/recourse/codec"
)

// keyed is a codec that takes its key in a header of its own.
type keyed struct{ codec.Codec }

func (keyed) KeyHeader() (name, prefix string) { return "X-Key", "Token " }

// R21.12: the header a held key goes in is the codec's own KeyHeader, and
// Authorization: Bearer for a codec without one (or no codec).
func TestR21_12_AuthHeaderIsTheCodecsOwnOrBearer(t *testing.T) {
	name, prefix := codec.AuthHeader(keyed{})
	assert.Equal(t, "X-Key", name)
	assert.Equal(t, "Token ", prefix)
	name, prefix = codec.AuthHeader(struct{ codec.Codec }{})
	assert.Equal(t, "Authorization", name)
	assert.Equal(t, "Bearer ", prefix)
	name, prefix = codec.AuthHeader(nil)
	assert.Equal(t, "Authorization", name)
	assert.Equal(t, "Bearer ", prefix)
}
