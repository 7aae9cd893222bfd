package retry_test

// Exactness of streams: what the consumer receives and which lifecycle a
// stream records when it is cancelled, stopped, cut short by a capture
// failure or ended by a length finish, with recovery on and off (R1.1,
// R9, R10.5, R12.3, R13). Fixtures are in exactness_helpers_test.go.

import (
	"bytes"
	"context"
	"io"
	"iter"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/recourse-dev/recourse/chain"
	"github.com/recourse-dev/recourse/client"
	"github.com/recourse-dev/recourse/event"
	"github.com/recourse-dev/recourse/internal/rigtest"
	"github.com/recourse-dev/recourse/layer"
	"github.com/recourse-dev/recourse/layers/retry"
	"github.com/recourse-dev/recourse/recoursetest"
)

// exDropIn posts p's streaming request through the rig's http.Client, as
// an SDK using the chain as its transport does.
func exDropIn(t *testing.T, ctx context.Context, url string, hc *http.Client, p exProv) (*http.Response, error) {
	t.Helper()
	r := p.request()
	r.Stream = true
	body, err := p.codec().Encode(r)
	require.NoError(t, err)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url+p.codec().Path(), bytes.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	return hc.Do(req)
}

// TestR13_5_StreamCancelInAttemptSucceededObserverWins: an observer that
// cancels the context when the terminal frame's attempt_succeeded is
// emitted stops the completion: no Done chunk (no done event, no
// terminal bytes for a drop-in client), the attempt is recorded as failed
// and one cancelled event ends the lifecycle (R9.1, R9.2, R13.5: abort wins
// over completion).
func TestR13_5_StreamCancelInAttemptSucceededObserverWins(t *testing.T) {
	want := []string{"attempt_started", "attempt_succeeded", "attempt_failed", "cancelled"}
	for _, p := range exProviders() {
		for _, shape := range []string{"chunks", "events", "drop_in"} {
			t.Run(p.name+"/"+shape, func(t *testing.T) {
				r, rec := exRig(t, p.codec(), exPolicy(), p.step(p.full("Hel", "lo")...))
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				rec.setHook(func(ev event.Event) {
					if ev.Type == event.AttemptSucceeded {
						cancel()
					}
				})
				var err error
				switch shape {
				case "chunks":
					run := exCollect(r.Client.Stream(ctx, p.request()))
					assert.False(t, run.done(), "abort wins over completion")
					assert.Equal(t, "Hello", run.text(), "the content before the terminal frame was delivered")
					err = run.err
				case "events":
					var evs []client.StreamEvent
					for e := range r.Client.StreamEvents(ctx, p.request()) {
						evs = append(evs, e)
					}
					require.NotEmpty(t, evs)
					last := evs[len(evs)-1]
					require.Equal(t, client.EventError, last.Type, "no done event")
					assert.Equal(t, layer.StreamCancelled, last.Err.Reason)
					err = last.Err
				case "drop_in":
					resp, derr := exDropIn(t, ctx, r.Server.URL, r.HTTP, p)
					require.NoError(t, derr)
					b, rerr := io.ReadAll(resp.Body)
					resp.Body.Close()
					last := p.full("Hel", "lo")
					assert.NotContains(t, string(b), last[len(last)-1], "the terminal frame is not handed over")
					err = rerr
				}
				re := exRE(t, err)
				assert.Equal(t, event.OutcomeCancelled, re.Outcome)
				assert.ErrorIs(t, err, context.Canceled)
				require.Len(t, re.History, 1, "the attempt is recorded")
				assert.Equal(t, event.CategoryCancellation, re.History[0].Category)
				assert.Zero(t, re.Failure.Progress.Delivered.CompletedToolCalls)
				assert.Equal(t, want, exLifecycle(rec.Types()))
				assert.Equal(t, 1, r.Server.Count(), "no resend")
			})
		}
	}
}

// exEOFBody returns its data in reads of at most chunk bytes (all of it
// when chunk is 0); the read that returns the last bytes also returns
// io.EOF, as io.Reader allows and some transports do.
type exEOFBody struct {
	data  []byte
	chunk int
}

func (b *exEOFBody) Read(p []byte) (int, error) {
	if len(b.data) == 0 {
		return 0, io.EOF
	}
	n := len(p)
	if b.chunk > 0 {
		n = min(n, b.chunk)
	}
	n = copy(p, b.data[:min(n, len(b.data))])
	b.data = b.data[n:]
	if len(b.data) == 0 {
		return n, io.EOF
	}
	return n, nil
}

func (b *exEOFBody) Close() error { return nil }

