package layer

import "slices"

// APIKeyHeaders returns the request headers that carry a provider API key,
// in the order a per-key quota reads them: Authorization, Api-Key,
// X-Api-Key, X-Goog-Api-Key (Gemini, R23.4). Each call returns a new slice; changing it changes nothing
// else. It is safe for concurrent use.
func APIKeyHeaders() []string { return slices.Clone(credentialHeaders[:apiKeyHeaders]) }

// CredentialHeaders returns the request headers that carry a credential of
// the caller's account: the API key headers of APIKeyHeaders, then Cookie.
// A fallback target on another upstream never receives them (R20.1), and
// the proxy's memory of final answers tells callers apart by them (R21.3).
// Each call returns a new slice; changing it changes nothing else. It is
// safe for concurrent use.
func CredentialHeaders() []string { return slices.Clone(credentialHeaders) }

// credentialHeaders are the credential headers, the API key headers first.
var credentialHeaders = []string{"Authorization", "Api-Key", "X-Api-Key", "X-Goog-Api-Key", "Cookie"}

// apiKeyHeaders is how many of credentialHeaders carry an API key.
const apiKeyHeaders = 4
