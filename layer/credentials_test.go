package layer_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/recourse-dev/recourse/layer"
)

// The credential headers are one list (R20.1, R21.3): the fallback layer
// keeps them from another upstream, the proxy tells accounts apart by them
// and a per-credential quota keys on the first API key header that is set.
// Each call returns a copy.
func TestR20_1_CredentialHeadersAreOneList(t *testing.T) {
	t.Parallel()
	assert.Equal(t, []string{"Authorization", "Api-Key", "X-Api-Key", "X-Goog-Api-Key", "Cookie"}, layer.CredentialHeaders())
	assert.Equal(t, []string{"Authorization", "Api-Key", "X-Api-Key", "X-Goog-Api-Key"}, layer.APIKeyHeaders())
	h := layer.CredentialHeaders()
	h[0] = "changed"
	k := layer.APIKeyHeaders()
	k[0] = "changed"
	assert.Equal(t, "Authorization", layer.CredentialHeaders()[0])
	assert.Equal(t, "Authorization", layer.APIKeyHeaders()[0])
	assert.Len(t, append(layer.APIKeyHeaders(), "x"), 5)
	assert.Equal(t, "Cookie", layer.CredentialHeaders()[4], "appending to APIKeyHeaders' result never reaches the list")
}
