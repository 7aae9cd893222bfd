// Package request holds what the Ollama and oMLX codecs share about a
// request body: the errors their Encode returns, which name the provider
// and never a value, and the first reading of an encoded body in Describe.
package request

import (
	"encoding/json"
	"errors"

	"github.com/recourse-dev/recourse/chat"
	"github.com/recourse-dev/recourse/codec"
	"github.com/recourse-dev/recourse/codecs/internal/bodyscan"
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
