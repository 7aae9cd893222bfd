package bench

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io"
	"net/http"
	"net/http/httptrace"
	"time"

	"github.com/recourse-dev/recourse/codec"
	"github.com/recourse-dev/recourse/codecs/openai"
	"github.com/recourse-dev/recourse/layer"
)

// The floors: the work the contract requires of a call on its success path
// and nothing else, done around a plain http.Transport with the codec's
// exported pieces and no recourse chain. A floor side reports how far a
// target can be met at all (x-time-floor-vs-raw) and how far recourse is
// above what the rules require (x-time-vs-floor). What each step is for:
//
//   - the call's two IDs, the logical call's and its first attempt's, from
//     one crypto/rand read into one string (R10.1);
//   - a drop-in request's header clone and body copy, taken when the call
//     starts so that every attempt sends the same bytes and headers (R2.3,
//     R2.5), and the codec's Describe of that body, which tells an
//     ordinary from a streaming request (what the engine judges by);
//   - a connection trace (GotConn), which tells "nothing was sent" from
//     "maybe sent" when an attempt fails (R9.2);
//   - the codec's observer fed every body byte as it arrives, the semantic
//     evidence a cut body holds (R13.2);
//   - for an ordinary answer, the whole body in one buffer sized from the
//     Content-Length, judged by the codec's Check before the caller gets
//     it (R4.6), the caller then reading that buffer;
//   - for a stream, every event framed and decoded by the codec's stream
//     decoder (R13.1, R13.2), the caller reading each frame's own bytes
//     only once the frame is whole and judged.

// floorTransport does a drop-in call's floor around base.
type floorTransport struct {
	base  http.RoundTripper
	codec *openai.Codec
	// ids keeps the last call's IDs, so that making them is not optimized
	// away.
	ids string
}

// floorIDs returns two random UUIDs (version 4) in one string, from one
// crypto/rand read, as a call needs for its logical and attempt IDs.
func floorIDs() string {
	var raw [32]byte
	var out [72]byte
	_, _ = rand.Read(raw[:])
	for i := range 2 {
		u, d := raw[i*16:(i+1)*16], out[i*36:(i+1)*36]
		u[6] = u[6]&0x0f | 0x40
		u[8] = u[8]&0x3f | 0x80
		hex.Encode(d[0:8], u[0:4])
		d[8] = '-'
		hex.Encode(d[9:13], u[4:6])
		d[13] = '-'
		hex.Encode(d[14:18], u[6:8])
		d[18] = '-'
		hex.Encode(d[19:23], u[8:10])
		d[23] = '-'
		hex.Encode(d[24:], u[10:])
	}
	return string(out[:])
}

// traced returns req with a connection trace whose GotConn records that a
// connection was obtained (R9.2) in *connected.
func traced(req *http.Request, connected *bool) *http.Request {
	trace := &httptrace.ClientTrace{GotConn: func(httptrace.GotConnInfo) { *connected = true }}
	return req.WithContext(httptrace.WithClientTrace(req.Context(), trace))
}

// floorCall is one drop-in call's state, in one allocation as a careful
// implementation would keep it: the first attempt's body reader, the
// connection trace and the body the caller reads.
type floorCall struct {
	reqBody   bytes.Reader
	trace     httptrace.ClientTrace
	connected bool
	respBody  memBody
}

// memBody is a body held in memory.
type memBody struct{ bytes.Reader }

func (*memBody) Close() error { return nil }

func (t *floorTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	c := &floorCall{}
	t.ids = floorIDs()
	header := req.Header.Clone()
	var body []byte
	if req.Body != nil {
		body = make([]byte, req.ContentLength) // the drop-in sides always set it
		_, err := io.ReadFull(req.Body, body)
		req.Body.Close()
		if err != nil {
			return nil, err
		}
	}
	info, err := t.codec.Describe(body)
	if err != nil {
		return nil, err
	}
	c.trace.GotConn = func(httptrace.GotConnInfo) { c.connected = true }
	c.reqBody.Reset(body)
	ctx, stop := req.Context(), context.CancelCauseFunc(func(error) {})
	if info.Operation == codec.Streaming {
		// A stream's Close from another goroutine ends a wait the stream
		// is in, through a context of the call's own (R13.5).
		ctx, stop = context.WithCancelCause(ctx)
	}
	defer func() {
		if info.Operation != codec.Streaming {
			stop(nil)
		}
	}()
	out := req.WithContext(httptrace.WithClientTrace(ctx, &c.trace))
	// The io.NopCloser over a *bytes.Reader is what net/http knows to be in
	// memory, so that headers and body leave in one write.
	out.Header, out.Body, out.GetBody, out.ContentLength = header, io.NopCloser(&c.reqBody), nil, int64(len(body))
	resp, err := t.base.RoundTrip(out)
	if err != nil {
		stop(nil)
		return nil, err
	}
	obs := t.codec.NewObserver(info)
	if dec, ok := obs.(codec.StreamDecoder); ok && info.Operation == codec.Streaming {
		resp.Body = &floorStream{rc: resp.Body, dec: dec, stop: stop}
		return resp, nil
	}
	buf, err := readObserved(resp.Body, resp.ContentLength, obs)
	resp.Body.Close()
	if err != nil {
		return nil, err
	}
	if err := t.codec.Check(buf); err != nil {
		return nil, err
	}
	c.respBody.Reset(buf)
	resp.Body = &c.respBody
	return resp, nil
}

