package ollama_test

import (
	"errors"
	"testing"

	"github.com/recourse-dev/recourse/codec"
	"github.com/recourse-dev/recourse/codecs/ollama"
)

// FuzzDecode checks that Decode never panics and returns exactly one of a
// completion and an error, the error being a *codec.ProviderError or a
// *codec.ProtocolError. It also runs the observer and DecodeMetrics on the
// same bytes, which must not panic either.
func FuzzDecode(f *testing.F) {
	for _, s := range []string{
		okBody,
		`{"model":"m","message":{"role":"assistant","content":"4","thinking":"2+2"},"done":true,"done_reason":"stop"}`,
		`{"model":"m","message":{"role":"assistant","content":"","tool_calls":[{"id":"c","function":{"index":0,"name":"f","arguments":{"a":[1,{"b":null}]}}}]},"done":true,"done_reason":"stop"}`,
		`{"model":"m","message":{"role":"assistant","content":"Once"},"done":true,"done_reason":"length","eval_count":1}`,
		`{"error":"model 'x' not found"}`,
		`{"error":{"message":"bad"}}`,
		`{"error":42}`,
		`{"message":{"content":"x"},"done":false}`,
		`{"message":{"content":"\ud83d\ude42"},"done":true}`,
		"{\"message\":{\"content\":\"\xff\"},\"done\":true}",
		`{"message":{"tool_calls":[{"function":{"name":"f","arguments":"x"}}]},"done":true}`,
		``, ` `, `null`, `[]`, `{`, `{"message":`,
	} {
		f.Add([]byte(s))
	}
	c := ollama.New()
	f.Fuzz(func(t *testing.T, body []byte) {
		got, err := c.Decode(body)
		if (got == nil) == (err == nil) {
			t.Fatalf("Decode = %v, %v: want exactly one of completion and error", got, err)
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
		_, _ = ollama.DecodeMetrics(body)
		_, _ = c.Describe(body)
	})
}
