package openaiwire

import (
	"encoding/json"
	"errors"

	"github.com/recourse-dev/recourse/chat"
	"github.com/recourse-dev/recourse/codec"
)

// Object is a decoded JSON object whose keys are matched exactly, after
// unescaping. Decoding into structs would also match keys case-insensitively
// ("Content" for "content"), which the observers do not count. The request
// readers of the chat completions and Responses codecs and the Responses
// decoders read bodies through it. A nil Object has no members. An Object
// is a map: safe for concurrent reads, not for writes.
type Object map[string]json.RawMessage

// Has reports whether key is present with a value other than null.
func (o Object) Has(key string) bool {
	v, ok := o[key]
	return ok && !IsNull(v)
}

// Get decodes the value at key into v with encoding/json. An absent key or
// null leaves v unchanged and returns nil; a value of another type than v
// is encoding/json's error.
func (o Object) Get(key string, v any) error {
	raw, ok := o[key]
	if !ok || IsNull(raw) {
		return nil
	}
	return json.Unmarshal(raw, v)
}

// Str returns the value at key when it is a string, else "".
func (o Object) Str(key string) string {
	var s string
	if o.Get(key, &s) != nil {
		return ""
	}
	return s
}

// IsNull reports whether raw is the JSON literal null, as encoding/json
// leaves it in a json.RawMessage (no surrounding white space).
func IsNull(raw json.RawMessage) bool { return string(raw) == "null" }

// ProtocolError returns a *codec.ProtocolError with the safe description
// what; err is its cause, and a nil err is an error whose text is what.
func ProtocolError(what string, err error) error {
	if err == nil {
		err = errors.New(what)
	}
	return &codec.ProtocolError{What: what, Err: err}
}

// ParseObject decodes b as one JSON object. A b that is valid JSON but not
// an object is the *codec.ProtocolError "<noun> is not a JSON object", and
// one that is not valid JSON "<noun> is not valid JSON". The JSON null
// yields a nil Object and no error.
func ParseObject(b []byte, noun string) (Object, error) {
	var o Object
	if err := json.Unmarshal(b, &o); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return nil, ProtocolError(noun+" is not a JSON object", err)
		}
		return nil, ProtocolError(noun+" is not valid JSON", err)
	}
	return o, nil
}

// ParseDocument decodes b, a whole request or response body, as one JSON
// object, as ParseObject does, except that the JSON null is also the
// *codec.ProtocolError "<noun> is not a JSON object": a body must be an
// object, so the Object it returns is never nil.
func ParseDocument(b []byte, noun string) (Object, error) {
	o, err := ParseObject(b, noun)
	if err == nil && o == nil {
		err = ProtocolError(noun+" is not a JSON object", nil)
	}
	return o, err
}

// DocumentError reads doc, the plain JSON document a provider answered a
// streaming request with in place of an event stream (sse.Front.Document),
// as a response object and returns the provider error read reads from it,
// or nil when doc is not a JSON object or read finds none: what a stream
// decoder's End reports before it calls the stream incomplete.
func DocumentError(doc []byte, read func(top Object) *codec.ProviderError) *codec.ProviderError {
	top, err := ParseObject(doc, "response")
	if err != nil {
		return nil
	}
	return read(top)
}

// CopyPtr returns a pointer to a copy of *p, or nil when p is nil, so that
// an encoded request never aliases the chat.Request it was made from.
func CopyPtr[T any](p *T) *T {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}

// Control is a generation control an endpoint may refuse: its name in an
// *codec.UnsupportedError and whether the request sets it.
type Control struct {
	// Name names the control, for example "Seed".
	Name string
	// Set reports whether the request sets it.
	Set bool
}

// CheckSampling returns the error for the first control of o that an
// OpenAI endpoint does not take (R14.1), in this order: TopK; each of
// refused, in order, that is set; ContextLength, Think and KeepAlive; a
// Temperature or TopP that is not finite (d.Finite's plain error); then
// what the family of model does not take (CheckReasoning), asking
// isReasoning about model once, only when the earlier checks pass. A
// refused control is an *codec.UnsupportedError naming d.Provider.
// reasoning is what isReasoning answered (false when it was not asked).
func (d *Dialect) CheckSampling(o *chat.Options, isReasoning func(model string) bool, model string, refused ...Control) (reasoning bool, err error) {
	if o.TopK != nil {
		return false, d.unsupported("TopK")
	}
	for _, c := range refused {
		if c.Set {
			return false, d.unsupported(c.Name)
		}
	}
	switch {
	case o.ContextLength != nil:
		return false, d.unsupported("ContextLength")
	case o.Think != nil:
		return false, d.unsupported("Think")
	case o.KeepAlive != "":
		return false, d.unsupported("KeepAlive")
	}
	if err := d.Finite(o); err != nil {
		return false, err
	}
	reasoning = isReasoning(model)
	return reasoning, d.CheckReasoning(o, reasoning)
}

// unsupported returns the *codec.UnsupportedError for control.
func (d *Dialect) unsupported(control string) error {
	return &codec.UnsupportedError{Provider: d.Provider, Control: control}
}

// CheckReasoning returns the *codec.UnsupportedError (naming d.Provider)
// for the controls of o that an OpenAI model of its family does not take
// (R14.1): a reasoning model takes no Temperature or TopP, in that order,
// and no ReasoningEffort other than "", "low", "medium" or "high"; any
// other model takes no ReasoningEffort. It returns nil otherwise. Which
// model is a reasoning model is the caller's detection.
func (d *Dialect) CheckReasoning(o *chat.Options, reasoning bool) error {
	control := ""
	switch {
	case !reasoning:
		if o.ReasoningEffort != "" {
			control = "ReasoningEffort with non-reasoning models"
		}
	case o.Temperature != nil:
		control = "Temperature with reasoning models"
	case o.TopP != nil:
		control = "TopP with reasoning models"
	default:
		switch o.ReasoningEffort {
		case "", "low", "medium", "high":
		default:
			control = "ReasoningEffort other than low, medium or high"
		}
	}
	if control == "" {
		return nil
	}
	return d.unsupported(control)
}

// ParseRequest reads an encoded request body that must be one JSON object
// (ParseDocument's errors, noun "request") and its "model" and "stream"
// members (RequestHead's errors): the start of the Anthropic and Responses
// codecs' Describe.
func ParseRequest(body []byte) (o Object, model string, stream bool, err error) {
	if o, err = ParseDocument(body, "request"); err != nil {
		return nil, "", false, err
	}
	if model, stream, err = RequestHead(o); err != nil {
		return nil, "", false, err
	}
	return o, model, stream, nil
}

// RequestHead reads the "model" and "stream" members of the request o, in
// that order; a member of the wrong type is a *codec.ProtocolError ("request
// model is not a string", "request stream is not a boolean"). Absent or
// null members are "" and false.
func RequestHead(o Object) (model string, stream bool, err error) {
	if err := o.Get("model", &model); err != nil {
		return "", false, ProtocolError("request model is not a string", err)
	}
	if err := o.Get("stream", &stream); err != nil {
		return "", false, ProtocolError("request stream is not a boolean", err)
	}
	return model, stream, nil
}

// Operation is the operation of a request that streams when stream is
// set, and otherwise is structured when its output format has the type
// formatType "json_schema" or "json_object", and ordinary else.
func Operation(stream bool, formatType string) codec.Operation {
	switch {
	case stream:
		return codec.Streaming
	case formatType == "json_schema" || formatType == "json_object":
		return codec.Structured
	}
	return codec.Ordinary
}
