package bench

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/recourse-dev/recourse/chat"
	"github.com/recourse-dev/recourse/recoursetest"
)

// streamConns is the connection-reuse comparison: a short native stream
// over a server that flushes every event, so the end of the HTTP body
// (the last chunk of the chunked encoding) arrives after [DONE], as it does
// from a provider.
type streamConns struct {
	recourse, raw side
}

func newStreamConns(tb testing.TB) *streamConns {
	events := recoursetest.OpenAIStream(contents(8)...)
	srv := server(tb, func(w http.ResponseWriter, r *http.Request) {
		drainRequest(r)
		sseHeaders(w)
		for _, ev := range events {
			_, _ = io.WriteString(w, ev)
			w.(http.Flusher).Flush()
		}
	})
	url := srv.URL + "/v1/chat/completions"
	raw := rawClient(tb)
	native := nativeClient(tb, srv.URL)
	br := bufio.NewReader(nil)
	return &streamConns{
		recourse: nativeStreamSide(native, 8),
		// raw reads the body to its end before closing it, as a client
		// must for its connection to return to the pool.
		raw: rawLinesSide("raw", raw, url, br, len(events)),
	}
}

// BenchmarkStreamConns reports the new connections per native stream
// (new-conns/op) against a raw client that reads each stream to HTTP EOF.
// Every stream that ended at its terminal frame should leave its
// connection reusable: in production each new connection is a TLS
// handshake.
func BenchmarkStreamConns(b *testing.B) {
	s := newStreamConns(b)
	b.Run("ratio", func(b *testing.B) { compare(b, 8, s.recourse, s.raw) })
}

// bigUnary is the large-response comparison: one completion whose content
// is size bytes, answered with its Content-Length.
type bigUnary struct {
	size                         int
	native, rawJSON, dropIn, raw side
}

// rawCompletion is what a fair raw client decodes from a chat.completion.
type rawCompletion struct {
	ID      string `json:"id"`
	Model   string `json:"model"`
	Choices []struct {
		Message struct {
			Role    string `json:"role"`
			Content string `json:"content"`
		} `json:"message"`
		FinishReason string `json:"finish_reason"`
	} `json:"choices"`
	Usage *struct {
		PromptTokens     int `json:"prompt_tokens"`
		CompletionTokens int `json:"completion_tokens"`
	} `json:"usage"`
}