// exEOFTransport answers every request with 200 and body, read through an
// exEOFBody.
type exEOFTransport struct {
	body        string
	contentType string
	chunk       int
}

func (t exEOFTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Body != nil {
		_, _ = io.Copy(io.Discard, req.Body)
		req.Body.Close()
	}
	return &http.Response{
		StatusCode: 200, Status: "200 OK", Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header:        http.Header{"Content-Type": {t.contentType}},
		Body:          &exEOFBody{data: []byte(t.body), chunk: t.chunk},
		ContentLength: -1, Request: req,
	}, nil
}

// TestR1_1_StreamDataWithEOFCompletes: a body whose last Read returns the
// final bytes together with io.EOF is a complete stream. With recovery off
// (chain.WithoutRecovery, or a nil per-call policy) the client behaves as a
// plain client: every frame is delivered and the stream ends well, not with
// an unexpected EOF (R1.1). The recovering stream does the same.
func TestR1_1_StreamDataWithEOFCompletes(t *testing.T) {
	modes := []struct {
		name string
		opts []chain.Option
		ctx  func(context.Context) context.Context
	}{
		{"without_recovery", []chain.Option{chain.WithoutRecovery()}, func(ctx context.Context) context.Context { return ctx }},
		{"nil_call_policy", []chain.Option{chain.WithPolicy(exPolicy())}, func(ctx context.Context) context.Context { return retry.WithPolicy(ctx, nil) }},
		{"recovering", []chain.Option{chain.WithPolicy(exPolicy())}, func(ctx context.Context) context.Context { return ctx }},
	}
	for _, p := range exProviders() {
		ct := "text/event-stream"
		if p.ndjson {
			ct = "application/x-ndjson"
		}
		body := ""
		for _, f := range p.full("Hel", "lo") {
			body += f
		}
		for _, m := range modes {
			for _, chunk := range []int{0, 7} {
				name := p.name + "/" + m.name + "/one_read"
				if chunk > 0 {
					name = p.name + "/" + m.name + "/small_reads"
				}
				t.Run(name, func(t *testing.T) {
					opts := append([]chain.Option{chain.WithTransport(exEOFTransport{body: body, contentType: ct, chunk: chunk})}, m.opts...)
					ch, err := chain.Default(p.codec(), opts...)
					require.NoError(t, err)
					c, err := client.New("http://127.0.0.1:1", ch)
					require.NoError(t, err)

					run := exCollect(c.Stream(m.ctx(context.Background()), p.request()))
					require.NoError(t, run.err, "a complete stream ends well")
					assert.Equal(t, "Hello", run.text())
					require.True(t, run.done(), "the terminal chunk is delivered")

					var last client.StreamEvent
					var text string
					for e := range c.StreamEvents(m.ctx(context.Background()), p.request()) {
						last = e
						text += e.Text
					}
					assert.Equal(t, client.EventDone, last.Type, "the event stream ends with done: %+v", last.Err)
					assert.Equal(t, "Hello", text)
				})
			}
		}
	}
}

// exCaptureFailCase is a stream whose capture fails on the chunk of one
// frame: frames[gateAt] is written only once the consumer received
// before, so that it arrives in a read of its own, and the hook fails on
// the chunk that carries it.
type exCaptureFailCase struct {
	name     string
	frames   []string
	gateAt   int
	before   string // the content the consumer has when the gate opens
	terminal bool   // frames[gateAt] is the terminal frame
	held     bool
}

func exCaptureFailCases(p exProv) []exCaptureFailCase {
	full := p.full("Hel", "lo")
	return []exCaptureFailCase{
		{name: "content_frame", frames: []string{p.content("Hi"), p.content("there")}, gateAt: 1, before: "Hi", held: true},
		{name: "terminal_frame", frames: full, gateAt: len(full) - 1, before: "Hello", terminal: true},
	}
}