// readObserved reads r to its end into one buffer sized from hint (a
// Content-Length; -1 when unknown), handing every read to obs as it
// arrives.
func readObserved(r io.Reader, hint int64, obs codec.Observer) ([]byte, error) {
	if hint < 0 {
		hint = 512
	}
	buf := make([]byte, 0, hint+1) // room to read EOF without growing
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := r.Read(buf[len(buf):cap(buf)])
		if n > 0 {
			obs.Write(buf[len(buf) : len(buf)+n])
			buf = buf[:len(buf)+n]
		}
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			return nil, err
		}
	}
}

// floorStream is a stream's body at its floor: the bytes read from the
// network go through the codec's stream decoder, and the caller reads the
// decoded frames' own bytes, as many whole frames as are queued and fit,
// without waiting for more. A frame that ends the stream with an error
// ends the read with it.
type floorStream struct {
	rc      io.ReadCloser
	dec     codec.StreamDecoder
	scratch [4096]byte
	raw     []byte // the rest of the frame being read
	eof     bool
	stop    context.CancelCauseFunc
}

var errFloorFrame = errors.New("floor: stream frame carries an error")

func (s *floorStream) Read(p []byte) (int, error) {
	n := 0
	for n < len(p) {
		if len(s.raw) == 0 {
			f, ok := s.dec.Next()
			if !ok {
				if n > 0 || s.eof {
					break
				}
				m, err := s.rc.Read(s.scratch[:])
				if m > 0 {
					s.dec.Write(s.scratch[:m])
				}
				if err == io.EOF {
					s.eof = true
					if err := s.dec.End(); err != nil {
						return n, err
					}
				} else if err != nil {
					return n, err
				}
				continue
			}
			if f.Err != nil {
				return n, errFloorFrame
			}
			s.raw = f.Raw
		}
		c := copy(p[n:], s.raw)
		s.raw, n = s.raw[c:], n+c
	}
	if n == 0 && s.eof {
		return 0, io.EOF
	}
	return n, nil
}

func (s *floorStream) Close() error {
	err := s.rc.Close()
	s.stop(nil)
	return err
}

// floorClient returns a plain http.Client whose transport does a drop-in
// call's floor around a clone of http.DefaultTransport.
func floorClient(tb interface{ Cleanup(func()) }) *http.Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tb.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: &floorTransport{base: tr, codec: openai.New()}}
}

// reportFloor reports, from the tallies of compare(b, …, recourse, base,
// floor), the floor against the baseline named base:
// x-time-floor-vs-<base>, x-cpu-floor-vs-<base>, floor-extra-allocs/op and
// floor-extra-B/op (floor minus baseline, per call). compare itself
// reports x-time-vs-floor and x-cpu-vs-floor, recourse against the floor.
func reportFloor(b interface {
	ReportMetric(float64, string)
}, t []*tally, base string) {
	raw, floor := t[1], t[2]
	b.ReportMetric(medianRatio(floor.blocks, raw.blocks), "x-time-floor-vs-"+base)
	if r := medianRatio(floor.cpus, raw.cpus); r > 0 {
		b.ReportMetric(r, "x-cpu-floor-vs-"+base)
	}
	b.ReportMetric(floor.allocs-raw.allocs, "floor-extra-allocs/op")
	b.ReportMetric(floor.bytes-raw.bytes, "floor-extra-B/op")
}

// floorStall is the stall limits' floor: a per-attempt layer that keeps
// its request (layer.RequestKeeper, as layers/stall does) and does only
// what a limit that can fire requires: the attempt's cancellable context
// and the request copy carrying it, since net/http aborts a round trip or
// a body read only through the request's context (R7.2), and one timer,
// re-armed for each wait and stopped with the body.
type floorStall struct{ limit time.Duration }

func (floorStall) Name() string             { return "floor-stall" }
func (floorStall) Position() layer.Position { return layer.PerAttempt }
func (floorStall) KeepsRequest() bool       { return true }
func (s floorStall) Wrap(next http.RoundTripper) http.RoundTripper {
	return floorStallRT{next: next, limit: s.limit}
}

type floorStallRT struct {
	next  http.RoundTripper
	limit time.Duration
}

func (s floorStallRT) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx, cancel := context.WithCancel(req.Context())
	t := time.AfterFunc(s.limit, cancel)
	resp, err := s.next.RoundTrip(req.WithContext(ctx))
	if err != nil {
		t.Stop()
		cancel()
		return nil, err
	}
	t.Reset(s.limit) // the wait for the body
	resp.Body = &floorStallBody{rc: resp.Body, t: t, cancel: cancel, limit: s.limit}
	return resp, nil
}

// floorStallBody re-arms the timer before each read and stops it, and
// releases the context, when the body is closed.
type floorStallBody struct {
	rc     io.ReadCloser
	t      *time.Timer
	cancel context.CancelFunc
	limit  time.Duration
}

func (b *floorStallBody) Read(p []byte) (int, error) {
	b.t.Reset(b.limit)
	return b.rc.Read(p)
}

func (b *floorStallBody) Close() error {
	b.t.Stop()
	b.cancel()
	return b.rc.Close()
}

// floorFallback is the fallback layer's floor on a drop-in call whose
// first target answers, as an http.Client's Transport above the default
// chain: the *layer.Call through which the engine reports the first
// target's typed outcome (R20.2) and takes SkipOpenCircuit (R20.5), the
// context value that carries it and the request's shallow copy with that
// context, a RoundTripper never changing its caller's request; then it
// reads the outcome.
type floorFallback struct{ next http.RoundTripper }

func (f floorFallback) RoundTrip(req *http.Request) (*http.Response, error) {
	lc := &layer.Call{SkipOpenCircuit: true, OutcomeOnly: true}
	resp, err := f.next.RoundTrip(req.WithContext(layer.WithCall(req.Context(), lc)))
	if err == nil && lc.Result.Err != nil {
		resp.Body.Close()
		return nil, lc.Result.Err
	}
	return resp, err
}
