package proxy

import (
	"bufio"
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/recourse-dev/recourse/layers/retry"
	"github.com/recourse-dev/recourse/recoursetest"
)

// benchHeldStreams is the number of streams BenchmarkProxyHeldStreams holds
// open at once.
var benchHeldStreams = flag.Int("proxy.streams", 1000, "streams BenchmarkProxyHeldStreams holds open at once")

// benchHeldPrompt is the size of the user message of each stream's
// request in BenchmarkProxyHeldStreams: a proxy that keeps the request for
// a stream's life holds it once per stream.
var benchHeldPrompt = flag.Int("proxy.prompt", 8<<10, "bytes of the user message of each BenchmarkProxyHeldStreams request")

// BenchmarkProxyHeldStreams measures the memory an in-flight stream costs
// in recourse-proxy against httputil.ReverseProxy (the baseline of
// BenchmarkProxyVsReverseProxy), in one run, on loopback. Each iteration
// opens N streams (the -proxy.streams flag, 1000 by default), each with a
// user message of the -proxy.prompt flag's bytes (8 KiB by default), at once,
// directly to a gated provider, then through each proxy in rotating order.
// The provider writes each stream's first frames and then holds the body
// open until every one of the N clients has read them: with all streams
// held mid-body, the benchmark collects garbage and reads
// runtime.MemStats (HeapInuse, StackInuse) and runtime.NumGoroutine, then
// opens the gate and waits for every stream to end. A side's figure is its
// growth over the same figures read before its streams opened, divided by
// N, minus the direct side's (the clients' and the provider's share, the
// same on every side), so that it is the proxy's own. It reports, medians
// over iterations:
//
//   - heap-B/stream, reverseproxy-heap-B/stream: heap in use per stream;
//   - stack-B/stream, reverseproxy-stack-B/stream: goroutine stacks;
//   - mem-B/stream, reverseproxy-mem-B/stream: the two together;
//   - x-mem-per-stream-vs-reverseproxy: recourse's mem-B/stream divided
//     by the reverse proxy's; x-heap-per-stream-vs-reverseproxy the same
//     for the heap alone;
//   - goroutines/stream, reverseproxy-goroutines/stream.
//
// No number is asserted. Run it with
//
//	go test -run '^$' -bench BenchmarkProxyHeldStreams -benchtime 5x ./proxy/
func BenchmarkProxyHeldStreams(b *testing.B) {
	n := *benchHeldStreams
	if n < 1 {
		b.Fatalf("-proxy.streams %d: want at least 1", n)
	}
	b.Run("streams="+strconv.Itoa(n), func(b *testing.B) { benchHeldStreamsN(b, n) })
}

// heldFrames is how many of its frames the gated provider writes before it
// holds a stream.
const heldFrames = 2

// gatedUpstream is an OpenAI-shaped provider that writes a stream's first
// heldFrames frames and the rest only once its gate is open.
type gatedUpstream struct {
	srv    *httptest.Server
	events []string
	mu     sync.Mutex
	gate   chan struct{}
}

func newGatedUpstream(tb testing.TB) *gatedUpstream {
	u := &gatedUpstream{events: recoursetest.OpenAIStream("Hello", "!", " How", " can", " I", " help", "?")}
	u.srv = httptest.NewServer(http.HandlerFunc(u.serve))
	tb.Cleanup(u.srv.Close)
	return u
}

// arm returns a new closed-until-opened gate for the next round.
func (u *gatedUpstream) arm() chan struct{} {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.gate = make(chan struct{})
	return u.gate
}

func (u *gatedUpstream) serve(w http.ResponseWriter, r *http.Request) {
	_, _ = io.Copy(io.Discard, r.Body)
	u.mu.Lock()
	gate := u.gate
	u.mu.Unlock()
	w.Header().Set("Content-Type", "text/event-stream")
	rc := http.NewResponseController(w)
	for i, ev := range u.events {
		if i == heldFrames {
			select {
			case <-gate:
			case <-r.Context().Done():
				return
			}
		}
		if _, err := io.WriteString(w, ev); err != nil {
			return
		}
		if rc.Flush() != nil {
			return
		}
	}
}

// heldFigures is one side's growth per stream with every stream held.
type heldFigures struct {
	heap, stack, goroutines float64
}

func (f heldFigures) minus(g heldFigures) heldFigures {
	return heldFigures{heap: f.heap - g.heap, stack: f.stack - g.stack, goroutines: f.goroutines - g.goroutines}
}

// settledMem collects garbage (twice, so that sync.Pool's victims go too)
// and returns the heap and stacks in use and the goroutines.
func settledMem() (heap, stack uint64, goroutines int) {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapInuse, ms.StackInuse, runtime.NumGoroutine()
}

