package retry_test

// R12.2 streaming capture: one response snapshot per received byte chunk
// with the exact bytes, then an empty end marker whose Complete reports HTTP
// EOF; the capture sequence restarts at 0 every attempt, and concatenating
// an attempt's chunks rebuilds the bytes the server sent.
//
// "Received byte chunk" is made observable: the chain's base transport logs
// every Read of every response body (the bytes the wire plane received, in
// the pieces it received them), and each chunk snapshot must be exactly one
// of those reads, in order.
//
// Observed and pinned down here: a semantic terminal frame ([DONE], Ollama's
// done line) ends consumption as soon as it is decoded. When the server
// holds the connection open after it, HTTP EOF never arrives and the end
// marker has Complete=false. When the server ends the body right after it,
// Complete depends on whether the terminating zero-length chunk arrived in
// the same read as the terminal frame (net/http then returns the data with
// io.EOF): that case is logged, not asserted. A keepalive-only body that ends
// cleanly gives Complete=true; a cut body gives Complete=false.

import (
	"context"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/recourse-dev/recourse/chain"
	"github.com/recourse-dev/recourse/client"
	"github.com/recourse-dev/recourse/event"
	"github.com/recourse-dev/recourse/internal/rigtest"
	"github.com/recourse-dev/recourse/layer"
	"github.com/recourse-dev/recourse/recoursetest"
)

// scReadLog is a base transport that logs the bytes of every response body
// Read, per request in the order the requests were sent.
type scReadLog struct {
	base  *http.Transport
	mu    sync.Mutex
	reads [][][]byte
}

func (l *scReadLog) RoundTrip(req *http.Request) (*http.Response, error) {
	l.mu.Lock()
	idx := len(l.reads)
	l.reads = append(l.reads, nil)
	l.mu.Unlock()
	resp, err := l.base.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	resp.Body = &scLoggedBody{rc: resp.Body, l: l, idx: idx}
	return resp, nil
}

func (l *scReadLog) attempt(i int) [][]byte {
	l.mu.Lock()
	defer l.mu.Unlock()
	if i >= len(l.reads) {
		return nil
	}
	return append([][]byte(nil), l.reads[i]...)
}

type scLoggedBody struct {
	rc  io.ReadCloser
	l   *scReadLog
	idx int
}

func (b *scLoggedBody) Read(p []byte) (int, error) {
	n, err := b.rc.Read(p)
	if n > 0 {
		b.l.mu.Lock()
		b.l.reads[b.idx] = append(b.l.reads[b.idx], append([]byte(nil), p[:n]...))
		b.l.mu.Unlock()
	}
	return n, err
}

func (b *scLoggedBody) Close() error { return b.rc.Close() }

// scCaptureRig is a scripted server and a default chain whose policy
// records events and captures, over a logging base transport.
type scCaptureRig struct {
	srv    *recoursetest.Server
	rec    *rigtest.Recorder
	log    *scReadLog
	client *client.Client
}

func scNewCaptureRig(t *testing.T, p scProv, steps ...recoursetest.Step) *scCaptureRig {
	t.Helper()
	srv := recoursetest.NewServer(steps...)
	t.Cleanup(srv.Close)
	base := http.DefaultTransport.(*http.Transport).Clone()
	t.Cleanup(base.CloseIdleConnections)
	clock := rigtest.NewClock()
	rec := &rigtest.Recorder{}
	pol := scPolicy(true)
	pol.OnEvent, pol.OnWire = rec.OnEvent, rec.OnWire
	pol.WallClock, pol.MonotonicClock, pol.Sleep = clock.Now, clock.Mono, clock.Sleep
	log := &scReadLog{base: base}
	ch, err := chain.Default(p.codec(), chain.WithPolicy(pol), chain.WithTransport(log))
	require.NoError(t, err)
	cl, err := client.New(srv.URL, ch, client.WithAPIKey(rigtest.Key))
	require.NoError(t, err)
	return &scCaptureRig{srv: srv, rec: rec, log: log, client: cl}
}

// scAttemptCapture is one attempt's snapshots.
type scAttemptCapture struct {
	request   layer.WireSnapshot
	responses []layer.WireSnapshot
}

