package proxy

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/recourse-dev/recourse/layers/retry"
	"github.com/recourse-dev/recourse/recoursetest"
)

// BenchmarkProxyVsReverseProxy measures what recourse-proxy costs against
// the plainest proxy the standard library offers: httputil.ReverseProxy
// with FlushInterval -1 (every read flushed), in front of the same
// provider. The provider and both proxies run in the benchmark's process;
// the load generator runs in a separate OS process (the test binary
// re-executed, see loadChild), so that its clients' work counts in neither
// proxy's CPU time nor its allocations. Both proxies reach the provider
// over an HTTP/1.1 transport that keeps 64 idle connections per host (the
// proxy's default, New with a nil Config.Transport).
//
// The provider writes a stream's next frame only after the client
// acknowledged the last one, over a TCP connection of its own (one per
// client), so a frame's time is its latency through the path, not the
// throughput of a buffer, and each frame crosses each proxy as one read,
// one write and one flush, as a real provider's frames, milliseconds
// apart, do. Each iteration runs, for each proxy in rotating order, with
// every client at once: one stream of benchShortFrames frames, one of
// benchLongFrames frames and benchUnaryRequests unary completions one
// after another. The sub-benchmarks (clients=1, clients=16, clients=64)
// report:
//
//   - x-frame-vs-reverseproxy: the median over iterations of recourse's
//     time per frame divided by the reverse proxy's; a stream's time per
//     frame is its first frame to its last divided by the gaps (long
//     streams), and a phase's is the median over its streams;
//     frame-ns, reverseproxy-frame-ns and added-frame-ns are the medians
//     and their difference;
//   - x-unary-vs-reverseproxy: the same for the median latency of a unary
//     request; unary-ns, reverseproxy-unary-ns, added-unary-ns;
//   - allocs-per-frame: the benchmark process's allocations
//     (runtime.MemStats.Mallocs) per frame passed through recourse's proxy,
//     minus the same for the reverse proxy: the allocations recourse-proxy
//     makes per frame beyond what ReverseProxy makes. A figure per frame is
//     marginal: the allocations of the long streams minus those of the
//     short ones, divided by the extra frames, so that a request's fixed
//     cost is not spread over its frames; proxy-allocs-per-frame and
//     reverseproxy-allocs-per-frame are each side's own (the provider's
//     share, the same on both sides, included);
//   - extra-allocs-per-stream and extra-allocs-per-unary: recourse's fixed
//     allocations per streamed request and per unary request beyond the
//     reverse proxy's; extra-B-per-stream and extra-B-per-unary: the same
//     for the bytes allocated (runtime.MemStats.TotalAlloc) per short
//     stream and per unary request;
//   - x-cpu-stream-vs-reverseproxy and x-cpu-unary-vs-reverseproxy: the
//     benchmark process's CPU time (proxy and provider, user and system)
//     over the long streams and over the unary requests, recourse divided
//     by the reverse proxy, medians over iterations (left out where CPU
//     time is not measured);
//   - upstream-new-conns/call and reverseproxy-upstream-new-conns/call:
//     the connections the provider accepted per request (streamed and
//     unary), medians over iterations (0 when the proxy reuses its idle
//     upstream connections);
//   - ns/op: one iteration, both proxies.
//
// No number is asserted. Run it with
//
//	go test -run '^$' -bench BenchmarkProxyVsReverseProxy -benchtime 20x -count 3 ./proxy/
func BenchmarkProxyVsReverseProxy(b *testing.B) {
	for _, n := range []int{1, 16, 64} {
		b.Run("clients="+strconv.Itoa(n), func(b *testing.B) { benchVsReverseProxy(b, n) })
	}
}

// The streams and requests of one phase of BenchmarkProxyVsReverseProxy.
const (
	benchShortFrames   = 8
	benchLongFrames    = 40
	benchUnaryRequests = 4
)

// benchUnaryAnswer is the provider's unary answer.
var benchUnaryAnswer = recoursetest.OpenAIChat("Hello! How can I help you today?")

// ackedProvider is the benchmark's OpenAI-shaped provider: a unary answer,
// or a stream of the requested number of frames, each after the client's
// ack of the one before, read from the client's ack connection.
type ackedProvider struct {
	srv    *httptest.Server
	ln     net.Listener // the ack listener
	events map[int][][]byte

	dials atomic.Int64 // connections the provider accepted

	mu    sync.Mutex
	conns map[string]*ackConn
	open  []net.Conn
}

