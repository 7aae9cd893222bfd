package proxy

import (
	"encoding/hex"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/recourse-dev/recourse/layer"
	"github.com/recourse-dev/recourse/recoursetest"
)

const (
	heldKey   = "sk-held-upstream-key-31d7"
	teamKey   = "rp-team-key-a5e0"
	narrowKey = "rp-narrow-key-77b1"
)

func withKeys(c *Config) {
	c.UpstreamKey = heldKey
	c.ClientKeys = []ClientKey{
		{Hash: HashKey(teamKey), Name: "team"},
		{Hash: HashKey(narrowKey), Name: "narrow", Routes: []string{RouteCompletions, "/v1/models"}},
	}
}

// R21.12: with client keys, a request without a key or with an unknown one
// is answered 401 in the wire's error document, X-Should-Retry: false, and
// nothing reaches the upstream; a known key is admitted, its key removed
// and the held upstream key sent in its place.
func TestR21_12_ClientKeysAdmitOnlyKnownKeys(t *testing.T) {
	for _, c := range []struct{ provider, path, body, shape string }{
		{"openai", "/v1/chat/completions", chatBody, `{"error":{"message":`},
		{"ollama", "/api/chat", ollamaBody, `{"error":"`},
	} {
		t.Run(c.provider, func(t *testing.T) {
			ok := recoursetest.JSON(200, recoursetest.OpenAIChat("hi"))
			if c.provider == "ollama" {
				ok = recoursetest.JSON(200, recoursetest.OllamaChat("hi"))
			}
			r := newRig(t, c.provider, withKeys, ok)
			for _, auth := range [][]string{nil, {"Authorization", "Bearer sk-provider-key"}, {"Authorization", "Bearer " + teamKey + "x"}, {"Authorization", teamKey}} {
				got := r.post(t, c.path, c.body, auth...)
				assert.Equal(t, http.StatusUnauthorized, got.status, auth)
				assert.True(t, strings.HasPrefix(got.body, c.shape), got.body)
				assert.Contains(t, got.body, "proxy key")
				assert.Equal(t, "false", got.header.Get("X-Should-Retry"))
			}
			assert.Zero(t, r.up.Count(), "nothing reached the upstream")
			got := r.post(t, c.path, c.body, "Authorization", "Bearer "+teamKey)
			require.Equal(t, http.StatusOK, got.status, got.body)
			require.Equal(t, 1, r.up.Count())
			assert.Equal(t, "Bearer "+heldKey, r.up.Requests()[0].Header.Get("Authorization"), "the held key, never the client's")
			r.logged(t, `"client":"team"`)
			logs := r.logs.String()
			assert.Contains(t, logs, `"kind":"refused","method":"POST","path":"`+c.path+`","status":401`)
			assert.NotContains(t, logs, heldKey)
			assert.NotContains(t, logs, teamKey)
		})
	}
}

// R21.12: a key's routes bound what it reaches: an endpoint name or a path
// prefix; any other request is answered 403 and nothing is sent.
func TestR21_12_KeyRoutesBoundWhatAKeyReaches(t *testing.T) {
	r := newRig(t, "openai", withKeys,
		recoursetest.JSON(200, recoursetest.OpenAIChat("hi")), recoursetest.JSON(200, `{"data":[]}`))
	auth := []string{"Authorization", "Bearer " + narrowKey}
	assert.Equal(t, http.StatusOK, r.post(t, "/v1/chat/completions", chatBody, auth...).status)
	assert.Equal(t, http.StatusOK, r.do(t, http.MethodGet, "/v1/models", "", auth...).status, "the prefix allows it")
	for _, c := range []struct{ method, path, body string }{
		{http.MethodPost, "/v1/responses", `{"model":"gpt-4o-mini","input":"hi"}`},
		{http.MethodGet, "/v1/files", ""},
	} {
		got := r.do(t, c.method, c.path, c.body, auth...)
		assert.Equal(t, http.StatusForbidden, got.status, c.path)
		assert.Contains(t, got.body, "route_not_allowed")
		assert.Equal(t, "false", got.header.Get("X-Should-Retry"))
	}
	assert.Equal(t, 2, r.up.Count(), "the refused requests were not sent")
	// A key without routes reaches everything.
	r.up.Push(recoursetest.JSON(200, `{}`))
	assert.Equal(t, http.StatusOK, r.do(t, http.MethodGet, "/v1/files", "", "Authorization", "Bearer "+teamKey).status)
}