func newBigUnary(tb testing.TB, contentBytes int) *bigUnary {
	content := strings.Repeat("a", contentBytes)
	answer := []byte(recoursetest.OpenAIChat(content))
	srv := server(tb, func(w http.ResponseWriter, r *http.Request) {
		drainRequest(r)
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Length", fmt.Sprint(len(answer)))
		_, _ = w.Write(answer)
	})
	url := srv.URL + "/v1/chat/completions"
	body := encoded(tb, false)
	rawReq := func() ([]byte, error) { return json.Marshal(rawRequestFor(chatRequest)) }
	native := nativeClient(tb, srv.URL)
	rawc := rawClient(tb)
	dropc := &http.Client{Transport: recourseChain(tb)}
	readAll := func(c *http.Client, body []byte) ([]byte, error) {
		resp, err := post(c, url, body)
		if err != nil {
			return nil, err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err == nil && len(b) != len(answer) {
			err = errors.New("short body")
		}
		return b, err
	}
	return &bigUnary{
		size: len(answer),
		native: timed("recourse", func() error {
			comp, err := native.Complete(context.Background(), chatRequest)
			if err == nil && len(comp.Message.Content) != contentBytes {
				err = errors.New("short content")
			}
			return err
		}),
		// raw-json is the raw client that decodes what it reads: io.ReadAll
		// and json.Unmarshal.
		rawJSON: timed("raw-json", func() error {
			req, err := rawReq()
			if err != nil {
				return err
			}
			b, err := readAll(rawc, req)
			if err != nil {
				return err
			}
			var c rawCompletion
			if err := json.Unmarshal(b, &c); err != nil {
				return err
			}
			if len(c.Choices) != 1 || len(c.Choices[0].Message.Content) != contentBytes {
				return errors.New("short content")
			}
			return nil
		}),
		dropIn: timed("recourse", func() error { _, err := readAll(dropc, body); return err }),
		raw:    timed("raw", func() error { _, err := readAll(rawc, body); return err }),
	}
}

// BenchmarkUnary10MB reports the bytes allocated per body byte of a 10 MB
// completion (B/body-byte, and <baseline>-B/body-byte): through the native
// Client.Complete against a raw client that reads the body with io.ReadAll
// and decodes it with json.Unmarshal (native), and through the drop-in
// chain against a plain http.Client reading the body with io.ReadAll
// (dropin).
func BenchmarkUnary10MB(b *testing.B) {
	u := newBigUnary(b, 10<<20)
	perByte := func(b *testing.B, t []*tally, base string) {
		b.ReportMetric(t[0].bytes/float64(u.size), "B/body-byte")
		b.ReportMetric(t[1].bytes/float64(u.size), base+"-B/body-byte")
	}
	b.Run("native/ratio", func(b *testing.B) { perByte(b, compare(b, 1, u.native, u.rawJSON), "raw-json") })
	b.Run("dropin/ratio", func(b *testing.B) { perByte(b, compare(b, 1, u.dropIn, u.raw), "raw") })
}

// rawRequestFor encodes r's model and messages as a raw client would.
func rawRequestFor(r *chat.Request) rawRequest {
	out := rawRequest{Model: r.Model, Stream: r.Stream}
	for _, m := range r.Messages {
		out.Messages = append(out.Messages, struct {
			Role    string `json:"role"`
			Content string `json:"content"`
		}{string(m.Role), m.Content})
	}
	return out
}

// history is the encoding comparison: a completion whose request carries a
// history of n messages.
type history struct {
	n             int
	recourse, raw side
}

// historyRequest returns a request of n messages, user and assistant in
// turn, each about 60 bytes of text.
func historyRequest(n int) *chat.Request {
	r := &chat.Request{Model: chatRequest.Model, Messages: make([]chat.Message, n)}
	for i := range r.Messages {
		role := chat.User
		if i%2 == 1 {
			role = chat.Assistant
		}
		r.Messages[i] = chat.Message{Role: role, Content: fmt.Sprintf("message %d of the conversation, with some words in it.", i)}
	}
	return r
}

func newHistory(tb testing.TB, n int) *history {
	answer := []byte(recoursetest.OpenAIChat("Hello! How can I help you today?"))
	srv := server(tb, func(w http.ResponseWriter, r *http.Request) {
		drainRequest(r)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(answer)
	})
	url := srv.URL + "/v1/chat/completions"
	req := historyRequest(n)
	native := nativeClient(tb, srv.URL)
	raw := rawClient(tb)
	return &history{
		n: n,
		recourse: timed("recourse", func() error {
			_, err := native.Complete(context.Background(), req)
			return err
		}),
		// raw encodes the history with json.Marshal and decodes the answer
		// with json.Unmarshal.
		raw: timed("raw", func() error {
			body, err := json.Marshal(rawRequestFor(req))
			if err != nil {
				return err
			}
			resp, err := post(raw, url, body)
			if err != nil {
				return err
			}
			defer resp.Body.Close()
			var c rawCompletion
			return json.NewDecoder(resp.Body).Decode(&c)
		}),
	}
}

// BenchmarkHistory sends a completion with a history of 10, 100 and 1000
// messages through the native Client.Complete and through a raw client that
// encodes with json.Marshal. Besides the usual figures it reports the cost
// per message: extra-ns/msg and extra-B/msg (recourse minus raw, divided by
// the number of messages) and ns/msg (recourse).
func BenchmarkHistory(b *testing.B) {
	for _, n := range []int{10, 100, 1000} {
		h := newHistory(b, n)
		b.Run(fmt.Sprintf("msgs=%d/ratio", n), func(b *testing.B) {
			t := compare(b, 4, h.recourse, h.raw)
			m := float64(n)
			b.ReportMetric(t[0].ns/m, "ns/msg")
			b.ReportMetric((t[0].ns-t[1].ns)/m, "extra-ns/msg")
			b.ReportMetric((t[0].bytes-t[1].bytes)/m, "extra-B/msg")
		})
	}
}

// concurrent is the concurrency comparison: p drop-in calls at once on one
// client.
type concurrent struct {
	p                     int
	recourse, raw, pooled side
}

func newConcurrent(tb testing.TB, p int) *concurrent {
	answer := []byte(recoursetest.OpenAIChat("Hello! How can I help you today?"))
	srv := server(tb, func(w http.ResponseWriter, r *http.Request) {
		drainRequest(r)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(answer)
	})
	url := srv.URL + "/v1/chat/completions"
	body := encoded(tb, false)
	batch := func(c *http.Client) func() error {
		return func() error {
			var wg sync.WaitGroup
			errs := make([]error, p)
			for i := range p {
				wg.Go(func() {
					resp, err := post(c, url, body)
					if err != nil {
						errs[i] = err
						return
					}
					n, err := io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					if err == nil && n != int64(len(answer)) {
						err = errors.New("short body")
					}
					errs[i] = err
				})
			}
			wg.Wait()
			return errors.Join(errs...)
		}
	}
	return &concurrent{
		p:        p,
		raw:      timed("raw", batch(rawClient(tb))),
		pooled:   timed("pooled", batch(pooledClient(tb))),
		recourse: timed("recourse", batch(&http.Client{Transport: recourseChain(tb)})),
	}
}

// BenchmarkConcurrent runs 1, 8 and 64 drop-in calls at once on one chain
// (one op is the whole batch) against the same batch on one plain
// http.Client over http.DefaultTransport's pool (raw: two idle connections
// per host, so a batch wider than that dials) and on one over a pool as
// wide as the sender's default (pooled: sender.DefaultMaxIdleConnsPerHost),
// the fair baseline for time. ns/call is ns/op divided by the batch;
// new-conns/call and <baseline>-new-conns/call are the connections the
// server accepted per call.
func BenchmarkConcurrent(b *testing.B) {
	for _, p := range []int{1, 8, 64} {
		c := newConcurrent(b, p)
		b.Run(fmt.Sprintf("calls=%d/ratio", p), func(b *testing.B) {
			t := compare(b, max(1, 16/p), c.recourse, c.raw, c.pooled)
			b.ReportMetric(t[0].ns/float64(p), "ns/call")
			b.ReportMetric(t[1].ns/float64(p), "raw-ns/call")
			b.ReportMetric(t[2].ns/float64(p), "pooled-ns/call")
			b.ReportMetric(t[0].conns/float64(p), "new-conns/call")
			b.ReportMetric(t[1].conns/float64(p), "raw-new-conns/call")
			b.ReportMetric(t[2].conns/float64(p), "pooled-new-conns/call")
		})
	}
}
