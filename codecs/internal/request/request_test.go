package request

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/recourse-dev/recourse/chat"
	"github.com/recourse-dev/recourse/codec"
)

// The Ollama and oMLX codecs refuse a request with errors that name their
// provider and never a value, and a control they do not take with an
// *codec.UnsupportedError (R14.1).
func TestR14_1_ErrorsNameTheProvider(t *testing.T) {
	t.Parallel()
	e := Errors{Provider: codec.Ollama}
	require.EqualError(t, e.Plain("tool 2 has no name"), "recourse: ollama: tool 2 has no name")
	require.EqualError(t, e.Check(nil), "recourse: ollama: request is nil")
	require.EqualError(t, e.Check(&chat.Request{}), "recourse: ollama: request has no model")
	require.NoError(t, e.Check(&chat.Request{Model: "m"}))
	var ue *codec.UnsupportedError
	require.ErrorAs(t, Errors{Provider: codec.OMLX}.Unsupported("Seed"), &ue)
	assert.Equal(t, codec.UnsupportedError{Provider: codec.OMLX, Control: "Seed"}, *ue)
}

// Describe of both codecs refuses a body that is not one JSON object, or
// whose members do not fit what it reads, with a *codec.ProtocolError
// (R14.1).
func TestR14_1_DecodeRefusesWhatIsNotARequest(t *testing.T) {
	t.Parallel()
	var d struct {
		Head
		Format string `json:"format"`
	}
	require.NoError(t, Decode([]byte(" {\"model\":\"m\",\"stream\":false} "), &d, "/api/chat"))
	assert.Equal(t, "m", d.Model)
	require.NotNil(t, d.Stream)
	assert.False(t, *d.Stream)
	for body, want := range map[string]string{
		``:                 "body is empty",
		`[1]`:              "body is not a JSON object",
		`{`:                "body is not valid JSON",
		`{"model":1}`:      "request does not match the /api/chat schema",
		`{"stream":"yes"}`: "request does not match the /api/chat schema",
	} {
		err := Decode([]byte(body), &d, "/api/chat")
		var pe *codec.ProtocolError
		require.ErrorAs(t, err, &pe, body)
		assert.Equal(t, want, pe.What, body)
	}
}

// Marshal keeps HTML characters as written, drops encoding/json's newline
// and compacts embedded raw JSON; a value encoding/json cannot encode is the
// plain error that names the provider and no value.
func TestMarshal(t *testing.T) {
	t.Parallel()
	e := Errors{Provider: codec.Gemini}
	b, err := e.Marshal(struct {
		Text string          `json:"text"`
		Args json.RawMessage `json:"args"`
	}{"<think>&", json.RawMessage(`{ "a" : [1, 2] }`)})
	require.NoError(t, err)
	assert.Equal(t, `{"text":"<think>&","args":{"a":[1,2]}}`, string(b))
	_, err = e.Marshal(map[string]any{"secret": func() {}})
	require.EqualError(t, err, "recourse: gemini: request cannot be encoded as JSON")
}

// IsJSONObject accepts exactly a valid JSON document whose value is an
// object, white space around it allowed.
func TestIsJSONObject(t *testing.T) {
	t.Parallel()
	for doc, want := range map[string]bool{
		`{}`: true, ` {"a":1} `: true, "\n{\"a\":{\"b\":[]}}\t": true,
		``: false, `[]`: false, `null`: false, `"{}"`: false, `{"a":}`: false, `{} {}`: false, `{`: false,
	} {
		assert.Equal(t, want, IsJSONObject([]byte(doc)), "%q", doc)
	}
}
