package recoursetest

import (
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestServerPlaysScriptAndRecords: steps are played in order, the script
// runs out into a 500, and every request is recorded (this test came from
// the examples' former loopback server, which recoursetest replaced).
func TestServerPlaysScriptAndRecords(t *testing.T) {
	srv := NewServer(JSON(http.StatusTooManyRequests, `{"a":1}`, "Retry-After", "2"), Redirect(http.StatusFound, "http://127.0.0.1:1/x"))
	defer srv.Close()
	assert.True(t, strings.HasPrefix(srv.URL, "http://127.0.0.1:"), srv.URL)
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

	for i, want := range []struct {
		status int
		body   string
		header [2]string
	}{
		{429, `{"a":1}`, [2]string{"Retry-After", "2"}},
		{302, ``, [2]string{"Location", "http://127.0.0.1:1/x"}},
		{500, `{"error":{"message":"script exhausted","type":"server_error"}}`, [2]string{"Content-Type", "application/json"}},
	} {
		resp, err := client.Post(srv.URL+"/p", "application/json", strings.NewReader("body"+strconv.Itoa(i)))
		require.NoError(t, err)
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		require.NoError(t, err)
		assert.Equal(t, want.status, resp.StatusCode, "reply %d", i)
		assert.Equal(t, want.body, string(b), "reply %d", i)
		assert.Equal(t, want.header[1], resp.Header.Get(want.header[0]), "reply %d", i)
	}
	reqs := srv.Requests()
	require.Len(t, reqs, 3)
	assert.Equal(t, 3, srv.Count())
	for i, r := range reqs {
		assert.Equal(t, http.MethodPost, r.Method)
		assert.Equal(t, "/p", r.Path)
		assert.Equal(t, "body"+strconv.Itoa(i), string(r.Body))
	}
}

// TestStreamingReplies: an SSE stream is chunked and ends cleanly, a stream
// cut after its first event fails the read, NDJSON lines arrive whole and a
// Reset gives no response at all.
func TestStreamingReplies(t *testing.T) {
	events := OpenAIStream("Hel", "lo")
	srv := NewServer(SSE(events...), SSE(events[0]).CutEvents(1), NDJSON(OllamaStream("hi")...), Reset())
	defer srv.Close()
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}
	post := func() (*http.Response, error) {
		return client.Post(srv.URL+"/p", "application/json", strings.NewReader("{}"))
	}

	// A complete stream: chunked, every event, a clean EOF.
	resp, err := post()
	require.NoError(t, err)
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.NoError(t, err)
	assert.Equal(t, "text/event-stream", resp.Header.Get("Content-Type"))
	assert.Equal(t, int64(-1), resp.ContentLength, "chunked")
	assert.Equal(t, strings.Join(events, ""), string(b))
	assert.True(t, strings.HasSuffix(string(b), "\n\ndata: [DONE]\n\n"))

	// An aborted stream: the event arrives, then the read fails.
	resp, err = post()
	require.NoError(t, err)
	b, err = io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.ErrorIs(t, err, io.ErrUnexpectedEOF)
	assert.Equal(t, events[0], string(b))

	// NDJSON lines, the last one done:true.
	resp, err = post()
	require.NoError(t, err)
	b, err = io.ReadAll(resp.Body)
	resp.Body.Close()
	require.NoError(t, err)
	assert.Equal(t, "application/x-ndjson", resp.Header.Get("Content-Type"))
	lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	require.Len(t, lines, 2)
	assert.Contains(t, lines[0], `"content":"hi"`)
	assert.Contains(t, lines[1], `"done":true`)

	// A hang-up: no response at all.
	_, err = post()
	assert.Error(t, err)
	assert.Equal(t, 4, srv.Count())
}