// R21.12: a held key replaces the client's on forwarded requests too; GET
// /healthz needs no key.
func TestR21_12_HeldKeyOnEveryUpstreamRequest(t *testing.T) {
	r := newRig(t, "openai", func(c *Config) { c.UpstreamKey = heldKey },
		recoursetest.JSON(200, recoursetest.OpenAIChat("hi")), recoursetest.JSON(200, `{"data":[]}`))
	r.post(t, "/v1/chat/completions", chatBody, "Authorization", "Bearer sk-client")
	r.do(t, http.MethodGet, "/v1/models", "", "Authorization", "Bearer sk-client")
	require.Equal(t, 2, r.up.Count())
	for _, q := range r.up.Requests() {
		assert.Equal(t, "Bearer "+heldKey, q.Header.Get("Authorization"), q.Path)
	}
	k := newRig(t, "openai", withKeys)
	assert.Equal(t, http.StatusOK, k.do(t, http.MethodGet, "/healthz", "").status)
}

// R21.12: without held keys the client's key passes through as it is.
func TestR21_12_WithoutKeysTheClientKeyPassesThrough(t *testing.T) {
	r := newRig(t, "openai", nil, recoursetest.JSON(200, recoursetest.OpenAIChat("hi")))
	r.post(t, "/v1/chat/completions", chatBody, "Authorization", "Bearer sk-client")
	assert.Equal(t, "Bearer sk-client", r.up.Requests()[0].Header.Get("Authorization"))
}

// R21.12: a file of client keys holds hashes, names and routes; its errors
// name the line, never its text.
func TestR21_12_ParseClientKeys(t *testing.T) {
	h := HashKey(teamKey)
	hx := hex.EncodeToString(h[:])
	n := HashKey(narrowKey)
	nx := hex.EncodeToString(n[:])
	keys, err := ParseClientKeys(strings.NewReader("# keys\n\n" + hx + " team\n" + nx + " narrow completions,/v1/models\n"))
	require.NoError(t, err)
	assert.Equal(t, []ClientKey{{Hash: h, Name: "team"}, {Hash: n, Name: "narrow", Routes: []string{"completions", "/v1/models"}}}, keys)
	for _, c := range []struct{ in, want string }{
		{"", "holds no key"},
		{teamKey + "\n", "line 1: the first field is not a SHA-256"},
		{hx + " a\n" + hx + " b\n", "line 2: the same hash"},
		{hx + " a Chat!\n", `line 1: route "Chat!" is not`},
		{hx + " a b c d\n", "line 1: 5 fields"},
	} {
		_, err := ParseClientKeys(strings.NewReader(c.in))
		require.Error(t, err, c.in)
		assert.Contains(t, err.Error(), c.want)
		assert.NotContains(t, err.Error(), teamKey)
	}
	_, err = New(Config{Provider: "openai", Upstream: "https://api.openai.com", ClientKeys: []ClientKey{}})
	var ce *ConfigError
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, "ClientKeys", ce.Field)
	// A route spelled as a route's name parses, but a Handler of its own
	// has no routes of that name.
	_, err = New(Config{Provider: "openai", Upstream: "https://api.openai.com", ClientKeys: []ClientKey{{Hash: h, Routes: []string{"chat"}}}})
	require.ErrorAs(t, err, &ce)
	assert.Contains(t, ce.Problem, `"chat" that is no route of this proxy`)
}