// TestR12_3_FrameWhoseCaptureFailedIsNotDelivered: when the capture of the
// chunk that carries a frame fails, the consumer never receives that frame
// — no chunk, no event, no drop-in bytes, delivered counters unchanged, no
// telemetry event for it — while its evidence is observed (R12.3); the
// failure is terminal (capture_failed), and Inspect's Bytes holds the
// attempt's bytes up to and including that frame (R10.5, R13.2).
func TestR12_3_FrameWhoseCaptureFailedIsNotDelivered(t *testing.T) {
	for _, p := range exProviders() {
		for _, c := range exCaptureFailCases(p) {
			for _, shape := range []string{"chunks", "events", "drop_in"} {
				t.Run(p.name+"/"+c.name+"/"+shape, func(t *testing.T) {
					gate := make(chan struct{})
					marker := []byte(c.frames[c.gateAt])
					pol := exPolicy()
					pol.OnWire = func(_ context.Context, s layer.WireSnapshot) error {
						if s.Direction == layer.DirectionResponse && bytes.Contains(s.Bytes, marker) {
							return errExHook
						}
						return nil
					}
					st := p.step(c.frames...).Gated(c.gateAt, gate)
					if c.held {
						st = st.Held()
					}
					r, rec := exRig(t, p.codec(), pol, st, p.step(p.full("never")...))
					open := func(got string) {
						if got == c.before {
							select {
							case <-gate:
							default:
								close(gate)
							}
						}
					}
					var err error
					var got string
					switch shape {
					case "chunks":
						for ch, e := range r.Client.Stream(context.Background(), p.request()) {
							if e != nil {
								err = e
								break
							}
							assert.False(t, ch.Done, "the terminal frame whose capture failed is not delivered")
							got += ch.Content
							open(got)
						}
					case "events":
						for e := range r.Client.StreamEvents(context.Background(), p.request()) {
							if e.Type == client.EventError {
								err = e.Err
								break
							}
							assert.Equal(t, client.EventContent, e.Type, "no done event")
							got += e.Text
							open(got)
						}
					case "drop_in":
						resp, derr := exDropIn(t, context.Background(), r.Server.URL, r.HTTP, p)
						require.NoError(t, derr)
						var body []byte
						buf := make([]byte, 64<<10)
						for {
							n, rerr := resp.Body.Read(buf)
							body = append(body, buf[:n]...)
							if bytes.Contains(body, []byte(c.frames[c.gateAt-1])) {
								open(c.before)
							}
							if rerr != nil {
								err = rerr
								break
							}
						}
						resp.Body.Close()
						assert.NotContains(t, string(body), c.frames[c.gateAt], "the frame's bytes are not handed over")
						got = c.before
					}
					assert.Equal(t, c.before, got, "only the frames before the failed capture are delivered")

					re := exRE(t, err)
					assert.Equal(t, event.OutcomeInterrupted, re.Outcome)
					assert.Equal(t, event.ReasonCaptureFailed, re.Failure.Classification.Reason)
					pr := re.Failure.Progress
					if shape != "drop_in" {
						assert.Equal(t, int64(len(c.before)), pr.Delivered.ContentBytes, "delivered counters unchanged by the frame")
					}
					assert.Zero(t, pr.Delivered.CompletedToolCalls)
					if !c.terminal {
						assert.Equal(t, int64(len("Hithere")), pr.Observed.ContentBytes, "R12.3: its evidence is observed")
					}
					ev := exEvidence(t, re)
					assert.Equal(t, errExHook, ev.CaptureCause)
					assert.ErrorIs(t, ev.Cause, errExHook)
					want := ""
					for _, f := range c.frames[:c.gateAt+1] {
						want += f
					}
					assert.Equal(t, want, string(ev.Bytes), "the attempt's bytes up to and including the frame")
					types := rec.Types()
					assert.NotContains(t, types, string(event.AttemptSucceeded))
					assert.Equal(t, []string{"attempt_started", "attempt_failed", "interrupted"}, exLifecycle(types))
					if p.ndjson {
						progress := 0
						for _, e := range rec.Events() {
							if e.Type == event.Telemetry {
								progress++
							}
						}
						assert.Equal(t, c.gateAt, progress, "no telemetry event for the frame whose capture failed")
					}
					assert.Equal(t, 1, r.Server.Count(), "a capture failure is never retried")
				})
			}
		}
	}
}

