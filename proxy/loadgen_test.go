package proxy

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// The load generator of BenchmarkProxyVsReverseProxy runs in its own OS
// process: the test binary re-executed with loadChildEnv set to the
// address of the benchmark's ack listener. It reads one loadCommand per
// line on its standard input and answers each with one loadReport line on
// its standard output, so that the clients' work is not counted in the
// proxies' process (its CPU time, its allocations).
const loadChildEnv = "RECOURSE_PROXY_LOADGEN_ACK"

// Request headers the provider of the benchmark reads: the client's
// number, which names its ack connection, and the frames to stream.
const (
	headerBenchClient = "X-Bench-Client"
	headerBenchFrames = "X-Bench-Frames"
)

// loadCommand is one measured phase: Clients clients at once against URL,
// each making one stream of Frames frames (Op "stream") or Requests unary
// requests one after another (Op "unary"). Op "quit" ends the child.
type loadCommand struct {
	Op       string `json:"op"`
	URL      string `json:"url"`
	Clients  int    `json:"clients"`
	Frames   int    `json:"frames,omitempty"`
	Requests int    `json:"requests,omitempty"`
}

// loadReport is the child's answer to a command.
type loadReport struct {
	// FrameNS is the median over the phase's streams of the stream's mean
	// gap between two frames (first frame to last, divided by the gaps).
	FrameNS float64 `json:"frame_ns,omitempty"`
	// UnaryNS is the median latency of the phase's unary requests.
	UnaryNS float64 `json:"unary_ns,omitempty"`
	// Frames is the number of frames the phase's streams read.
	Frames int    `json:"frames,omitempty"`
	Err    string `json:"err,omitempty"`
}

// loadChild is the child process's main: it returns the exit code.
func loadChild() int {
	g := &loadGen{ackAddr: os.Getenv(loadChildEnv)}
	tr := &http.Transport{MaxIdleConnsPerHost: 256, DisableCompression: true}
	defer tr.CloseIdleConnections()
	g.client = &http.Client{Transport: tr}
	defer g.closeAcks()
	in := bufio.NewScanner(os.Stdin)
	out := json.NewEncoder(os.Stdout)
	for in.Scan() {
		var cmd loadCommand
		if err := json.Unmarshal(in.Bytes(), &cmd); err != nil {
			fmt.Fprintln(os.Stderr, "loadgen: bad command:", err)
			return 2
		}
		if cmd.Op == "quit" {
			return 0
		}
		rep := g.run(cmd)
		if err := out.Encode(rep); err != nil {
			fmt.Fprintln(os.Stderr, "loadgen:", err)
			return 2
		}
	}
	return 0
}

// loadGen is the child's state: its HTTP client and one ack connection
// per client number, kept across phases.
type loadGen struct {
	ackAddr string
	client  *http.Client
	acks    []net.Conn
}

// ack returns client i's ack connection, dialing it on first use and
// naming it with the client's 4-byte number.
func (g *loadGen) ack(i int) (net.Conn, error) {
	for len(g.acks) <= i {
		g.acks = append(g.acks, nil)
	}
	if g.acks[i] != nil {
		return g.acks[i], nil
	}
	c, err := net.Dial("tcp", g.ackAddr)
	if err != nil {
		return nil, err
	}
	if _, err := io.WriteString(c, ackID(i)); err != nil {
		c.Close()
		return nil, err
	}
	g.acks[i] = c
	return c, nil
}

func (g *loadGen) closeAcks() {
	for _, c := range g.acks {
		if c != nil {
			c.Close()
		}
	}
}

// ackID is client i's name on its ack connection and in headerBenchClient.
func ackID(i int) string { return fmt.Sprintf("%04d", i%10000) }

func (g *loadGen) run(cmd loadCommand) loadReport {
	n := cmd.Clients
	acks := make([]net.Conn, n)
	if cmd.Op == "stream" {
		for i := range n {
			c, err := g.ack(i)
			if err != nil {
				return loadReport{Err: err.Error()}
			}
			acks[i] = c
		}
	}
	var wg sync.WaitGroup
	errs := make([]error, n)
	frames := make([]float64, n)
	unary := make([][]float64, n)
	for i := range n {
		wg.Go(func() {
			switch cmd.Op {
			case "stream":
				frames[i], errs[i] = g.stream(cmd, i, acks[i])
			case "unary":
				unary[i], errs[i] = g.unary(cmd, i)
			default:
				errs[i] = errors.New("unknown op " + strconv.Quote(cmd.Op))
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return loadReport{Err: err.Error()}
	}
	if cmd.Op == "stream" {
		return loadReport{FrameNS: medianF(frames), Frames: n * cmd.Frames}
	}
	return loadReport{UnaryNS: medianF(slices.Concat(unary...))}
}

// stream reads one stream of cmd.Frames frames, acknowledging every frame
// but the first (the role chunk, which a recovering proxy holds until the
// first output, R13.9, so the provider does not wait for it) and the last
// on ack, and returns its mean gap between the frames from the second on.
func (g *loadGen) stream(cmd loadCommand, i int, ack net.Conn) (float64, error) {
	req, err := http.NewRequest(http.MethodPost, cmd.URL+"/v1/chat/completions", strings.NewReader(streamBody))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(headerBenchClient, ackID(i))
	req.Header.Set(headerBenchFrames, strconv.Itoa(cmd.Frames))
	resp, err := g.client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("stream: HTTP %d", resp.StatusCode)
	}
	br := bufio.NewReader(resp.Body)
	var first, last time.Time
	got := 0
	one := []byte{'a'}
	for {
		line, err := br.ReadSlice('\n')
		if err == io.EOF && len(line) == 0 && got == cmd.Frames {
			break
		}
		if err != nil {
			return 0, fmt.Errorf("stream: after %d of %d frames: %w", got, cmd.Frames, err)
		}
		if len(bytes.TrimSpace(line)) != 0 {
			continue // a line of the frame; a blank line ends it
		}
		last = time.Now()
		if got == 1 {
			first = last
		}
		got++
		if got > 1 && got < cmd.Frames {
			if _, err := ack.Write(one); err != nil {
				return 0, err
			}
		}
	}
	return float64(last.Sub(first)) / float64(cmd.Frames-2), nil
}

// unaryBody is the benchmark's unary completion request.
const unaryBody = `{"model":"gpt-4o-mini","messages":[{"role":"user","content":"hello"}]}`

// unary makes cmd.Requests unary completions one after another and returns
// their latencies.
func (g *loadGen) unary(cmd loadCommand, i int) ([]float64, error) {
	lat := make([]float64, 0, cmd.Requests)
	for range cmd.Requests {
		req, err := http.NewRequest(http.MethodPost, cmd.URL+"/v1/chat/completions", strings.NewReader(unaryBody))
		if err != nil {
			return nil, err
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set(headerBenchClient, ackID(i))
		start := time.Now()
		resp, err := g.client.Do(req)
		if err != nil {
			return nil, err
		}
		n, err := io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		lat = append(lat, float64(time.Since(start)))
		if err != nil {
			return nil, err
		}
		if resp.StatusCode != http.StatusOK || n != int64(len(benchUnaryAnswer)) {
			return nil, fmt.Errorf("unary: HTTP %d, %d bytes", resp.StatusCode, n)
		}
	}
	return lat, nil
}