func FuzzParseClientKeys(f *testing.F) {
	h := HashKey(teamKey)
	hx := hex.EncodeToString(h[:])
	f.Add(hx + " team\n")
	f.Add("# c\n" + hx + " n completions,/v1/\n")
	f.Add("zz\n")
	f.Add(hx + " a b c d")
	f.Fuzz(func(t *testing.T, in string) {
		keys, err := ParseClientKeys(strings.NewReader(in))
		if err != nil {
			if keys != nil {
				t.Fatal("keys with an error")
			}
			return
		}
		if len(keys) == 0 {
			t.Fatal("no keys and no error")
		}
		for _, k := range keys {
			for _, rt := range k.Routes {
				if checkRoute(rt) != nil {
					t.Fatalf("route %q accepted", rt)
				}
			}
		}
	})
}

// R21.12: a held key goes upstream in the wire's own header (Authorization:
// Bearer for openai, x-api-key for anthropic, x-goog-api-key for gemini),
// on the recovered path and a forwarded one alike, and no credential the
// client sent reaches the upstream: not one of the credential headers,
// not Gemini's key query parameter.
func TestR21_12_HeldKeyUsesTheWiresHeader(t *testing.T) {
	const clientKey = "sk-client-own-key-6c2f"
	for _, c := range []struct {
		provider, recovered, body, forwarded, header, value string
		ok                                                  string
	}{
		{"openai", "/v1/chat/completions", chatBody, "/v1/models", "Authorization", "Bearer " + heldKey, recoursetest.OpenAIChat("hi")},
		{"anthropic", "/v1/messages", claudeBody, "/v1/models", "X-Api-Key", heldKey, recoursetest.AnthropicMessage("hi")},
		{"gemini", "/v1beta/models/gemini-2.5-flash:generateContent?key=" + clientKey, geminiBody, "/v1beta/models?pageSize=5&key=" + clientKey, "X-Goog-Api-Key", heldKey, recoursetest.GeminiChat("hi")},
	} {
		t.Run(c.provider, func(t *testing.T) {
			r := newRig(t, c.provider, func(cfg *Config) { cfg.UpstreamKey = heldKey },
				recoursetest.JSON(200, c.ok), recoursetest.JSON(200, `{}`))
			var auth []string
			for _, name := range layer.CredentialHeaders() {
				v := clientKey
				if name == "Authorization" {
					v = "Bearer " + clientKey
				}
				auth = append(auth, name, v)
			}
			if c.provider == "anthropic" {
				auth = append(auth, "Anthropic-Version", "2023-06-01") // as Claude's clients send it
			}
			require.Equal(t, http.StatusOK, r.post(t, c.recovered, c.body, auth...).status)
			require.Equal(t, http.StatusOK, r.do(t, http.MethodGet, c.forwarded, "", auth...).status)
			require.Equal(t, 2, r.up.Count())
			for _, q := range r.up.Requests() {
				assert.Equal(t, []string{c.value}, q.Header.Values(c.header), q.Path)
				for _, name := range layer.CredentialHeaders() {
					if name != c.header {
						assert.Empty(t, q.Header.Values(name), "%s %s", q.Path, name)
					}
				}
				for name, vs := range q.Header {
					for _, v := range vs {
						assert.NotContains(t, v, clientKey, "%s %s", q.Path, name)
					}
				}
				assert.NotContains(t, q.RawQuery, clientKey, q.Path)
				assert.NotContains(t, q.RawQuery, "key=", q.Path)
				if c.provider == "anthropic" {
					assert.Equal(t, "2023-06-01", q.Header.Get("Anthropic-Version"), "left as the client sent it")
				}
			}
			if c.provider == "gemini" {
				assert.Equal(t, "pageSize=5", r.up.Requests()[1].RawQuery, "the other parameters pass")
			}
			assert.NotContains(t, r.logs.String(), heldKey)
			assert.NotContains(t, r.logs.String(), clientKey)
		})
	}
}
