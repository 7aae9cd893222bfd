package bench

import (
	"errors"
	"io"
	"net/http"
	"testing"

	"github.com/recourse-dev/recourse/internal/scripted"
)

// dropIn is the drop-in comparison: the same POST through a plain
// http.Client and through http.Client{Transport: chain.Default(openai.New())}.
type dropIn struct {
	raw, recourse side
}

func newDropIn(tb testing.TB) *dropIn {
	answer := []byte(scripted.OpenAIChat("Hello! How can I help you today?"))
	srv := server(tb, func(w http.ResponseWriter, r *http.Request) {
		drainRequest(r)
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("X-Request-Id", "req_bench")
		_, _ = w.Write(answer)
	})
	url := srv.URL + "/v1/chat/completions"
	body := encoded(tb, false)
	call := func(c *http.Client) func() error {
		return func() error {
			resp, err := post(c, url, body)
			if err != nil {
				return err
			}
			n, err := io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if err == nil && n != int64(len(answer)) {
				err = errors.New("short body")
			}
			return err
		}
	}
	return &dropIn{
		raw:      timed("raw", call(rawClient(tb))),
		recourse: timed("recourse", call(&http.Client{Transport: recourseChain(tb)})),
	}
}

// BenchmarkDropIn compares a small JSON chat completion through a plain
// http.Client with the same call through the default recourse chain.
func BenchmarkDropIn(b *testing.B) {
	d := newDropIn(b)
	b.Run("raw", func(b *testing.B) { leaf(b, d.raw) })
	b.Run("recourse", func(b *testing.B) { leaf(b, d.recourse) })
	b.Run("ratio", func(b *testing.B) { compare(b, 16, d.recourse, d.raw) })
}
