package bodyscan

import (
	"errors"
	"testing"

	"github.com/recourse-dev/recourse/codec"
)

func TestR4_5_CheckObject(t *testing.T) {
	for body, ok := range map[string]bool{
		`{"a":1}`:          true,
		"  \n{}\t ":        true,
		"":                 false,
		"   ":              false,
		"[]":               false,
		`"x"`:              false,
		`{"a":}`:           false,
		`{"a":1} {}`:       false,
		"{\"a\":\"\xff\"}": true,
	} {
		err := CheckObject([]byte(body))
		if (err == nil) != ok {
			t.Errorf("CheckObject(%q) = %v, want ok=%v", body, err, ok)
		}
		if err != nil && !errors.As(err, new(*codec.ProtocolError)) {
			t.Errorf("CheckObject(%q) error %T, want *codec.ProtocolError", body, err)
		}
	}
}

func TestR13_2_OpenAIObserverCountsCutBodies(t *testing.T) {
	o := New(OpenAI)
	o.Write([]byte(`  {"choices":[{"message":{"content":"é🙂`))
	if got := o.Observed().ContentBytes; got != 6 {
		t.Fatalf("content bytes of a cut body = %d, want 6", got)
	}
	o2 := New(OpenAI)
	o2.Write([]byte("   \n  "))
	if o2.Observed().Any() {
		t.Fatal("whitespace (an oMLX keepalive) is not semantic output")
	}
}

func TestIsObject(t *testing.T) {
	for raw, want := range map[string]bool{
		`{}`: true, " \t\r\n{\"a\":[1]} \n": true,
		``: false, ` `: false, `[]`: false, `"{}"`: false, `null`: false, `{"a":`: false, `{} {}`: false, "\f{}": false,
	} {
		if got := IsObject([]byte(raw)); got != want {
			t.Errorf("IsObject(%q) = %v, want %v", raw, got, want)
		}
	}
}
