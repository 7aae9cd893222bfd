package gemini_test

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/recourse-dev/recourse/codec"
	"github.com/recourse-dev/recourse/codecs/gemini"
)

func chunkEvent(text, finish, token string) string {
	c := `{"content":{"parts":[{"text":"` + text + `"}]}`
	if finish != "" {
		c += `,"finishReason":"` + finish + `"`
	}
	if token != "" {
		c += `,"continuationToken":"` + token + `"`
	}
	return "data: {\"candidates\":[" + c + "}]}\r\n\r\n"
}

// R23.9: the resume request is the same request with the token as its
// top-level continuationToken, replacing any it had; the other members keep
// their order and bytes.
func TestR23_9_ResumeRequestSetsTheToken(t *testing.T) {
	c := gemini.New()
	for body, want := range map[string]string{
		`{"contents":[{"parts":[{"text":"hi"}]}],"generationConfig":{"temperature":0.5}}`: `{"contents":[{"parts":[{"text":"hi"}]}],"generationConfig":{"temperature":0.5},"continuationToken":"QQ=="}`,
		` {"continuationToken":"old","contents":[]} `:                                     `{"contents":[],"continuationToken":"QQ=="}`,
		`not json`: `{"continuationToken":"QQ=="}`,
	} {
		create, err := http.NewRequest(http.MethodPost, "https://g.example/v1beta/models/m:streamGenerateContent?alt=sse", strings.NewReader(body))
		require.NoError(t, err)
		create.Header.Set("x-goog-api-key", "k")
		r := c.ResumeRequest(create, codec.ResumePoint{Cursor: -1, Token: "QQ=="})
		got, err := io.ReadAll(r.Body)
		require.NoError(t, err)
		assert.Equal(t, want, string(got))
		assert.Equal(t, int64(len(want)), r.ContentLength)
		assert.Equal(t, create.URL.String(), r.URL.String())
		assert.Equal(t, "k", r.Header.Get("x-goog-api-key"))
		again, err := r.GetBody()
		require.NoError(t, err)
		b, _ := io.ReadAll(again)
		assert.Equal(t, want, string(b))
		orig, _ := create.GetBody()
		ob, _ := io.ReadAll(orig)
		assert.Equal(t, body, string(ob), "create is not modified")
	}
}

// R23.9: a stream is resumable only when the last chunk handed over with
// output was a checkpoint, and its continuation starts from the state at
// that checkpoint.
func TestR23_9_ResumePointIsTheLastCheckpointHandedOver(t *testing.T) {
	c := gemini.New()
	info := codec.RequestInfo{Operation: codec.Streaming}
	d := c.NewObserver(info).(codec.StreamDecoder)
	_, ok := c.ResumePoint(d)
	assert.False(t, ok, "nothing handed over")
	d.Write([]byte(chunkEvent("Hel", "", "") + chunkEvent("lo", "", "T1") + chunkEvent(" x", "", "")))
	_, ok = c.ResumePoint(d)
	assert.False(t, ok, "the checkpoint was decoded, not handed over")
	f, _ := d.Next()
	assert.Equal(t, "Hel", f.Content)
	f, _ = d.Next()
	assert.Equal(t, "lo", f.Content)
	p, ok := c.ResumePoint(d)
	require.True(t, ok)
	assert.Equal(t, codec.ResumePoint{Cursor: -1, Token: "T1"}, p)

	// The continuation starts at the checkpoint: " x", decoded but not
	// handed over, is left out.
	r := c.ResumeObserver(d, p).(codec.StreamDecoder)
	assert.Equal(t, int64(len("Hello")), r.Observed().ContentBytes)
	p2, ok := c.ResumePoint(r)
	require.True(t, ok, "a continuation cut before output resumes from the same checkpoint")
	assert.Equal(t, p, p2)
	r.Write([]byte(chunkEvent(" world", "STOP", "")))
	require.NoError(t, r.End())
	var last codec.Frame
	for f, ok := r.Next(); ok; f, ok = r.Next() {
		last = f
	}
	require.True(t, last.Done)
	assert.Equal(t, "Hello world", last.Completion.Message.Content)

	// Output handed over after the checkpoint: no resume.
	f, _ = d.Next()
	assert.Equal(t, " x", f.Content)
	_, ok = c.ResumePoint(d)
	assert.False(t, ok)

	// A token with another finish reason is no checkpoint.
	e := c.NewObserver(info).(codec.StreamDecoder)
	e.Write([]byte(chunkEvent("a", "SAFETY", "T2")))
	e.Next()
	_, ok = c.ResumePoint(e)
	assert.False(t, ok)
}
