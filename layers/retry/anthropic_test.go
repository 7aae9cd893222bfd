package retry_test

import (
	"testing"

	"github.com/recourse-dev/recourse/chat"
	"github.com/recourse-dev/recourse/codec"
	"github.com/recourse-dev/recourse/codecs/anthropic"
	"github.com/recourse-dev/recourse/internal/rigtest"
	"github.com/recourse-dev/recourse/recoursetest"
)

// pvAnthropic is the provider row of Claude's Messages API, for the
// per-provider tests that hold for it (the others, such as R15.2's table,
// describe the three providers of the README).
func pvAnthropic() pvProv {
	return pvProv{
		name: "anthropic", provider: codec.Anthropic, model: recoursetest.AnthropicModel, path: recoursetest.AnthropicPath,
		codec:  func() codec.Codec { return anthropic.New(anthropic.WithDefaultMaxTokens(64)) },
		okBody: recoursetest.AnthropicMessage,
		errorBody: func(status int) string {
			typ, _ := pvCode(status)
			return recoursetest.AnthropicError(typ, "busy")
		},
		codedError: func(code, message string) string { return recoursetest.AnthropicError(code, message) },
		request: func() *chat.Request {
			return &chat.Request{Model: recoursetest.AnthropicModel, Messages: []chat.Message{{Role: chat.User, Content: rigtest.Prompt}}}
		},
		rich: pvRich(recoursetest.AnthropicModel, chat.Options{Temperature: pvF(0.25), TopP: pvF(0.5), TopK: pvI(40),
			MaxTokens: pvI(64), Stop: []string{"END", "STOP"}}),
	}
}

// R10.5 on the Messages API (R22): neither the key nor the prompt reaches
// a safe output, whatever the failure.
func TestR22_1_PrivacyCanary(t *testing.T) { privacyCanary(t, pvAnthropic()) }
