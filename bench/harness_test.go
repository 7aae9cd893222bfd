package bench

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/recourse-dev/recourse/chain"
	"github.com/recourse-dev/recourse/chat"
	"github.com/recourse-dev/recourse/client"
	"github.com/recourse-dev/recourse/codecs/openai"
	"github.com/recourse-dev/recourse/layers/sender"
)

// side is one measured operation of a comparison. run performs it once and
// returns the time that counts (usually the whole call).
type side struct {
	name string
	run  func() (time.Duration, error)
}

// timed wraps f as a side whose time is its whole duration.
func timed(name string, f func() error) side {
	return side{name: name, run: func() (time.Duration, error) {
		start := time.Now()
		err := f()
		return time.Since(start), err
	}}
}

// leaf runs s as an ordinary benchmark.
func leaf(b *testing.B, s side) {
	b.Helper()
	if _, err := s.run(); err != nil { // warm the connection
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.run(); err != nil {
			b.Fatal(err)
		}
	}
}

// tally is what one side accumulated in a ratio benchmark.
type tally struct {
	ns, allocs, bytes, conns float64
	blocks, cpus             []time.Duration // wall and process CPU time of each block
	ops                      []int           // ops in each block
}

// compare runs cand (recourse) and the baselines interleaved, block ops of
// each side at a time in rotating order, b.N ops per side in all, and
// reports the metrics described in the package documentation. It returns
// the tallies, candidate first.
func compare(b *testing.B, block int, cand side, baselines ...side) []*tally {
	b.Helper()
	sides := append([]side{cand}, baselines...)
	for _, s := range sides { // warm every connection
		if _, err := s.run(); err != nil {
			b.Fatal(s.name, ": ", err)
		}
	}
	t := make([]*tally, len(sides))
	for i := range t {
		t[i] = &tally{}
	}
	var ms runtime.MemStats
	b.ResetTimer()
	for done, round := 0, 0; done < b.N; round++ {
		k := min(block, b.N-done)
		for j := range sides {
			i := (j + round) % len(sides)
			runtime.ReadMemStats(&ms)
			m0, a0, c0, cpu0 := ms.Mallocs, ms.TotalAlloc, newConns.Load(), cpuTime()
			var d time.Duration
			for range k {
				dt, err := sides[i].run()
				if err != nil {
					b.Fatal(sides[i].name, ": ", err)
				}
				d += dt
			}
			cpu := cpuTime() - cpu0
			runtime.ReadMemStats(&ms)
			t[i].allocs += float64(ms.Mallocs - m0)
			t[i].bytes += float64(ms.TotalAlloc - a0)
			t[i].conns += float64(newConns.Load() - c0)
			t[i].ns += float64(d)
			t[i].blocks = append(t[i].blocks, d)
			t[i].cpus = append(t[i].cpus, cpu)
			t[i].ops = append(t[i].ops, k)
		}
		done += k
	}
	b.StopTimer()
	n := float64(b.N)
	for _, x := range t {
		x.ns, x.allocs, x.bytes, x.conns = x.ns/n, x.allocs/n, x.bytes/n, x.conns/n
	}
	c := t[0]
	b.ReportMetric(c.ns, "ns/op")
	b.ReportMetric(c.bytes, "B/op")
	b.ReportMetric(c.allocs, "allocs/op")
	b.ReportMetric(c.conns, "new-conns/op")
	for i, s := range baselines {
		base := t[i+1]
		b.ReportMetric(base.ns, s.name+"-ns/op")
		b.ReportMetric(base.bytes, s.name+"-B/op")
		b.ReportMetric(base.allocs, s.name+"-allocs/op")
		b.ReportMetric(base.conns, s.name+"-new-conns/op")
		b.ReportMetric(medianRatio(c.blocks, base.blocks), "x-time-vs-"+s.name)
		if r := medianRatio(c.cpus, base.cpus); r > 0 {
			b.ReportMetric(r, "x-cpu-vs-"+s.name)
		}
		suffix := "/op"
		if len(baselines) > 1 {
			suffix = "-vs-" + s.name + "/op"
		}
		b.ReportMetric(c.allocs-base.allocs, "extra-allocs"+suffix)
		b.ReportMetric(c.bytes-base.bytes, "extra-B"+suffix)
	}
	return t
}

// medianRatio returns the median over blocks of num[i]/den[i].
func medianRatio(num, den []time.Duration) float64 {
	r := make([]float64, 0, len(num))
	for i := range num {
		if den[i] > 0 {
			r = append(r, float64(num[i])/float64(den[i]))
		}
	}
	return median(r)
}

