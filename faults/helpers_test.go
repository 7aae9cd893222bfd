package faults_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/recourse-dev/recourse/chain"
	"github.com/recourse-dev/recourse/chat"
	"github.com/recourse-dev/recourse/client"
	"github.com/recourse-dev/recourse/codecs/openai"
	"github.com/recourse-dev/recourse/event"
	"github.com/recourse-dev/recourse/layer"
	"github.com/recourse-dev/recourse/layers/retry"
	"github.com/recourse-dev/recourse/layers/stall"
)

// TestMain fails the package if a goroutine outlives the tests: the
// servers, the clients and the calls must all be gone. Toxiproxy's own link
// goroutines are the one exception: when a proxy stops while a link is
// mid-copy, its pipeline can stay blocked on a channel send inside
// Toxiproxy (ToxicLink.read, ToxicStub.Run) however the test tears it down,
// which is the tool's shutdown, not recourse's; every other goroutine is
// still checked.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		goleak.IgnoreAnyFunction("github.com/Shopify/toxiproxy/v2.(*ToxicLink).read"),
		goleak.IgnoreAnyFunction("github.com/Shopify/toxiproxy/v2/toxics.(*ToxicStub).Run"),
	)
}

// guard bounds every wait for the code under test; it is never what a test
// measures.
const guard = 20 * time.Second

const keepalive = ": keep-alive\n\n"

// suite is a loopback provider behind a Toxiproxy proxy, and a native
// client whose default chain carries the stall limits under test.
type suite struct {
	t        *testing.T
	upstream *httptest.Server
	handlers chan http.HandlerFunc
	proxy    *toxiproxy.Proxy
	client   *client.Client

	mu       sync.Mutex
	events   []event.Event
	requests int
	// onFailed, when set, runs at every attempt_failed event, before the
	// decision about a resend (a test removes a toxic there).
	onFailed func(event.Failure)
	// onBytes, when set, runs once, on the reading goroutine, as soon as a
	// response body delivered its first bytes to the client.
	onBytes func()
}

// afterFirstBytes runs f once the client has read the first bytes of a
// response body.
func (s *suite) afterFirstBytes(f func()) {
	s.mu.Lock()
	s.onBytes = f
	s.mu.Unlock()
}

// tap is the client's base transport: it reports the first body bytes
// read (see afterFirstBytes).
type tap struct {
	s  *suite
	rt http.RoundTripper
}

func (t *tap) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.rt.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	resp.Body = &tapBody{ReadCloser: resp.Body, s: t.s}
	return resp, nil
}

type tapBody struct {
	io.ReadCloser
	s *suite
}

func (b *tapBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if n > 0 {
		b.s.mu.Lock()
		f := b.s.onBytes
		b.s.onBytes = nil
		b.s.mu.Unlock()
		if f != nil {
			f()
		}
	}
	return n, err
}

func newSuite(t *testing.T, lim stall.Limits, pol retry.Policy) *suite {
	t.Helper()
	s := &suite{t: t, handlers: make(chan http.HandlerFunc, 8)}
	s.upstream = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.upstream.Close)

	api := toxiproxy.NewServer(toxiproxy.NewMetricsContainer(prometheus.NewRegistry()), zerolog.Nop())
	s.proxy = toxiproxy.NewProxy(api, "llm", "127.0.0.1:0", strings.TrimPrefix(s.upstream.URL, "http://"))
	require.NoError(t, s.proxy.Start())
	t.Cleanup(s.proxy.Stop)
	// Toxics are removed before the proxy stops: a toxic that still holds
	// a chunk for a closed connection is interrupted and drained that way.
	t.Cleanup(func() { s.proxy.Toxics.ResetToxics(context.Background()) })

	st, err := stall.New(lim)
	require.NoError(t, err)
	pol.BaseDelay = new(time.Duration(0))
	pol.OnEvent = func(ev event.Event) error {
		s.mu.Lock()
		s.events = append(s.events, ev)
		f := s.onFailed
		s.mu.Unlock()
		if ev.Type == event.AttemptFailed && f != nil {
			f(*ev.Failure)
		}
		return nil
	}
	base := http.DefaultTransport.(*http.Transport).Clone()
	t.Cleanup(base.CloseIdleConnections)
	ch, err := chain.Default(openai.New(), chain.WithPolicy(pol), chain.WithPerAttempt(st), chain.WithTransport(&tap{s: s, rt: base}))
	require.NoError(t, err)
	s.client, err = client.New("http://"+s.proxy.Listen, ch, client.WithAPIKey("sk-faults"))
	require.NoError(t, err)
	return s
}

