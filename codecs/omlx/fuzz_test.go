package omlx_test

import (
	"errors"
	"reflect"
	"testing"

	"github.com/recourse-dev/recourse/codec"
	"github.com/recourse-dev/recourse/codecs/omlx"
)

// FuzzDecode checks that Decode never panics and returns exactly one of a
// completion and an error, the error being a *codec.ProviderError or a
// *codec.ProtocolError, and that Check returns the same error. It also runs
// the observer, ErrorCode and Describe on the same bytes, which must not
// panic either.
func FuzzDecode(f *testing.F) {
	for _, s := range []string{
		okBody,
		"   \n" + okBody,
		`{"choices":[{"message":{"content":"4","reasoning":"2+2"},"finish_reason":"stop"}]}`,
		`{"choices":[{"message":{"content":null,"tool_calls":[{"id":"a","type":"function","function":{"name":"f","arguments":"{\"a\":[1,{}]}"}}]},"finish_reason":"tool_calls"}]}`,
		`{"choices":[{"message":{"function_call":{"name":"f","arguments":"{}"}}}]}`,
		`{"choices":[{"message":{"content":"Once"},"finish_reason":"length"}],"usage":{"prompt_tokens":1,"completion_tokens":1}}`,
		`{"error":{"message":"slow down","type":"rate_limit_error","param":null,"code":"rate_limit_exceeded"}}`,
		`{"error":"boom"}`,
		`{"error":[]}`,
		`{"choices":[]}`,
		"{\"choices\":[{\"message\":{\"content\":\"\xff\"}}]}",
		``, `     `, `null`, `[]`, `{`, `{"choices":[{"message":`,
	} {
		f.Add([]byte(s))
	}
	c := omlx.New()
	f.Fuzz(func(t *testing.T, body []byte) {
		got, err := c.Decode(body)
		if (got == nil) == (err == nil) {
			t.Fatalf("Decode = %v, %v: want exactly one of completion and error", got, err)
		}
		// Check judges every body as Decode does, error for error.
		if cerr := c.Check(body); !reflect.DeepEqual(cerr, err) {
			t.Fatalf("Check = %v, Decode error %v", cerr, err)
		}
		if err != nil {
			var prov *codec.ProviderError
			var prot *codec.ProtocolError
			if !errors.As(err, &prov) && !errors.As(err, &prot) {
				t.Fatalf("Decode error %T is neither a ProviderError nor a ProtocolError", err)
			}
		}
		o := c.NewObserver(codec.RequestInfo{Operation: codec.Ordinary})
		o.Write(body)
		_ = o.Observed()
		_ = c.ErrorCode(body)
		_, _ = c.Describe(body)
	})
}