// ackConn is one client's ack connection, set when it has been accepted.
type ackConn struct {
	ready chan struct{}
	conn  net.Conn
}

func newAckedProvider(tb testing.TB) *ackedProvider {
	tb.Helper()
	p := &ackedProvider{events: map[int][][]byte{}, conns: map[string]*ackConn{}}
	for _, n := range []int{benchShortFrames, benchLongFrames} {
		contents := make([]string, n-4) // OpenAIStream adds a role, a finish, a usage and a [DONE] frame
		for i := range contents {
			contents[i] = "tok" + strconv.Itoa(i)
		}
		for _, ev := range recoursetest.OpenAIStream(contents...) {
			p.events[n] = append(p.events[n], []byte(ev))
		}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	p.ln = ln
	go p.accept()
	p.srv = httptest.NewUnstartedServer(http.HandlerFunc(p.serve))
	p.srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			p.dials.Add(1)
		}
	}
	p.srv.Start()
	tb.Cleanup(p.close)
	return p
}

func (p *ackedProvider) close() {
	p.srv.Close()
	p.ln.Close()
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.open {
		c.Close()
	}
}

// entry returns the ack connection entry named id, creating it.
func (p *ackedProvider) entry(id string) *ackConn {
	p.mu.Lock()
	defer p.mu.Unlock()
	e, ok := p.conns[id]
	if !ok {
		e = &ackConn{ready: make(chan struct{})}
		p.conns[id] = e
	}
	return e
}

// accept registers each ack connection under the 4-byte name it sends.
func (p *ackedProvider) accept() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		p.open = append(p.open, c)
		p.mu.Unlock()
		id := make([]byte, 4)
		if _, err := io.ReadFull(c, id); err != nil {
			c.Close()
			continue
		}
		e := p.entry(string(id))
		select {
		case <-e.ready: // a second connection under one name: only the first counts
			c.Close()
			continue
		default:
		}
		e.conn = c
		close(e.ready)
	}
}

func (p *ackedProvider) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	if !bytes.Contains(body, []byte(`"stream":true`)) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Length", strconv.Itoa(len(benchUnaryAnswer)))
		_, _ = io.WriteString(w, benchUnaryAnswer)
		return
	}
	n, _ := strconv.Atoi(r.Header.Get(headerBenchFrames))
	events, ok := p.events[n]
	if !ok {
		http.Error(w, "no stream of "+strconv.Itoa(n)+" frames", http.StatusBadRequest)
		return
	}
	e := p.entry(r.Header.Get(headerBenchClient))
	select {
	case <-e.ready:
	case <-r.Context().Done():
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	rc := http.NewResponseController(w)
	var one [1]byte
	for i, ev := range events {
		if _, err := w.Write(ev); err != nil {
			return
		}
		if rc.Flush() != nil {
			return
		}
		if i == len(events)-1 {
			return // the body ends with its last frame, as a provider's does
		}
		if i == 0 {
			// The role chunk: a recovering proxy holds it until the first
			// output (R13.9), so neither side waits on it.
			continue
		}
		if _, err := io.ReadFull(e.conn, one[:]); err != nil {
			return
		}
	}
}

// loadProcess is the load generator's process.
type loadProcess struct {
	cmd    *exec.Cmd
	in     io.WriteCloser
	out    *json.Decoder
	stderr bytes.Buffer
}

func startLoadProcess(tb testing.TB, ackAddr string) *loadProcess {
	tb.Helper()
	lp := &loadProcess{cmd: exec.Command(os.Args[0], "-test.run=^$")}
	lp.cmd.Env = append(os.Environ(), loadChildEnv+"="+ackAddr)
	lp.cmd.Stderr = &lp.stderr
	in, err := lp.cmd.StdinPipe()
	if err != nil {
		tb.Fatal(err)
	}
	out, err := lp.cmd.StdoutPipe()
	if err != nil {
		tb.Fatal(err)
	}
	lp.in, lp.out = in, json.NewDecoder(out)
	if err := lp.cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		_ = json.NewEncoder(lp.in).Encode(loadCommand{Op: "quit"})
		lp.in.Close()
		if err := lp.cmd.Wait(); err != nil {
			tb.Errorf("load generator: %v: %s", err, lp.stderr.String())
		}
	})
	return lp
}

