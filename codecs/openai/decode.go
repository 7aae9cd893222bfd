package openai

import (
	"encoding/json"

	"github.com/recourse-dev/recourse/chat"
	"github.com/recourse-dev/recourse/codec"
	"github.com/recourse-dev/recourse/codecs/internal/jsonscan"
	"github.com/recourse-dev/recourse/codecs/internal/openaiwire"
)

// Describe reads the model and operation of an encoded request body:
// streaming when "stream" is true, structured when response_format has type
// json_schema or json_object, ordinary otherwise. A body that is not a JSON
// object, or whose model, stream or response_format has the wrong type, is
// a *[codec.ProtocolError]. Describe is safe for concurrent use.
func (c *Codec) Describe(body []byte) (codec.RequestInfo, error) {
	if info, ok := fastDescribe(body); ok {
		return info, nil
	}
	return describe(body)
}

// describe is the reference implementation of Describe: it handles every
// body, and fastDescribe returns what it returns, only for fewer bodies.
func describe(body []byte) (codec.RequestInfo, error) {
	o, err := openaiwire.ParseObject(body, "request")
	if err != nil {
		return codec.RequestInfo{}, err
	}
	model, stream, err := openaiwire.RequestHead(o)
	if err != nil {
		return codec.RequestInfo{}, err
	}
	var (
		format openaiwire.Object
		typ    string
	)
	if err := o.Get("response_format", &format); err != nil {
		return codec.RequestInfo{}, openaiwire.ProtocolError("request response_format is not an object", err)
	}
	if err := format.Get("type", &typ); err != nil {
		return codec.RequestInfo{}, openaiwire.ProtocolError("request response_format type is not a string", err)
	}
	return codec.RequestInfo{Model: model, Operation: openaiwire.Operation(stream, typ)}, nil
}

// Decode decodes a complete 2xx response body. A body with a top-level
// error (an "error" value other than null, or vLLM's {"object":"error"}) is
// a *[codec.ProviderError]. A body that is not valid UTF-8, not a JSON
// object, nested deeper than the observer scans (512 levels), has no
// choices[0].message, or whose fields have the wrong types is a
// *[codec.ProtocolError]. Otherwise Decode returns the assistant message
// of choices[0] with its finish reason, the model, the completion ID and
// the usage (nil when the body has none). Tool-call arguments that are a
// string holding valid JSON are kept as that JSON, other strings as a JSON
// string, and other values as sent. Decode never returns both a completion
// and an error, and is safe for concurrent use.
func (c *Codec) Decode(body []byte) (*chat.Completion, error) { return dialect.Decode(body) }

// Check returns the error Decode returns for body, nil when Decode would
// succeed, without building the completion (codec.Checker): the engine
// calls it for a drop-in call whose decoded completion nobody reads. It is
// safe for concurrent use.
func (c *Codec) Check(body []byte) error { return dialect.Check(body) }

var _ codec.Checker = (*Codec)(nil)

// ErrorCode returns error.code of an error body when it is a string, or the
// top-level code of a vLLM error body ({"object":"error"}) when that is a
// string, as sent; otherwise "". An error body that is a JSON array, as
// Gemini's OpenAI-compatible endpoint sends ([{"error":{…}}]), is read by
// its first element: its string code, else its google.rpc status
// ("RESOURCE_EXHAUSTED", R23.7). It never falls back to error.type, accepts
// any bytes without panicking, and is safe for concurrent use.
func (c *Codec) ErrorCode(body []byte) string {
	if t := jsonscan.TrimSpace(body); len(t) > 0 && t[0] == '[' && jsonscan.Valid(t) {
		els := jsonscan.ArrayElements(t)
		if first, ok := els.Next(); ok && len(first) > 0 && first[0] == '{' {
			if code := dialect.ErrorCode(first); code != "" {
				return code
			}
			// Gemini's google.rpc.Status: a numeric code and a status.
			var st struct {
				Error *struct {
					Status string `json:"status"`
				} `json:"error"`
			}
			if json.Unmarshal(first, &st) == nil && st.Error != nil {
				return st.Error.Status
			}
		}
		return ""
	}
	return dialect.ErrorCode(body)
}