func (s *suite) serve(w http.ResponseWriter, r *http.Request) {
	_, _ = io.Copy(io.Discard, r.Body)
	s.mu.Lock()
	s.requests++
	s.mu.Unlock()
	select {
	case h := <-s.handlers:
		h(w, r)
	default:
		http.Error(w, "no handler", http.StatusTeapot)
	}
}

// answer queues the handlers of the next requests, in order.
func (s *suite) answer(hs ...http.HandlerFunc) {
	for _, h := range hs {
		s.handlers <- h
	}
}

// toxic adds a toxic to the proxy (it applies to live connections too).
func (s *suite) toxic(js string) {
	s.t.Helper()
	_, err := s.proxy.Toxics.AddToxicJson(strings.NewReader(js))
	require.NoError(s.t, err)
}

// removeToxic removes the toxic called name.
func (s *suite) removeToxic(name string) {
	s.t.Helper()
	require.NoError(s.t, s.proxy.Toxics.RemoveToxic(context.Background(), name))
}

func (s *suite) setOnFailed(f func(event.Failure)) {
	s.mu.Lock()
	s.onFailed = f
	s.mu.Unlock()
}

func (s *suite) Requests() int { s.mu.Lock(); defer s.mu.Unlock(); return s.requests }

// failures returns the failures of the attempt_failed events.
func (s *suite) failures() []event.Failure {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []event.Failure
	for _, ev := range s.events {
		if ev.Type == event.AttemptFailed {
			out = append(out, *ev.Failure)
		}
	}
	return out
}

// stream runs a streaming call and returns the content and the error;
// onContent sees every content piece as it arrives.
func (s *suite) stream(onContent func(string)) (string, error) {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), guard)
	defer cancel()
	var b strings.Builder
	for c, err := range s.client.Stream(ctx, &chat.Request{Model: "gpt-4o-mini", Messages: []chat.Message{{Role: chat.User, Content: "hello"}}}) {
		if err != nil {
			require.NoError(s.t, ctx.Err(), "the guard ran out: a limit did not fire")
			return b.String(), err
		}
		b.WriteString(c.Content)
		if onContent != nil && c.Content != "" {
			onContent(c.Content)
		}
	}
	return b.String(), nil
}

// sse writes events as a 200 event stream, each flushed on its own, with
// gap between them; it stops when the client goes away.
func sse(gap time.Duration, events ...string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		rc := http.NewResponseController(w)
		w.WriteHeader(http.StatusOK)
		_ = rc.Flush()
		for _, e := range events {
			if gap > 0 {
				select {
				case <-time.After(gap):
				case <-r.Context().Done():
					return
				}
			}
			if _, err := io.WriteString(w, e); err != nil {
				return
			}
			if rc.Flush() != nil {
				return
			}
		}
	}
}

// gated writes first, waits until gate is closed, then writes rest (each
// event flushed on its own); it stops when the client goes away.
func gated(first []string, gate <-chan struct{}, rest []string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		sse(0, first...)(w, r)
		select {
		case <-gate:
		case <-r.Context().Done():
			return
		}
		rc := http.NewResponseController(w)
		for _, e := range rest {
			if _, err := io.WriteString(w, e); err != nil {
				return
			}
			if rc.Flush() != nil {
				return
			}
		}
		// Hold until the client goes away: the stream never ends on its own.
		<-r.Context().Done()
	}
}

// keepalives writes a keepalive every gap until the client goes away: a
// model that thinks forever.
func keepalives(gap time.Duration) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		rc := http.NewResponseController(w)
		w.WriteHeader(http.StatusOK)
		_ = rc.Flush()
		for {
			select {
			case <-time.After(gap):
			case <-r.Context().Done():
				return
			}
			if _, err := io.WriteString(w, keepalive); err != nil {
				return
			}
			if rc.Flush() != nil {
				return
			}
		}
	}
}

func recoveryError(t *testing.T, err error) *layer.RecoveryError {
	t.Helper()
	var re *layer.RecoveryError
	require.True(t, errors.As(err, &re), "want a *layer.RecoveryError, got %T %v", err, err)
	return re
}