// do runs one phase in the load generator and returns its report.
func (lp *loadProcess) do(cmd loadCommand) (loadReport, error) {
	if err := json.NewEncoder(lp.in).Encode(cmd); err != nil {
		return loadReport{}, fmt.Errorf("load generator: %w: %s", err, lp.stderr.String())
	}
	var rep loadReport
	if err := lp.out.Decode(&rep); err != nil {
		return loadReport{}, fmt.Errorf("load generator: %w: %s", err, lp.stderr.String())
	}
	if rep.Err != "" {
		return rep, fmt.Errorf("load generator, %s to %s: %s", cmd.Op, cmd.URL, rep.Err)
	}
	return rep, nil
}

// proxyPhases is what one iteration measured on one proxy.
type proxyPhases struct {
	frameNS, unaryNS        float64
	shortAllocs, longAllocs float64 // per stream
	unaryAllocs             float64 // per request
	streamCPU, unaryCPU     time.Duration
	upstreamConns           float64 // per request
	shortBytes, unaryBytes  float64 // allocated per short stream, per unary request
}

// measure runs one iteration's phases against base with n clients.
func measure(lp *loadProcess, p *ackedProvider, base string, n int) (proxyPhases, error) {
	var ph proxyPhases
	d0 := p.dials.Load()
	var ms runtime.MemStats
	mallocs := func() uint64 { runtime.ReadMemStats(&ms); return ms.Mallocs }
	m0, b0 := mallocs(), ms.TotalAlloc
	if _, err := lp.do(loadCommand{Op: "stream", URL: base, Clients: n, Frames: benchShortFrames}); err != nil {
		return ph, err
	}
	m1, b1, c1 := mallocs(), ms.TotalAlloc, cpuTime()
	long, err := lp.do(loadCommand{Op: "stream", URL: base, Clients: n, Frames: benchLongFrames})
	if err != nil {
		return ph, err
	}
	m2, b2, c2 := mallocs(), ms.TotalAlloc, cpuTime()
	unary, err := lp.do(loadCommand{Op: "unary", URL: base, Clients: n, Requests: benchUnaryRequests})
	if err != nil {
		return ph, err
	}
	m3, b3, c3 := mallocs(), ms.TotalAlloc, cpuTime()
	ph.frameNS, ph.unaryNS = long.FrameNS, unary.UnaryNS
	ph.shortAllocs = float64(m1-m0) / float64(n)
	ph.longAllocs = float64(m2-m1) / float64(n)
	ph.unaryAllocs = float64(m3-m2) / float64(n*benchUnaryRequests)
	ph.streamCPU, ph.unaryCPU = c2-c1, c3-c2
	ph.shortBytes = float64(b1-b0) / float64(n)
	ph.unaryBytes = float64(b3-b2) / float64(n*benchUnaryRequests)
	ph.upstreamConns = float64(p.dials.Load()-d0) / float64(n*(2+benchUnaryRequests))
	return ph, nil
}

// perFrame is a side's marginal allocations per frame.
func (ph proxyPhases) perFrame() float64 {
	return (ph.longAllocs - ph.shortAllocs) / float64(benchLongFrames-benchShortFrames)
}

// perStream is a side's fixed allocations per streamed request.
func (ph proxyPhases) perStream() float64 {
	return ph.shortAllocs - benchShortFrames*ph.perFrame()
}

// reverseProxyTo returns the baseline: httputil.ReverseProxy to upstream
// with FlushInterval -1, over a transport with the proxy's default pool.
// Its outgoing request bodies are wrapped in a forwardBody, as the proxy's
// own forwarded requests are: without it the Transport's late read of a
// request body that the server has closed (golang/go#40747) now and then
// tears down the upstream connection of a streaming answer, and the
// baseline fails rather than measures.
func reverseProxyTo(upstream string) (*httputil.ReverseProxy, *http.Transport, error) {
	u, err := url.Parse(upstream)
	if err != nil {
		return nil, nil, err
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.ForceAttemptHTTP2 = false
	tr.MaxIdleConnsPerHost = 64
	return &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(u)
			pr.Out.Host = ""
			if pr.Out.Body != nil {
				pr.Out.Body = &forwardBody{rc: pr.Out.Body}
			}
		},
		Transport:     tr,
		FlushInterval: -1,
	}, tr, nil
}

