// Package benchopenai compares streaming through openai-go with streaming
// through recourse's native Client.Stream, in one run, as ratios. It lives
// in the examples module because the core module does not depend on
// openai-go. Run it with
//
//	go -C examples test -run '^$' -bench . -benchmem ./bench-openai/
//
// BenchmarkOpenAIGoStreaming/ratio runs both sides interleaved, block by
// block in rotating order, and reports:
//
//   - ns/op, B/op, allocs/op: recourse's native Client.Stream;
//   - openai-go-ns/op, openai-go-B/op, openai-go-allocs/op: openai-go;
//   - x-faster-than-openai-go: median over blocks of openai-go time divided
//     by recourse time (above 1: recourse is faster);
//   - x-bytes-vs-openai-go: recourse's bytes allocated divided by
//     openai-go's (below 1: recourse allocates less);
//   - x-cpu-vs-openai-go: recourse's process CPU time divided by
//     openai-go's, steadier than wall time on a busy machine.
//
// Allocation and CPU figures are process-wide, so they include the
// loopback server, which does the same work for both sides.
package benchopenai

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/recourse-dev/recourse/chain"
	"github.com/recourse-dev/recourse/chat"
	"github.com/recourse-dev/recourse/client"
	recourseopenai "github.com/recourse-dev/recourse/codecs/openai"
)

// chunks is the number of content chunks of the stream.
const chunks = 1000

// sseStream returns a streamed OpenAI chat completion of n content chunks,
// the same events as the core module's canned stream: a role chunk, the
// content chunks, a finish chunk, a usage chunk and [DONE].
func sseStream(n int) []byte {
	const pre = `data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1700000000,"model":"gpt-4o-mini-2024-07-18","system_fingerprint":"fp_44709d6fcb","choices":`
	var b strings.Builder
	b.WriteString(pre + `[{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}],"usage":null}` + "\n\n")
	for i := range n {
		fmt.Fprintf(&b, pre+`[{"index":0,"delta":{"content":" w%d"},"logprobs":null,"finish_reason":null}],"usage":null}`+"\n\n", i)
	}
	b.WriteString(pre + `[{"index":0,"delta":{},"logprobs":null,"finish_reason":"stop"}],"usage":null}` + "\n\n")
	b.WriteString(pre + `[],"usage":{"prompt_tokens":12,"completion_tokens":7,"total_tokens":19}}` + "\n\n")
	b.WriteString("data: [DONE]\n\n")
	return []byte(b.String())
}

// side is one measured way to read the stream; run returns an error when
// the stream was not read whole.
type side struct {
	name string
	run  func() error
}

// sides starts a loopback server (127.0.0.1) and returns recourse's native
// client, openai-go, and openai-go over the recourse chain (drop-in).
func sides(tb testing.TB) (recourse, openaiGo, openaiGoOverRecourse side) {
	payload := sseStream(chunks)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = w.Write(payload)
	}))
	tb.Cleanup(srv.Close)

	ch, err := chain.Default(recourseopenai.New())
	if err != nil {
		tb.Fatal(err)
	}
	native, err := client.New(srv.URL, ch, client.WithAPIKey("sk-bench"))
	if err != nil {
		tb.Fatal(err)
	}
	req := &chat.Request{Model: "gpt-4o-mini", Messages: []chat.Message{{Role: chat.User, Content: "Say hello."}}}
	recourse = side{name: "recourse", run: func() error {
		var text strings.Builder
		n, done := 0, false
		for c, err := range native.Stream(context.Background(), req) {
			if err != nil {
				return err
			}
			if c.Done {
				done = true
				continue
			}
			text.WriteString(c.Content)
			n++
		}
		return check(n, done)
	}}

	raw := http.DefaultTransport.(*http.Transport).Clone()
	tb.Cleanup(raw.CloseIdleConnections)
	openaiGo = side{name: "openai-go", run: streamOpenAI(srv.URL, raw)}
	openaiGoOverRecourse = side{name: "openai-go-over-recourse", run: streamOpenAI(srv.URL, ch)}
	return recourse, openaiGo, openaiGoOverRecourse
}

// streamOpenAI returns a run that reads the stream with openai-go over rt,
// as its documentation shows: Next, Current, the content of each chunk.
func streamOpenAI(baseURL string, rt http.RoundTripper) func() error {
	client := openai.NewClient(
		option.WithBaseURL(baseURL+"/v1/"),
		option.WithAPIKey("sk-bench"),
		option.WithHTTPClient(&http.Client{Transport: rt}),
	)
	params := openai.ChatCompletionNewParams{
		Model:         "gpt-4o-mini",
		Messages:      []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Say hello.")},
		StreamOptions: openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)},
	}
	return func() error {
		s := client.Chat.Completions.NewStreaming(context.Background(), params)
		defer s.Close()
		var text strings.Builder
		n, done := 0, false
		for s.Next() {
			c := s.Current()
			if len(c.Choices) == 0 {
				continue
			}
			if c.Choices[0].FinishReason == "stop" {
				done = true
			}
			if d := c.Choices[0].Delta.Content; d != "" {
				text.WriteString(d)
				n++
			}
		}
		if err := s.Err(); err != nil {
			return err
		}
		return check(n, done)
	}
}

