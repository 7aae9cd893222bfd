package quota_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/recourse-dev/recourse/layers/quota"
)

// R23.4: keyed by credential, a Gemini key in the x-goog-api-key header or
// in the "key" query parameter keys the quota; two keys have two quotas,
// one key one.
func TestR23_4_QuotaByCredentialReadsTheGeminiKey(t *testing.T) {
	q := mustQuota(t, quota.ByCredential())
	a := mustURL(t, "https://generativelanguage.googleapis.com/v1beta/models/m:generateContent?key=AIza-A")
	a2 := mustURL(t, "https://generativelanguage.googleapis.com/v1beta/models/m:generateContent?alt=sse&key=AIza-A")
	b := mustURL(t, "https://generativelanguage.googleapis.com/v1beta/models/m:generateContent?key=AIza-B")
	none := mustURL(t, "https://generativelanguage.googleapis.com/v1beta/models/m:generateContent")
	assert.Same(t, q.Bind(a, "", nil), q.Bind(a2, "", nil), "one key, one quota")
	assert.NotSame(t, q.Bind(a, "", nil), q.Bind(b, "", nil), "two keys, two quotas")
	assert.NotSame(t, q.Bind(a, "", nil), q.Bind(none, "", nil))
	h := http.Header{"X-Goog-Api-Key": {"AIza-A"}}
	assert.Same(t, q.Bind(a, "", nil), q.Bind(none, "", h), "the header and the query name the same key")
}