func benchVsReverseProxy(b *testing.B, n int) {
	p := newAckedProvider(b)
	h, err := New(Config{Provider: "openai", Upstream: p.srv.URL, Policy: retry.Recommended()})
	if err != nil {
		b.Fatal(err)
	}
	px := httptest.NewServer(h)
	b.Cleanup(px.Close)
	b.Cleanup(h.chain.CloseIdleConnections)
	rp, rpTr, err := reverseProxyTo(p.srv.URL)
	if err != nil {
		b.Fatal(err)
	}
	rps := httptest.NewServer(rp)
	b.Cleanup(rps.Close)
	b.Cleanup(rpTr.CloseIdleConnections)
	lp := startLoadProcess(b, p.ln.Addr().String())

	sides := []string{px.URL, rps.URL} // recourse, reverse proxy
	for _, s := range sides {          // warm every connection
		if _, err := measure(lp, p, s, n); err != nil {
			b.Fatal(err)
		}
	}
	var (
		got                          [2][]proxyPhases
		xFrame, xUnary, xCPUS, xCPUU []float64
		iter                         int
	)
	for b.Loop() {
		var ph [2]proxyPhases
		for k := range 2 {
			i := (k + iter) % 2 // rotate the order
			if ph[i], err = measure(lp, p, sides[i], n); err != nil {
				b.Fatal(err)
			}
			got[i] = append(got[i], ph[i])
		}
		iter++
		xFrame = append(xFrame, ph[0].frameNS/ph[1].frameNS)
		xUnary = append(xUnary, ph[0].unaryNS/ph[1].unaryNS)
		if ph[1].streamCPU > 0 && ph[1].unaryCPU > 0 {
			xCPUS = append(xCPUS, float64(ph[0].streamCPU)/float64(ph[1].streamCPU))
			xCPUU = append(xCPUU, float64(ph[0].unaryCPU)/float64(ph[1].unaryCPU))
		}
	}
	med := func(side int, f func(proxyPhases) float64) float64 {
		v := make([]float64, len(got[side]))
		for i, ph := range got[side] {
			v[i] = f(ph)
		}
		return medianF(v)
	}
	frame := func(ph proxyPhases) float64 { return ph.frameNS }
	unary := func(ph proxyPhases) float64 { return ph.unaryNS }
	perFrame := func(ph proxyPhases) float64 { return ph.perFrame() }
	perStream := func(ph proxyPhases) float64 { return ph.perStream() }
	perUnary := func(ph proxyPhases) float64 { return ph.unaryAllocs }
	conns := func(ph proxyPhases) float64 { return ph.upstreamConns }
	streamBytes := func(ph proxyPhases) float64 { return ph.shortBytes }
	unaryBytes := func(ph proxyPhases) float64 { return ph.unaryBytes }

	b.ReportMetric(medianF(xFrame), "x-frame-vs-reverseproxy")
	b.ReportMetric(med(0, frame), "frame-ns")
	b.ReportMetric(med(1, frame), "reverseproxy-frame-ns")
	b.ReportMetric(med(0, frame)-med(1, frame), "added-frame-ns")
	b.ReportMetric(medianF(xUnary), "x-unary-vs-reverseproxy")
	b.ReportMetric(med(0, unary), "unary-ns")
	b.ReportMetric(med(1, unary), "reverseproxy-unary-ns")
	b.ReportMetric(med(0, unary)-med(1, unary), "added-unary-ns")
	b.ReportMetric(med(0, perFrame)-med(1, perFrame), "allocs-per-frame")
	b.ReportMetric(med(0, perFrame), "proxy-allocs-per-frame")
	b.ReportMetric(med(1, perFrame), "reverseproxy-allocs-per-frame")
	b.ReportMetric(med(0, perStream)-med(1, perStream), "extra-allocs-per-stream")
	b.ReportMetric(med(0, perUnary)-med(1, perUnary), "extra-allocs-per-unary")
	b.ReportMetric(med(0, streamBytes)-med(1, streamBytes), "extra-B-per-stream")
	b.ReportMetric(med(0, unaryBytes)-med(1, unaryBytes), "extra-B-per-unary")
	b.ReportMetric(med(0, conns), "upstream-new-conns/call")
	b.ReportMetric(med(1, conns), "reverseproxy-upstream-new-conns/call")
	if len(xCPUS) > 0 {
		b.ReportMetric(medianF(xCPUS), "x-cpu-stream-vs-reverseproxy")
		b.ReportMetric(medianF(xCPUU), "x-cpu-unary-vs-reverseproxy")
	}
}