// scSplitCaptures groups the snapshots by attempt, in attempt order, and
// checks that every snapshot names an attempt that was started.
func scSplitCaptures(t *testing.T, rec *rigtest.Recorder) []scAttemptCapture {
	t.Helper()
	var ids []string
	for _, e := range rec.Events() {
		if e.Type == event.AttemptStarted {
			ids = append(ids, e.AttemptID)
		}
	}
	by := map[string]*scAttemptCapture{}
	for _, id := range ids {
		by[id] = &scAttemptCapture{}
	}
	for _, s := range rec.Wire() {
		a, ok := by[s.AttemptID]
		require.True(t, ok, "a snapshot of an attempt that never started")
		if s.Direction == layer.DirectionRequest {
			assert.Empty(t, a.responses, "the request snapshot comes first")
			a.request = s
			continue
		}
		a.responses = append(a.responses, s)
	}
	out := make([]scAttemptCapture, len(ids))
	for i, id := range ids {
		out[i] = *by[id]
	}
	return out
}

// scCheckAttempt checks one attempt's response snapshots against the reads
// of the base transport and the bytes the server sent, and returns the end
// marker.
func scCheckAttempt(t *testing.T, n int, a scAttemptCapture, reads [][]byte, sent string) layer.WireSnapshot {
	t.Helper()
	require.NotEmpty(t, a.responses, "attempt %d: response snapshots", n)
	var concat strings.Builder
	for i, s := range a.responses {
		assert.Equal(t, i, s.Seq, "attempt %d: Seq restarts at 0 and counts up", n)
		assert.Equal(t, n, s.WireAttempt)
		assert.Equal(t, 200, s.Status)
		assert.NotEmpty(t, s.Header.Get("Content-Type"), "response headers are captured")
		if i < len(a.responses)-1 {
			assert.NotEmpty(t, s.Bytes, "attempt %d: chunk %d carries bytes", n, i)
			assert.False(t, s.Complete, "attempt %d: only the end marker reports completeness", n)
			concat.Write(s.Bytes)
		}
	}
	end := a.responses[len(a.responses)-1]
	assert.NotNil(t, end.Bytes)
	assert.Empty(t, end.Bytes, "attempt %d: the end marker is empty", n)
	chunks := make([][]byte, 0, len(a.responses)-1)
	for _, s := range a.responses[:len(a.responses)-1] {
		chunks = append(chunks, s.Bytes)
	}
	assert.Equal(t, reads, chunks, "attempt %d: one snapshot per received byte chunk, exact bytes", n)
	assert.Equal(t, sent, concat.String(), "attempt %d: the chunks rebuild the body", n)
	t.Logf("attempt %d: %d chunk snapshots, end marker Complete=%v", n, len(chunks), end.Complete)
	return end
}

func TestR12_2_StreamCapture(t *testing.T) {
	for _, p := range scProviders() {
		// attempt 1 keepalive then cut (Complete=false); attempt 2 full,
		// ended by the server (Complete logged).
		t.Run(p.name+"/cut_then_full", func(t *testing.T) {
			full := p.full("Hel", "lo")
			r := scNewCaptureRig(t, p, p.cut(p.keepalive), p.step(full...))
			run := scCollect(r.client.Stream(context.Background(), p.request()))
			require.NoError(t, run.err)
			assert.Equal(t, "Hello", run.text())
			att := scSplitCaptures(t, r.rec)
			require.Len(t, att, 2)
			reqs := r.srv.Requests()
			for i, a := range att {
				assert.Equal(t, reqs[i].Body, a.request.Bytes, "attempt %d: request snapshot = bytes the server received", i+1)
				assert.Equal(t, i+1, a.request.WireAttempt)
			}
			end1 := scCheckAttempt(t, 1, att[0], r.log.attempt(0), p.keepalive)
			assert.False(t, end1.Complete, "a cut body is incomplete")
			end2 := scCheckAttempt(t, 2, att[1], r.log.attempt(1), strings.Join(full, ""))
			t.Logf("%s: end marker after a server-ended full stream: Complete=%v (timing: zero chunk read with the terminal frame or not)", p.name, end2.Complete)
		})
		// attempt 1 keepalive then a clean EOF (Complete=true, an
		// incomplete stream, resumed); attempt 2 full, held open after the
		// terminal frame (Complete=false: consumption ended first).
		t.Run(p.name+"/clean_eof_then_held", func(t *testing.T) {
			full := p.full("Hel", "lo")
			r := scNewCaptureRig(t, p, p.step(p.keepalive), p.step(full...).Held())
			run := scCollect(r.client.Stream(context.Background(), p.request()))
			require.NoError(t, run.err)
			assert.Equal(t, "Hello", run.text())
			att := scSplitCaptures(t, r.rec)
			require.Len(t, att, 2)
			end1 := scCheckAttempt(t, 1, att[0], r.log.attempt(0), p.keepalive)
			assert.True(t, end1.Complete, "a body read to HTTP EOF is complete")
			end2 := scCheckAttempt(t, 2, att[1], r.log.attempt(1), strings.Join(full, ""))
			assert.False(t, end2.Complete, "R12.2: the terminal frame ended consumption before HTTP EOF")
		})
		// The terminal frame is held back until the consumer has the last
		// content chunk, so the body arrives in at least two reads.
		t.Run(p.name+"/gated_multi_chunk", func(t *testing.T) {
			full := p.full("Hel", "lo")
			gate := make(chan struct{})
			r := scNewCaptureRig(t, p, p.step(full...).Gated(len(full)-1, gate))
			var text strings.Builder
			for ch, err := range r.client.Stream(context.Background(), p.request()) {
				require.NoError(t, err)
				text.WriteString(ch.Content)
				if ch.Content == "lo" {
					close(gate)
				}
			}
			assert.Equal(t, "Hello", text.String())
			att := scSplitCaptures(t, r.rec)
			require.Len(t, att, 1)
			scCheckAttempt(t, 1, att[0], r.log.attempt(0), strings.Join(full, ""))
			assert.GreaterOrEqual(t, len(att[0].responses)-1, 2, "the gated body arrives in several chunks")
		})
	}
}