// TestR10_5_LengthFinishKeepsProviderEvidence: Inspect of a stream ended by
// a length finish keeps the provider's evidence as an accepted completion
// would — finish reason, answering model and usage — through the chunk
// stream and the event stream; a drop-in body, for which the finish is the
// provider's answer, keeps the same evidence in the call's result
// (R10.5, R13.3).
func TestR10_5_LengthFinishKeepsProviderEvidence(t *testing.T) {
	for _, p := range exProviders() {
		// The evidence of an accepted completion of the same provider.
		ok, _ := exRig(t, p.codec(), exPolicy(), p.step(p.full("abc")...))
		run := exCollect(ok.Client.Stream(context.Background(), p.request()))
		require.NoError(t, run.err)
		require.True(t, run.done())
		accepted := run.chunks[len(run.chunks)-1].Completion
		require.NotNil(t, accepted.Usage)
		require.Equal(t, p.answer, accepted.Model)
		require.Equal(t, exUsage, *accepted.Usage)

		for _, shape := range []string{"chunks", "events", "drop_in"} {
			t.Run(p.name+"/"+shape, func(t *testing.T) {
				r, _ := exRig(t, p.codec(), exPolicy(), p.step(p.length("abc")...).Held(), p.step(p.full("never")...))
				var err error
				switch shape {
				case "chunks":
					err = exCollect(r.Client.Stream(context.Background(), p.request())).err
				case "events":
					for e := range r.Client.StreamEvents(context.Background(), p.request()) {
						if e.Type == client.EventError {
							assert.Equal(t, "length", e.Err.FinishReason)
							err = e.Err
						}
					}
				case "drop_in":
					frames := p.length("abc")
					if !p.ndjson {
						frames = append(frames, recoursetest.StreamDone)
					}
					r, _ := exRig(t, p.codec(), exPolicy(), p.step(frames...), p.step(p.full("never")...))
					lc := &layer.Call{}
					resp, derr := exDropIn(t, layer.WithCall(context.Background(), lc), r.Server.URL, r.HTTP, p)
					require.NoError(t, derr)
					_, err = io.ReadAll(resp.Body)
					resp.Body.Close()
					require.NoError(t, err, "the provider's answer, as sent")
					assert.Equal(t, "length", lc.Result.Response.FinishReason)
					assert.Equal(t, accepted.Model, lc.Result.Response.Model, "the provider's model is kept")
					require.NotNil(t, lc.Result.Response.Usage, "the provider's usage is kept")
					assert.Equal(t, *accepted.Usage, *lc.Result.Response.Usage)
					assert.Equal(t, 1, r.Server.Count())
					return
				}
				re := exRE(t, err)
				assert.Equal(t, event.OutcomeInterrupted, re.Outcome)
				ev := exEvidence(t, re)
				assert.Equal(t, "length", ev.Response.FinishReason)
				assert.Equal(t, accepted.Model, ev.Response.Model, "the provider's model is kept")
				require.NotNil(t, ev.Response.Usage, "the provider's usage is kept")
				assert.Equal(t, *accepted.Usage, *ev.Response.Usage)
				assert.Equal(t, 1, r.Server.Count())
			})
		}
	}
}

// exStopper stops consuming a stream after its first content ("Hi").
type exStopper struct {
	name string
	stop func(t *testing.T, r *rigtest.Rig, p exProv)
}

func exStoppers() []exStopper {
	return []exStopper{
		{"range_break", func(t *testing.T, r *rigtest.Rig, p exProv) {
			for ch, err := range r.Client.Stream(context.Background(), p.request()) {
				require.NoError(t, err)
				if ch.Content != "" {
					assert.Equal(t, "Hi", ch.Content)
					break
				}
			}
		}},
		{"pull_stop", func(t *testing.T, r *rigtest.Rig, p exProv) {
			next, stop := iter.Pull2(r.Client.Stream(context.Background(), p.request()))
			defer stop()
			ch, err, ok := next()
			require.True(t, ok)
			require.NoError(t, err)
			assert.Equal(t, "Hi", ch.Content)
			stop()
		}},
		{"events_break", func(t *testing.T, r *rigtest.Rig, p exProv) {
			for e := range r.Client.StreamEvents(context.Background(), p.request()) {
				assert.Equal(t, client.StreamEvent{Type: client.EventContent, Text: "Hi"}, e)
				break
			}
		}},
		{"drop_in_close", func(t *testing.T, r *rigtest.Rig, p exProv) {
			resp, err := exDropIn(t, context.Background(), r.Server.URL, r.HTTP, p)
			require.NoError(t, err)
			buf := make([]byte, 64<<10)
			var got []byte
			for !bytes.Contains(got, []byte(p.content("Hi"))) {
				n, err := resp.Body.Read(buf)
				require.NoError(t, err)
				got = append(got, buf[:n]...)
			}
			require.NoError(t, resp.Body.Close())
		}},
	}
}

