package proxy

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/recourse-dev/recourse/recoursetest"
)

// R21.9: a completion body whose Content-Length is over the limit is
// refused on its header alone: the client that asked for 100 Continue
// gets the 413 instead, and no byte of the body is read — for the chat
// endpoint and for the Responses API alike.
func TestR21_9_OversizedContentLengthIsRefusedBeforeContinue(t *testing.T) {
	for _, path := range []string{"/v1/chat/completions", "/v1/responses"} {
		t.Run(path, func(t *testing.T) {
			r := newRig(t, "openai", func(c *Config) { c.MaxBodyBytes = 1 << 20 })
			conn, err := net.Dial("tcp", strings.TrimPrefix(r.proxy.URL, "http://"))
			require.NoError(t, err)
			defer conn.Close()
			require.NoError(t, conn.SetDeadline(time.Now().Add(10*time.Second)))
			// The header only: a client that waits for 100 Continue sends
			// no body byte until it gets one.
			_, err = fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: proxy\r\nContent-Type: application/json\r\nContent-Length: %d\r\nExpect: 100-continue\r\n\r\n", path, 64<<20)
			require.NoError(t, err)
			resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
			require.NoError(t, err)
			defer resp.Body.Close()
			assert.Equal(t, http.StatusRequestEntityTooLarge, resp.StatusCode, "the answer to the header is the 413, not 100 Continue")
			assert.Equal(t, "false", resp.Header.Get("X-Should-Retry"))
			assert.Zero(t, r.up.Count(), "nothing reached the upstream")
		})
	}
}

// R21.9, with a real client: Go's transport sends the body only after 100
// Continue, so a refusal on the header leaves every body byte unread.
func TestR21_9_ClientWaitingForContinueSendsNoBody(t *testing.T) {
	r := newRig(t, "openai", func(c *Config) { c.MaxBodyBytes = 1 << 20 },
		recoursetest.JSON(200, recoursetest.OpenAIChat("unused")))
	body := &countingReader{n: 64 << 20}
	req, err := http.NewRequest(http.MethodPost, r.proxy.URL+"/v1/chat/completions", body)
	require.NoError(t, err)
	req.ContentLength = body.n
	req.Header.Set("Expect", "100-continue")
	tr := &http.Transport{ExpectContinueTimeout: time.Minute}
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr}).Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	assert.Equal(t, http.StatusRequestEntityTooLarge, resp.StatusCode)
	assert.Zero(t, body.read, "no body byte was read")
	assert.Zero(t, r.up.Count())
}

// countingReader yields n zero bytes and counts what was read.
type countingReader struct {
	n, read int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	if c.read >= c.n {
		return 0, fmt.Errorf("countingReader: read past its end")
	}
	k := min(int64(len(p)), c.n-c.read)
	clear(p[:k])
	c.read += k
	return int(k), nil
}