func check(n int, done bool) error {
	if n != chunks || !done {
		return fmt.Errorf("%d content chunks, want %d; finished %v", n, chunks, done)
	}
	return nil
}

// tally is what one side accumulated.
type tally struct {
	ns, bytes, allocs float64
	cpu               time.Duration
	blocks, cpus      []time.Duration
}

// compare runs the sides interleaved, one op of each per block in rotating
// order, b.N ops per side, and returns their tallies.
func compare(b *testing.B, ss ...side) []*tally {
	for _, s := range ss {
		if err := s.run(); err != nil {
			b.Fatal(s.name, ": ", err)
		}
	}
	t := make([]*tally, len(ss))
	for i := range t {
		t[i] = &tally{}
	}
	var ms runtime.MemStats
	b.ResetTimer()
	for round := range b.N {
		for j := range ss {
			i := (j + round) % len(ss)
			runtime.ReadMemStats(&ms)
			m0, a0, c0 := ms.Mallocs, ms.TotalAlloc, cpuTime()
			start := time.Now()
			if err := ss[i].run(); err != nil {
				b.Fatal(ss[i].name, ": ", err)
			}
			d := time.Since(start)
			c := cpuTime() - c0
			runtime.ReadMemStats(&ms)
			t[i].allocs += float64(ms.Mallocs - m0)
			t[i].bytes += float64(ms.TotalAlloc - a0)
			t[i].ns += float64(d)
			t[i].cpu += c
			t[i].blocks = append(t[i].blocks, d)
			t[i].cpus = append(t[i].cpus, c)
		}
	}
	b.StopTimer()
	for _, x := range t {
		x.ns, x.bytes, x.allocs = x.ns/float64(b.N), x.bytes/float64(b.N), x.allocs/float64(b.N)
	}
	return t
}

// medianRatio returns the median over blocks of num[i]/den[i].
func medianRatio(num, den []time.Duration) float64 {
	var r []float64
	for i := range num {
		if den[i] > 0 {
			r = append(r, float64(num[i])/float64(den[i]))
		}
	}
	if len(r) == 0 {
		return 0
	}
	slices.Sort(r)
	if len(r)%2 == 1 {
		return r[len(r)/2]
	}
	return (r[len(r)/2-1] + r[len(r)/2]) / 2
}

func leaf(b *testing.B, s side) {
	if err := s.run(); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if err := s.run(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkOpenAIGoStreaming reads a 1000-chunk OpenAI SSE stream through
// openai-go and through recourse's native Client.Stream. The leaf
// openai-go-over-recourse is openai-go with the recourse chain as its
// transport (drop-in), for reference.
func BenchmarkOpenAIGoStreaming(b *testing.B) {
	recourse, openaiGo, dropIn := sides(b)
	b.Run("openai-go", func(b *testing.B) { leaf(b, openaiGo) })
	b.Run("recourse", func(b *testing.B) { leaf(b, recourse) })
	b.Run("openai-go-over-recourse", func(b *testing.B) { leaf(b, dropIn) })
	b.Run("ratio", func(b *testing.B) {
		t := compare(b, recourse, openaiGo)
		r, o := t[0], t[1]
		b.ReportMetric(r.ns, "ns/op")
		b.ReportMetric(r.bytes, "B/op")
		b.ReportMetric(r.allocs, "allocs/op")
		b.ReportMetric(o.ns, "openai-go-ns/op")
		b.ReportMetric(o.bytes, "openai-go-B/op")
		b.ReportMetric(o.allocs, "openai-go-allocs/op")
		b.ReportMetric(medianRatio(o.blocks, r.blocks), "x-faster-than-openai-go")
		b.ReportMetric(r.bytes/o.bytes, "x-bytes-vs-openai-go")
		if o.cpu > 0 {
			b.ReportMetric(medianRatio(r.cpus, o.cpus), "x-cpu-vs-openai-go")
		}
	})
}

// TestSides reads the stream once through every side, so a broken
// benchmark fails here rather than measuring an error.
func TestSides(t *testing.T) {
	recourse, openaiGo, dropIn := sides(t)
	for _, s := range []side{recourse, openaiGo, dropIn} {
		if err := s.run(); err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
	}
}