// TestR12_2_StreamCaptureSnapshotsAreCopies: mutating a chunk snapshot in
// the hook changes neither what the consumer receives nor the resend (R12.4).
func TestR12_2_StreamCaptureSnapshotsAreCopies(t *testing.T) {
	for _, p := range scProviders() {
		t.Run(p.name, func(t *testing.T) {
			full := p.full("Hel", "lo")
			srv := recoursetest.NewServer(p.cut(p.keepalive), p.step(full...))
			t.Cleanup(srv.Close)
			base := http.DefaultTransport.(*http.Transport).Clone()
			t.Cleanup(base.CloseIdleConnections)
			clock := rigtest.NewClock()
			pol := scPolicy(true)
			pol.WallClock, pol.MonotonicClock, pol.Sleep = clock.Now, clock.Mono, clock.Sleep
			pol.OnWire = func(_ context.Context, s layer.WireSnapshot) error {
				for i := range s.Bytes {
					s.Bytes[i] = 'X'
				}
				s.Header.Set("Content-Type", "x/x")
				return nil
			}
			ch, err := chain.Default(p.codec(), chain.WithPolicy(pol), chain.WithTransport(base))
			require.NoError(t, err)
			cl, err := client.New(srv.URL, ch)
			require.NoError(t, err)
			run := scCollect(cl.Stream(context.Background(), p.request()))
			require.NoError(t, run.err)
			assert.Equal(t, "Hello", run.text())
			reqs := srv.Requests()
			require.Len(t, reqs, 2)
			assert.Equal(t, reqs[0].Body, reqs[1].Body)
			assert.NotContains(t, string(reqs[1].Body), "XXXX")
		})
	}
}

// TestR12_2_StreamCaptureResetBeforeHeaders: a transport failure before
// headers is captured as an empty, incomplete snapshot without a status
// (R12.1), and the resumed attempt's sequence starts at 0.
func TestR12_2_StreamCaptureResetBeforeHeaders(t *testing.T) {
	for _, p := range scProviders() {
		t.Run(p.name, func(t *testing.T) {
			full := p.full("Hel", "lo")
			r := scNewCaptureRig(t, p, recoursetest.Reset(), p.step(full...).Held())
			run := scCollect(r.client.Stream(context.Background(), p.request()))
			require.NoError(t, run.err)
			assert.Equal(t, "Hello", run.text())
			att := scSplitCaptures(t, r.rec)
			require.Len(t, att, 2)
			require.Len(t, att[0].responses, 1)
			s := att[0].responses[0]
			assert.Empty(t, s.Bytes)
			assert.Zero(t, s.Status)
			assert.False(t, s.Complete)
			assert.Zero(t, s.Seq)
			scCheckAttempt(t, 2, att[1], r.log.attempt(1), strings.Join(full, ""))
		})
	}
}
