package codectest_test

import (
	"bytes"
	"net/url"
	"os"
	"os/exec"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/recourse-dev/recourse/chat"
	"github.com/recourse-dev/recourse/codec/codectest"
	"github.com/recourse-dev/recourse/codecs/gemini"
	"github.com/recourse-dev/recourse/codecs/openai"
)

// sloppyRewriter is the OpenAI codec with a WithModel that also changes
// the prompt: what codectest.Codec must catch.
type sloppyRewriter struct{ *openai.Codec }

func (s sloppyRewriter) WithModel(body []byte, model string) ([]byte, error) {
	out, err := s.Codec.WithModel(body, model)
	return bytes.Replace(out, []byte(`"hi"`), []byte(`"ho"`), 1), err
}

const rewriterEnv = "CODECTEST_SLOPPY_REWRITER"

// TestR20_1_CodecCatchesAWithModelThatChangesMore: codectest.Codec passes
// the OpenAI codec's WithModel and fails one that changes a byte beyond
// the model (run in a child process, whose failure is the result).
func TestR20_1_CodecCatchesAWithModelThatChangesMore(t *testing.T) {
	sample := &chat.Request{Model: "m", Messages: []chat.Message{{Role: chat.User, Content: "hi"}}}
	if os.Getenv(rewriterEnv) != "" {
		codectest.Codec(t, sloppyRewriter{openai.New()}, sample)
		return
	}
	codectest.Codec(t, openai.New(), sample)
	exe, err := os.Executable()
	require.NoError(t, err)
	cmd := exec.Command(exe, "-test.run=^TestR20_1_CodecCatchesAWithModelThatChangesMore$", "-test.count=1")
	cmd.Env = append(os.Environ(), rewriterEnv+"=1")
	out, err := cmd.CombinedOutput()
	require.Error(t, err, "Codec passed a WithModel that changes the prompt")
	assert.Contains(t, string(out), "WithModel changed more than the model")
}

// sloppyRouter is the Gemini codec with a WithModelURL that drops the
// query (alt=sse, a key): what codectest.Codec must catch.
type sloppyRouter struct{ *gemini.Codec }

func (s sloppyRouter) WithModelURL(u *url.URL, model string) (*url.URL, error) {
	out, err := s.Codec.WithModelURL(u, model)
	if out != nil {
		out.RawQuery = ""
	}
	return out, err
}

const routerEnv = "CODECTEST_SLOPPY_ROUTER"

// TestR23_1_CodecCatchesAWithModelURLThatChangesMore: codectest.Codec
// passes the Gemini codec's Router and fails one whose WithModelURL loses
// the query (run in a child process, whose failure is the result).
func TestR23_1_CodecCatchesAWithModelURLThatChangesMore(t *testing.T) {
	sample := &chat.Request{Model: "gemini-2.5-flash", Messages: []chat.Message{{Role: chat.User, Content: "hi"}}}
	if os.Getenv(routerEnv) != "" {
		codectest.Codec(t, sloppyRouter{gemini.New()}, sample)
		return
	}
	codectest.Codec(t, gemini.New(), sample)
	exe, err := os.Executable()
	require.NoError(t, err)
	cmd := exec.Command(exe, "-test.run=^TestR23_1_CodecCatchesAWithModelURLThatChangesMore$", "-test.count=1")
	cmd.Env = append(os.Environ(), routerEnv+"=1")
	out, err := cmd.CombinedOutput()
	require.Error(t, err, "Codec passed a WithModelURL that drops the query")
	assert.Contains(t, string(out), "DescribeURL(WithModelURL(u")
}
