package openai

import (
	"bytes"
	"sync/atomic"

	"github.com/recourse-dev/recourse/codec"
	"github.com/recourse-dev/recourse/codecs/internal/jsonscan"
	"github.com/recourse-dev/recourse/codecs/internal/openaiwire"
)

// fastDescribe below reads the common shapes of a request body without
// encoding/json: one validating pass over the whole body
// (jsonscan.ValidObject, SkipValid) that records the raw values of the
// members it reads, keys compared exactly, byte for byte. It decides nothing
// itself: whenever a body is not of the common shape (a member of an
// unexpected type, an escaped key, invalid or too deeply nested JSON) it
// reports ok=false and the reference, describe in decode.go, which handles
// every body, decides. So it returns exactly what describe returns for the
// same body, only sooner (fast_test.go checks this by fuzzing). Responses
// have one decoder, openaiwire's Dialect.Decode, exact and fast alike.

// fastDescribe is the fast path of Describe.
func fastDescribe(body []byte) (codec.RequestInfo, bool) {
	var info codec.RequestInfo
	i := jsonscan.SkipSpace(body, 0)
	if i >= len(body) || body[i] != '{' {
		return info, false
	}
	var model, stream, format, typ []byte
	raw := func(dst *[]byte, v, depth int) int {
		end := jsonscan.SkipValid(body, v, depth)
		if end >= 0 {
			*dst = body[v:end]
		}
		return end
	}
	formatMember := func(key []byte, escaped bool, v int) int {
		if escaped {
			return -1
		}
		if string(key) == "type" {
			return raw(&typ, v, 2)
		}
		return jsonscan.SkipValid(body, v, 2)
	}
	end := jsonscan.ValidObject(body, i, 0, func(key []byte, escaped bool, v int) int {
		if escaped {
			return -1
		}
		switch string(key) {
		case "model":
			return raw(&model, v, 1)
		case "stream":
			return raw(&stream, v, 1)
		case "response_format":
			typ = nil
			if body[v] == '{' {
				end := jsonscan.ValidObject(body, v, 1, formatMember)
				if end >= 0 {
					format = body[v:end]
				}
				return end
			}
			return raw(&format, v, 1)
		}
		return jsonscan.SkipValid(body, v, 1)
	})
	if end < 0 || jsonscan.SkipSpace(body, end) != len(body) {
		return info, false
	}
	if !openaiwire.Absent(format) && format[0] != '{' || !openaiwire.Absent(typ) && (!openaiwire.IsString(typ) || hasEscape(typ)) {
		return info, false
	}
	switch {
	case openaiwire.Absent(stream), string(stream) == "true", string(stream) == "false":
	default:
		return info, false
	}
	var ok bool
	if info.Model, ok = requestModel(model); !ok {
		return info, false
	}
	switch {
	case string(stream) == "true":
		info.Operation = codec.Streaming
	case string(typ) == `"json_schema"` || string(typ) == `"json_object"`:
		info.Operation = codec.Structured
	default:
		info.Operation = codec.Ordinary
	}
	return info, true
}

// lastModel is the last model name requestModel decoded. The calls of one
// process mostly name the same few models, so a repeat costs no allocation.
var lastModel atomic.Pointer[string]

// requestModel is openaiwire.PlainString for a request's model: a raw
// string without escapes that spells the last model decoded returns that
// string.
func requestModel(v []byte) (string, bool) {
	if len(v) >= 2 && v[0] == '"' {
		if inner := v[1 : len(v)-1]; !hasEscape(inner) {
			if p := lastModel.Load(); p != nil && *p == string(inner) {
				return *p, true
			}
		}
	}
	s, ok := openaiwire.PlainString(v, false)
	if ok && s != "" {
		lastModel.Store(&s)
	}
	return s, ok
}

// hasEscape reports whether the raw JSON text v holds a backslash.
func hasEscape(v []byte) bool { return bytes.IndexByte(v, '\\') >= 0 }
