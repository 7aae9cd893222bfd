// Package request holds what the Ollama, oMLX and Gemini codecs share about
// a request body: the errors their Encode returns, which name the provider
// and never a value, the encoding of the wire struct and the check of a raw
// JSON object it embeds, and the first reading of an encoded body in
// Describe.
package request

import (
	"bytes"
	"encoding/json"
	"errors"

	"github.com/recourse-dev/recourse/chat"
	"github.com/recourse-dev/recourse/codec"
	"github.com/recourse-dev/recourse/codecs/internal/bodyscan"
	"github.com/recourse-dev/recourse/codecs/internal/jsonscan"
)

// Errors makes the encoding errors of the codec of Provider. The zero value
// names no provider; an Errors is a value, safe for concurrent use.
type Errors struct {
	// Provider names the codec in every error.
	Provider codec.Provider
}

// Plain returns the plain error "recourse: <provider>: what". what names
// the offending part of the request by field name and index, never by
// value.
func (e Errors) Plain(what string) error {
	return errors.New("recourse: " + string(e.Provider) + ": " + what)
}

// Unsupported returns the *codec.UnsupportedError for a control the
// provider does not take (R14.1).
func (e Errors) Unsupported(control string) error {
	return &codec.UnsupportedError{Provider: e.Provider, Control: control}
}

// Check returns the plain error "request is nil" for a nil req and
// "request has no model" for one without a model, and nil otherwise: what
// Encode refuses before it reads anything else.
func (e Errors) Check(req *chat.Request) error {
	switch {
	case req == nil:
		return e.Plain("request is nil")
	case req.Model == "":
		return e.Plain("request has no model")
	}
	return nil
}

// Marshal encodes v, a request's wire struct, without HTML escaping, so that
// text such as "<think>" travels as written, and without a trailing
// newline; encoding/json compacts embedded raw JSON. Its error is the plain
// "request cannot be encoded as JSON", never encoding/json's, which may
// quote values (unreachable for a request Encode validated).
func (e Errors) Marshal(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, e.Plain("request cannot be encoded as JSON")
	}
	return bytes.TrimSuffix(b.Bytes(), []byte{'\n'}), nil
}

// IsJSONObject reports whether raw is valid JSON whose value is an object:
// what a codec requires of tool parameters, tool arguments and a schema
// before it embeds them.
func IsJSONObject(raw []byte) bool {
	t := jsonscan.TrimSpace(raw)
	return len(t) > 0 && t[0] == '{' && json.Valid(raw)
}

// Head is what Describe reads of every request body: embedded in the
// struct Decode decodes into, it takes the "model" and "stream" members.
type Head struct {
	// Model is the "model" member; "" when it is absent or null.
	Model string `json:"model"`
	// Stream is the "stream" member; nil when it is absent or null.
	Stream *bool `json:"stream"`
}

// Decode decodes an encoded request body into v, a pointer to the struct
// of the members Describe reads (usually embedding a Head). A body that is not one JSON object
// (optionally surrounded by white space) is bodyscan.CheckObject's
// *codec.ProtocolError, and one whose members do not fit v the
// *codec.ProtocolError "request does not match the <schema> schema".
func Decode(body []byte, v any, schema string) error {
	if err := bodyscan.CheckObject(body); err != nil {
		return err
	}
	if err := json.Unmarshal(body, v); err != nil {
		return &codec.ProtocolError{What: "request does not match the " + schema + " schema", Err: err}
	}
	return nil
}
