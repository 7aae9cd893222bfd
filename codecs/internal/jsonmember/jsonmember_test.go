package jsonmember_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/recourse-dev/recourse/codecs/internal/jsonmember"
)

func TestSetStringReplacesOnlyTheTopLevelMember(t *testing.T) {
	doc := []byte(`{ "messages":[{"model":"inner","content":"model"}],  "model" : "gpt-4o", "stream":true}`)
	out, err := jsonmember.SetString(doc, "model", "gpt-4o-mini")
	require.NoError(t, err)
	assert.Equal(t, `{ "messages":[{"model":"inner","content":"model"}],  "model" : "gpt-4o-mini", "stream":true}`, string(out))
	assert.Contains(t, string(doc), `"gpt-4o"`, "the input is not modified")
}

func TestSetStringAddsAMissingMember(t *testing.T) {
	out, err := jsonmember.SetString([]byte(`{"a":1}`), "model", `q"x`)
	require.NoError(t, err)
	assert.JSONEq(t, `{"model":"q\"x","a":1}`, string(out))
	out, err = jsonmember.SetString([]byte(` { } `), "model", "m")
	require.NoError(t, err)
	assert.JSONEq(t, `{"model":"m"}`, string(out))
}

func TestSetStringRefusesWhatIsNotOneObject(t *testing.T) {
	for _, doc := range []string{``, `[]`, `"x"`, `{"a":`, `{"a":1}{}`, `{"a" 1}`, `{1:2}`} {
		_, err := jsonmember.SetString([]byte(doc), "model", "m")
		assert.ErrorIs(t, err, jsonmember.ErrNotObject, doc)
	}
}