// medianDiff returns the median over blocks of the per-op difference
// between the times of a and b.
func medianDiff(a, b *tally) float64 {
	r := make([]float64, len(a.blocks))
	for i := range r {
		r[i] = float64(a.blocks[i]-b.blocks[i]) / float64(a.ops[i])
	}
	return median(r)
}

// median returns the median of r, which it sorts, or 0 for none.
func median(r []float64) float64 {
	if len(r) == 0 {
		return 0
	}
	slices.Sort(r)
	if len(r)%2 == 1 {
		return r[len(r)/2]
	}
	return (r[len(r)/2-1] + r[len(r)/2]) / 2
}

// newConns counts the connections the loopback servers accepted: a client
// that cannot reuse its connection dials once per call.
var newConns atomic.Int64

// server starts a loopback server (httptest listens on 127.0.0.1) that is
// closed when tb ends and counts its new connections in newConns.
func server(tb testing.TB, h http.HandlerFunc) *httptest.Server {
	tb.Helper()
	srv := httptest.NewUnstartedServer(h)
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			newConns.Add(1)
		}
	}
	srv.Start()
	tb.Cleanup(srv.Close)
	return srv
}

// rawClient returns a plain http.Client over a clone of
// http.DefaultTransport, the baseline of every comparison.
func rawClient(tb testing.TB) *http.Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tb.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr}
}

// pooledClient returns a plain http.Client over a clone of
// http.DefaultTransport that keeps as many idle connections per host as the
// sender's default transport (sender.DefaultMaxIdleConnsPerHost).
func pooledClient(tb testing.TB) *http.Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = sender.DefaultMaxIdleConnsPerHost
	tb.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr}
}

// recourseChain returns chain.Default(openai.New()).
func recourseChain(tb testing.TB) *chain.Chain {
	tb.Helper()
	ch, err := chain.Default(openai.New())
	if err != nil {
		tb.Fatal(err)
	}
	return ch
}

// nativeClient returns the native client over chain.Default(openai.New()).
func nativeClient(tb testing.TB, baseURL string) *client.Client {
	tb.Helper()
	c, err := client.New(baseURL, recourseChain(tb), client.WithAPIKey("sk-bench"))
	if err != nil {
		tb.Fatal(err)
	}
	return c
}

// chatRequest is the request of every benchmark.
var chatRequest = &chat.Request{
	Model:    "gpt-4o-mini",
	Messages: []chat.Message{{Role: chat.User, Content: "Say hello."}},
}

// encoded returns the OpenAI body recourse sends for chatRequest, so that
// the drop-in sides post the same bytes.
func encoded(tb testing.TB, stream bool) []byte {
	tb.Helper()
	r := *chatRequest
	r.Stream = stream
	body, err := openai.New().Encode(&r)
	if err != nil {
		tb.Fatal(err)
	}
	return body
}

// rawRequest is the request body a raw client encodes itself; it encodes to
// the bytes recourse sends for chatRequest (TestHarness checks).
type rawRequest struct {
	Model    string `json:"model"`
	Messages []struct {
		Role    string `json:"role"`
		Content string `json:"content"`
	} `json:"messages"`
	Stream        bool `json:"stream,omitempty"`
	StreamOptions *struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options,omitempty"`
}

// rawStreamBody encodes the streamed request as a raw client would.
func rawStreamBody() ([]byte, error) {
	r := rawRequest{Model: chatRequest.Model, Stream: true}
	for _, m := range chatRequest.Messages {
		r.Messages = append(r.Messages, struct {
			Role    string `json:"role"`
			Content string `json:"content"`
		}{string(m.Role), m.Content})
	}
	r.StreamOptions = &struct {
		IncludeUsage bool `json:"include_usage"`
	}{true}
	return json.Marshal(r)
}

// post sends body to url with the headers recourse sends.
func post(c *http.Client, url string, body []byte) (*http.Response, error) {
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer sk-bench")
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		return nil, fmt.Errorf("HTTP %d", resp.StatusCode)
	}
	return resp, nil
}

// drainRequest reads the request body, so the connection can be reused.
func drainRequest(r *http.Request) {
	_, _ = io.Copy(io.Discard, r.Body)
}

// sseHeaders writes the headers of an SSE answer.
func sseHeaders(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
}

// contents returns n content deltas.
func contents(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf(" w%d", i)
	}
	return out
}

// rawChunk is what a fair raw client decodes from an OpenAI chunk.
type rawChunk struct {
	ID      string `json:"id"`
	Model   string `json:"model"`
	Choices []struct {
		Index int `json:"index"`
		Delta struct {
			Content *string `json:"content"`
		} `json:"delta"`
		FinishReason *string `json:"finish_reason"`
	} `json:"choices"`
	Usage *struct {
		PromptTokens     int `json:"prompt_tokens"`
		CompletionTokens int `json:"completion_tokens"`
	} `json:"usage"`
}