// TestR13_5_ConsumerStopEndsLifecycleCancelled: a consumer that stops
// ranging (a break, stopping an iter.Pull2 iterator, leaving the event
// stream, an SDK closing the drop-in body early) ends the call's
// lifecycle: the open attempt is recorded as attempt_failed (category
// cancellation), then exactly one terminal cancelled event; the request is
// closed, nothing is resent and no goroutine is left (R13.5, amended). The
// same holds when the stop comes after a resend.
func TestR13_5_ConsumerStopEndsLifecycleCancelled(t *testing.T) {
	for _, p := range exProviders() {
		for _, s := range exStoppers() {
			for _, resumed := range []bool{false, true} {
				name := p.name + "/" + s.name
				if resumed {
					name += "/after_resend"
				}
				t.Run(name, func(t *testing.T) {
					ignore := goleak.IgnoreCurrent()
					steps := []recoursetest.Step{p.step(p.content("Hi"), p.content("there")).Held()}
					want := []string{"attempt_started", "attempt_failed", "cancelled"}
					if resumed {
						// A first attempt that ends before any frame: a
						// clean EOF, resent after the allowing hook.
						steps = append([]recoursetest.Step{p.step()}, steps...)
						want = append([]string{"attempt_started", "attempt_failed", "admission_pending", "admission_allowed",
							"delay_scheduled", "retry_started"}, want...)
					}
					r, rec := exRig(t, p.codec(), exPolicy(), steps...)
					s.stop(t, r, p)
					select {
					case <-r.Server.Left():
					case <-time.After(exWait):
						t.Fatal("the server never saw the request close")
					}
					types := exLifecycle(rec.Types())
					assert.Equal(t, want, types, "attempt_failed, then exactly one terminal cancelled event")
					evs := rec.Events()
					var failed, terminal []event.Event
					for _, e := range evs {
						switch e.Type {
						case event.AttemptFailed:
							failed = append(failed, e)
						case event.Cancelled, event.Interrupted, event.Exhausted:
							terminal = append(terminal, e)
						}
					}
					require.Len(t, terminal, 1)
					require.NotEmpty(t, failed)
					last := failed[len(failed)-1].Failure
					require.NotNil(t, last)
					assert.Equal(t, event.CategoryCancellation, last.Category)
					assert.Equal(t, event.ReasonCancelled, last.Classification.Reason)
					assert.Equal(t, event.AcceptanceYes, last.Acceptance)
					assert.Equal(t, len(steps), last.WireAttempt)
					assert.Equal(t, int64(2), last.Progress.Delivered.ContentBytes, "only \"Hi\" was delivered")
					require.NotNil(t, terminal[0].Failure)
					assert.Equal(t, last.AttemptID, terminal[0].AttemptID)
					assert.Equal(t, len(steps), r.Server.Count(), "nothing more is sent")
					r.Close()
					goleak.VerifyNone(t, ignore)
				})
			}
		}
	}
}

// TestR13_6_OllamaFrameIndicesCountFromOne: Ollama's telemetry events
// number the valid frames from 1, restarting with every attempt, and every
// exposed frame index (chat.Chunk.Frame) uses the same numbering — for the
// SSE providers too; keepalives take no index (R13.6, amended).
func TestR13_6_OllamaFrameIndicesCountFromOne(t *testing.T) {
	t.Run("ollama/progress_and_chunks", func(t *testing.T) {
		p := exOllamaProv()
		// Attempt 1: a keepalive and one valid frame, then a cut (resent
		// after the allowing hook); attempt 2: the whole answer.
		first := p.step("\n", p.content(""))
		first = first.Cut(len("\n" + p.content("")))
		r, rec := exRig(t, p.codec(), exPolicy(), first, p.step(p.full("Hel", "lo")...))
		run := exCollect(r.Client.Stream(context.Background(), p.request()))
		require.NoError(t, run.err)
		var frames, attempts []int
		for _, e := range rec.Events() {
			if e.Type == event.Telemetry {
				frames = append(frames, e.Frame)
				attempts = append(attempts, e.WireAttempt)
			}
		}
		assert.Equal(t, []int{1, 1, 2, 3}, frames, "counted from 1, restarting per attempt")
		assert.Equal(t, []int{1, 2, 2, 2}, attempts)
		var chunkFrames []int
		for _, c := range run.chunks {
			chunkFrames = append(chunkFrames, c.Frame)
		}
		assert.Equal(t, []int{1, 2, 3}, chunkFrames, "chunks name the frame of their telemetry event")
	})
	for _, p := range exProviders() {
		if p.ndjson {
			continue
		}
		t.Run(p.name+"/chunks", func(t *testing.T) {
			// role frame (1), content frames (2, 3), finish (4), usage (5),
			// [DONE] (6): the Done chunk names the [DONE] frame.
			r, _ := exRig(t, p.codec(), exPolicy(), p.step(append([]string{": keep-alive\n\n"}, p.full("Hel", "lo")...)...))
			run := exCollect(r.Client.Stream(context.Background(), p.request()))
			require.NoError(t, run.err)
			var chunkFrames []int
			for _, c := range run.chunks {
				chunkFrames = append(chunkFrames, c.Frame)
			}
			assert.Equal(t, []int{2, 3, 6}, chunkFrames)
		})
	}
}
