package proxy

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/recourse-dev/recourse/layers/retry"
	"github.com/recourse-dev/recourse/recoursetest"
)

// BenchmarkProxyStreams measures N concurrent streaming clients through
// the proxy against the same clients connected to the provider directly,
// in one run, on loopback. The provider sends each frame only after the
// client acknowledged the previous one (over an in-process channel), so a
// frame's time is its latency through the path, not the throughput of a
// buffer. Each iteration runs one round of N clients on each side, in
// alternating order; the reported ratios are medians over iterations of
// the proxy side divided by the direct side:
//
//   - ttfb-ns, direct-ttfb-ns, x-ttfb-vs-direct: request sent to first
//     frame read (medians over a round's clients);
//   - frame-ns, direct-frame-ns, x-frame-vs-direct: the gap between two
//     frames (the provider's write after the ack to the client's read);
//   - added-ttfb-ns, added-frame-ns: proxy minus direct, in nanoseconds;
//   - ns/op: one proxy round.
//
// No number is asserted. Run it with
//
//	go test -run '^$' -bench BenchmarkProxyStreams -benchtime 200x ./proxy/
func BenchmarkProxyStreams(b *testing.B) {
	for _, n := range []int{1, 16, 64} {
		b.Run("clients="+strconv.Itoa(n), func(b *testing.B) { benchStreams(b, n) })
	}
}

const benchFrames = 20

// pacedUpstream is an OpenAI-shaped provider that writes a stream's next
// frame only after the stream's client acknowledged the last one.
type pacedUpstream struct {
	srv    *httptest.Server
	events []string
	mu     sync.Mutex
	acks   map[string]chan struct{}
}

func newPacedUpstream(tb testing.TB) *pacedUpstream {
	contents := make([]string, benchFrames)
	for i := range contents {
		contents[i] = "tok" + strconv.Itoa(i)
	}
	u := &pacedUpstream{events: recoursetest.OpenAIStream(contents...), acks: map[string]chan struct{}{}}
	u.srv = httptest.NewServer(http.HandlerFunc(u.serve))
	tb.Cleanup(u.srv.Close)
	return u
}

func (u *pacedUpstream) ack(id string) chan struct{} {
	u.mu.Lock()
	defer u.mu.Unlock()
	ch, ok := u.acks[id]
	if !ok {
		ch = make(chan struct{}, 1)
		u.acks[id] = ch
	}
	return ch
}

func (u *pacedUpstream) serve(w http.ResponseWriter, r *http.Request) {
	io.Copy(io.Discard, r.Body)
	ack := u.ack(r.Header.Get("X-Bench-Stream"))
	w.Header().Set("Content-Type", "text/event-stream")
	rc := http.NewResponseController(w)
	for i, ev := range u.events {
		if _, err := io.WriteString(w, ev); err != nil {
			return
		}
		if rc.Flush() != nil {
			return
		}
		if i == len(u.events)-1 {
			return // the body ends with its last frame, as a provider's does
		}
		if i == 0 {
			// The role chunk: a recovering proxy holds it until the first
			// output (R13.9), so neither side waits on it.
			continue
		}
		select {
		case <-ack:
		case <-r.Context().Done():
			return
		}
	}
}

// streamTimes is one client's measurement.
type streamTimes struct {
	ttfb  time.Duration
	frame time.Duration // median gap between frames
}

