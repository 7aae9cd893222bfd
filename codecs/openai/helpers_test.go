package openai_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/recourse-dev/recourse/chat"
	"github.com/recourse-dev/recourse/codec"
	"github.com/recourse-dev/recourse/codecs/openai"
)

func ptr[T any](v T) *T { return &v }

func user(text string) chat.Message { return chat.Message{Role: chat.User, Content: text} }

// mustEncode encodes req with a default codec and fails the test on error.
func mustEncode(t *testing.T, req *chat.Request) string {
	t.Helper()
	b, err := openai.New().Encode(req)
	if err != nil {
		t.Fatalf("Encode: unexpected error %v", err)
	}
	return string(b)
}

// wantProtocolError fails unless err is a *codec.ProtocolError whose What
// contains what.
func wantProtocolError(t *testing.T, err error, what string) {
	t.Helper()
	var pe *codec.ProtocolError
	if !errors.As(err, &pe) {
		t.Fatalf("error = %#v, want *codec.ProtocolError", err)
	}
	if !strings.Contains(pe.What, what) {
		t.Errorf("ProtocolError.What = %q, want it to contain %q", pe.What, what)
	}
	if pe.Err == nil {
		t.Errorf("ProtocolError.Err = nil, want the underlying error")
	}
}