// holdStreams opens n streams to base at once, measures with all of them
// held after heldFrames frames, releases them and waits for their ends.
// reset closes the idle connections of the side's transports afterwards,
// so that every round starts from the same state.
func holdStreams(u *gatedUpstream, base, body string, n int, reset func()) (heldFigures, error) {
	tr := &http.Transport{MaxIdleConnsPerHost: n, DisableCompression: true}
	c := &http.Client{Transport: tr}
	defer func() { tr.CloseIdleConnections(); reset() }()
	gate := u.arm()
	h0, s0, g0 := settledMem()
	var held, done sync.WaitGroup
	held.Add(n)
	errs := make([]error, n)
	for i := range n {
		done.Go(func() {
			heldOnce := sync.OnceFunc(held.Done)
			defer heldOnce()
			errs[i] = heldStream(c, base, body, len(u.events), heldOnce)
		})
	}
	held.Wait()
	h1, s1, g1 := settledMem()
	close(gate)
	done.Wait()
	if err := errors.Join(errs...); err != nil {
		return heldFigures{}, err
	}
	per := func(a, b uint64) float64 { return (float64(a) - float64(b)) / float64(n) }
	return heldFigures{heap: per(h1, h0), stack: per(s1, s0), goroutines: float64(g1-g0) / float64(n)}, nil
}

// heldStream runs one streaming request of body to base, calls held once
// it read heldFrames frames, and reads the rest, want frames in all.
func heldStream(c *http.Client, base, body string, want int, held func()) error {
	req, err := http.NewRequest(http.MethodPost, base+"/v1/chat/completions", strings.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("status %d", resp.StatusCode)
	}
	br := bufio.NewReader(resp.Body)
	frames := 0
	for {
		line, err := br.ReadSlice('\n')
		if err == io.EOF && frames == want {
			return nil
		}
		if err != nil {
			return fmt.Errorf("after %d frames: %w", frames, err)
		}
		if len(bytes.TrimSpace(line)) != 0 {
			continue
		}
		if frames++; frames == heldFrames {
			held()
		}
	}
}

func benchHeldStreamsN(b *testing.B, n int) {
	if *benchHeldPrompt < 0 {
		b.Fatalf("-proxy.prompt %d: want 0 or more", *benchHeldPrompt)
	}
	body := `{"model":"gpt-4o-mini","stream":true,"messages":[{"role":"user","content":"` +
		strings.Repeat("a", *benchHeldPrompt) + `"}]}`
	u := newGatedUpstream(b)
	h, err := New(Config{Provider: "openai", Upstream: u.srv.URL, Policy: retry.Recommended()})
	if err != nil {
		b.Fatal(err)
	}
	px := httptest.NewServer(h)
	b.Cleanup(px.Close)
	b.Cleanup(h.chain.CloseIdleConnections)
	rp, rpTr, err := reverseProxyTo(u.srv.URL)
	if err != nil {
		b.Fatal(err)
	}
	rps := httptest.NewServer(rp)
	b.Cleanup(rps.Close)
	b.Cleanup(rpTr.CloseIdleConnections)

	sides := []struct {
		url   string
		reset func()
	}{
		{u.srv.URL, func() {}},                 // direct
		{px.URL, h.chain.CloseIdleConnections}, // recourse
		{rps.URL, rpTr.CloseIdleConnections},   // reverse proxy
	}
	for _, s := range sides { // warm every path
		if _, err := holdStreams(u, s.url, body, min(n, 16), s.reset); err != nil {
			b.Fatal(err)
		}
	}
	var (
		got  [2][]heldFigures // recourse, reverse proxy: their own share
		iter int
	)
	for b.Loop() {
		direct, err := holdStreams(u, sides[0].url, body, n, sides[0].reset)
		if err != nil {
			b.Fatalf("direct, iteration %d: %v", iter, err)
		}
		for k := range 2 {
			i := (k + iter) % 2 // rotate the order
			f, err := holdStreams(u, sides[1+i].url, body, n, sides[1+i].reset)
			if err != nil {
				b.Fatalf("side %d, iteration %d: %v", i, iter, err)
			}
			got[i] = append(got[i], f.minus(direct))
		}
		iter++
	}
	med := func(side int, f func(heldFigures) float64) float64 {
		v := make([]float64, len(got[side]))
		for i, g := range got[side] {
			v[i] = f(g)
		}
		return medianF(v)
	}
	heap := func(f heldFigures) float64 { return f.heap }
	stack := func(f heldFigures) float64 { return f.stack }
	mem := func(f heldFigures) float64 { return f.heap + f.stack }
	gor := func(f heldFigures) float64 { return f.goroutines }
	b.ReportMetric(med(0, heap), "heap-B/stream")
	b.ReportMetric(med(1, heap), "reverseproxy-heap-B/stream")
	b.ReportMetric(med(0, stack), "stack-B/stream")
	b.ReportMetric(med(1, stack), "reverseproxy-stack-B/stream")
	b.ReportMetric(med(0, mem), "mem-B/stream")
	b.ReportMetric(med(1, mem), "reverseproxy-mem-B/stream")
	b.ReportMetric(med(0, mem)/med(1, mem), "x-mem-per-stream-vs-reverseproxy")
	b.ReportMetric(med(0, heap)/med(1, heap), "x-heap-per-stream-vs-reverseproxy")
	b.ReportMetric(med(0, gor), "goroutines/stream")
	b.ReportMetric(med(1, gor), "reverseproxy-goroutines/stream")
}