// openStream runs one streaming request to base and acknowledges every
// frame but the role chunk and the last.
func openStream(c *http.Client, base string, u *pacedUpstream, id string) (streamTimes, error) {
	ack := u.ack(id)
	req, err := http.NewRequest(http.MethodPost, base+"/v1/chat/completions", strings.NewReader(streamBody))
	if err != nil {
		return streamTimes{}, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Bench-Stream", id)
	start := time.Now()
	resp, err := c.Do(req)
	if err != nil {
		return streamTimes{}, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		return streamTimes{}, fmt.Errorf("status %d", resp.StatusCode)
	}
	br := bufio.NewReader(resp.Body)
	var t streamTimes
	var gaps []time.Duration
	last := start
	frames := 0
	for {
		line, err := br.ReadSlice('\n')
		if err != nil {
			if err == io.EOF && frames == len(u.events) {
				break
			}
			return streamTimes{}, fmt.Errorf("after %d frames: %w", frames, err)
		}
		if len(bytes.TrimSpace(line)) != 0 {
			continue
		}
		now := time.Now()
		if frames > 0 && frames < len(u.events)-1 {
			ack <- struct{}{}
		}
		switch {
		case frames == 0:
			t.ttfb = now.Sub(start)
		case frames > 1: // the role chunk and the first output come together through a proxy
			gaps = append(gaps, now.Sub(last))
		}
		last = now
		frames++
	}
	t.frame = medianDur(gaps)
	return t, nil
}

// round runs n concurrent streams against base and returns the medians of
// their times.
func round(c *http.Client, base string, u *pacedUpstream, n int, tag string) (streamTimes, error) {
	var wg sync.WaitGroup
	res := make([]streamTimes, n)
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() { res[i], errs[i] = openStream(c, base, u, tag+strconv.Itoa(i)) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return streamTimes{}, err
	}
	var ttfb, frame []time.Duration
	for _, r := range res {
		ttfb = append(ttfb, r.ttfb)
		frame = append(frame, r.frame)
	}
	return streamTimes{ttfb: medianDur(ttfb), frame: medianDur(frame)}, nil
}

func medianDur(d []time.Duration) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2]
}

func medianF(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	return s[len(s)/2]
}

func benchStreams(b *testing.B, n int) {
	u := newPacedUpstream(b)
	h, err := New(Config{Provider: "openai", Upstream: u.srv.URL, Policy: retry.Recommended()})
	if err != nil {
		b.Fatal(err)
	}
	px := httptest.NewServer(h)
	defer px.Close()
	defer h.chain.CloseIdleConnections()
	tr := &http.Transport{MaxIdleConnsPerHost: 128, DisableCompression: true}
	defer tr.CloseIdleConnections()
	c := &http.Client{Transport: tr}
	sides := []struct{ name, url string }{{"direct", u.srv.URL}, {"proxy", px.URL}}
	// Warm both paths' connections.
	for _, s := range sides {
		if _, err := round(c, s.url, u, n, s.name+"-warm-"); err != nil {
			b.Fatal(err)
		}
	}
	var (
		rTTFB, rFrame  []float64
		pTTFB, dTTFB   []float64
		pFrame, dFrame []float64
		proxyNS        time.Duration
		iter           int
	)
	for b.Loop() {
		var got [2]streamTimes
		for k := range 2 {
			i := (k + iter) % 2 // rotate the order
			start := time.Now()
			t, err := round(c, sides[i].url, u, n, fmt.Sprintf("%s-%d-", sides[i].name, iter))
			if err != nil {
				b.Fatalf("%s, iteration %d: %v", sides[i].name, iter, err)
			}
			if i == 1 {
				proxyNS += time.Since(start)
			}
			got[i] = t
		}
		iter++
		d, p := got[0], got[1]
		dTTFB, pTTFB = append(dTTFB, float64(d.ttfb)), append(pTTFB, float64(p.ttfb))
		dFrame, pFrame = append(dFrame, float64(d.frame)), append(pFrame, float64(p.frame))
		rTTFB = append(rTTFB, float64(p.ttfb)/float64(d.ttfb))
		rFrame = append(rFrame, float64(p.frame)/float64(d.frame))
	}
	b.ReportMetric(float64(proxyNS.Nanoseconds())/float64(iter), "ns/op")
	b.ReportMetric(medianF(pTTFB), "ttfb-ns")
	b.ReportMetric(medianF(dTTFB), "direct-ttfb-ns")
	b.ReportMetric(medianF(rTTFB), "x-ttfb-vs-direct")
	b.ReportMetric(medianF(pTTFB)-medianF(dTTFB), "added-ttfb-ns")
	b.ReportMetric(medianF(pFrame), "frame-ns")
	b.ReportMetric(medianF(dFrame), "direct-frame-ns")
	b.ReportMetric(medianF(rFrame), "x-frame-vs-direct")
	b.ReportMetric(medianF(pFrame)-medianF(dFrame), "added-frame-ns")
}