// dataLine returns the payload of an SSE data line, or ok=false.
func dataLine(line []byte) (payload []byte, ok bool) {
	rest, ok := bytes.CutPrefix(line, []byte("data:"))
	if !ok {
		return nil, false
	}
	return bytes.TrimSpace(rest), true
}

// readLines reads an SSE body line by line with a bufio.Reader and calls f
// with the payload of each data line; f returns false to stop.
func readLines(body io.Reader, br *bufio.Reader, f func(payload []byte) bool) error {
	br.Reset(body)
	for {
		line, err := br.ReadSlice('\n')
		if p, ok := dataLine(line); ok && !f(p) {
			return nil
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// streamAll ranges over a native stream and returns the content chunks and
// whether the Done chunk arrived.
func streamAll(c *client.Client) (chunks int, done bool, err error) {
	for ch, err := range c.Stream(context.Background(), chatRequest) {
		if err != nil {
			return chunks, done, err
		}
		if ch.Done {
			done = true
			continue
		}
		chunks++
	}
	return chunks, done, nil
}

// nativeStreamSide is the recourse side of a stream benchmark: one native
// stream through c, which must deliver want content chunks and Done.
func nativeStreamSide(c *client.Client, want int) side {
	return timed("recourse", func() error {
		n, done, err := streamAll(c)
		if err == nil && (n != want || !done) {
			err = fmt.Errorf("%d content chunks, done %v", n, done)
		}
		return err
	})
}

// rawLinesSide is a raw side of a stream benchmark named name: a plain POST
// to url through c whose body is read to its end (as a client must for its
// connection to return to the pool), splitting lines and counting data
// lines, which must be want. br is reused between calls.
func rawLinesSide(name string, c *http.Client, url string, br *bufio.Reader, want int) side {
	return timed(name, func() error {
		body, err := rawStreamBody()
		if err != nil {
			return err
		}
		resp, err := post(c, url, body)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		n := 0
		err = readLines(resp.Body, br, func([]byte) bool { n++; return true })
		if err == nil && n != want {
			err = fmt.Errorf("%d data lines, want %d", n, want)
		}
		return err
	})
}

// TestHarness runs every side of every benchmark once and checks its
// answer, so a broken benchmark fails here rather than measuring an error.
func TestHarness(t *testing.T) {
	if b, err := rawStreamBody(); err != nil || string(b) != string(encoded(t, true)) {
		t.Fatalf("raw request body %s (%v), recourse sends %s", b, err, encoded(t, true))
	}
	d := newDropIn(t)
	s := newStream1000(t)
	f := newFirstChunk(t)
	sides := []side{d.raw, d.recourse, d.floor, s.recourse, s.rawLines, s.rawJSON, f.recourse, f.raw, f.floor}
	c := newStreamConns(t)
	u := newBigUnary(t, 1<<20)
	ds := newDropInStream(t, 1000)
	sides = append(sides, c.recourse, c.raw, u.native, u.rawJSON, u.dropIn, u.raw, ds.recourse, ds.raw, ds.recJSON, ds.rawJSON, ds.floorJSON)
	for _, n := range []int{10, 100} {
		h := newHistory(t, n)
		sides = append(sides, h.recourse, h.raw)
	}
	st, rs := newStallBench(t), newResponsesCodec(t)
	sides = append(sides, st.unaryWith, st.unaryNone, st.unaryFloor, st.streamWith, st.streamNone, rs.responses, rs.chat)
	fb := newFallbackBench(t)
	sides = append(sides, fb.unaryWith, fb.unaryNone, fb.unaryFloor, fb.streamWith, fb.streamNone)
	for _, p := range []int{1, 8} {
		cc := newConcurrent(t, p)
		sides = append(sides, cc.recourse, cc.raw)
	}
	for _, cl := range []*http.Client{ds.recc, ds.rawc} {
		if _, err := ds.held(cl); err != nil {
			t.Fatalf("held: %v", err)
		}
	}
	h, enc := historyRequest(3), openai.New()
	want, err := enc.Encode(h)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := json.Marshal(rawRequestFor(h)); err != nil || string(got) != string(want) {
		t.Fatalf("raw history body %s (%v), recourse sends %s", got, err, want)
	}
	for _, sd := range sides {
		for range 2 {
			if _, err := sd.run(); err != nil {
				t.Fatalf("%s: %v", sd.name, err)
			}
		}
	}
	for _, frames := range []func(n int) error{newFrames(t, keepaliveFrame).run, newFrames(t, contentFrame).run} {
		for _, n := range []int{0, 1, 3000} {
			if err := frames(n); err != nil {
				t.Fatalf("%d frames: %v", n, err)
			}
		}
	}
}
