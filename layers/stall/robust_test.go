package stall_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/recourse-dev/recourse/codecs/openai"
	"github.com/recourse-dev/recourse/event"
	"github.com/recourse-dev/recourse/layer"
	"github.com/recourse-dev/recourse/layers/retry"
	"github.com/recourse-dev/recourse/layers/stall"
)

// lateTimers receives the timers of a stall layer set with
// stall.SetLateTimers: none fires on its own, and the test runs each
// callback itself, at the moment it wants.
type lateTimers struct{ armed chan lateArm }

type lateArm struct {
	d time.Duration
	f func()
}

func newLateTimers() *lateTimers { return &lateTimers{armed: make(chan lateArm, 64)} }

func (c *lateTimers) arm(d time.Duration, f func()) { c.armed <- lateArm{d, f} }

// next returns the next timer armed; inside the bubble a wait for one that
// never comes fails the test as a deadlock.
func (c *lateTimers) next() lateArm { return <-c.armed }

// directClient is an HTTP client whose transport is a stall layer with
// limits lim and late timers over the provider's transport (no engine).
func directClient(t *testing.T, p *provider, lim stall.Limits, timers *lateTimers) *http.Client {
	t.Helper()
	l, err := stall.New(lim)
	require.NoError(t, err)
	stall.SetLateTimers(l, timers.arm)
	return &http.Client{Transport: l.Wrap(p.tr)}
}

func get(t *testing.T, c *http.Client, url string) *http.Response {
	t.Helper()
	req, err := http.NewRequestWithContext(context.Background(), http.MethodGet, url, nil)
	require.NoError(t, err)
	resp, err := c.Do(req)
	require.NoError(t, err)
	return resp
}

type readResult struct {
	b   []byte
	err error
}

func readAll(r io.Reader) <-chan readResult {
	done := make(chan readResult, 1)
	go func() {
		b, err := io.ReadAll(r)
		done <- readResult{b, err}
	}()
	return done
}

// A header limit whose callback races the response's arrival and runs
// after RoundTrip returned the response: the attempt was answered in time,
// and its body still reads to the end (the limit does not cancel it).
func TestHeaderLimitThatLosesTheRaceWithTheResponseDoesNothing(t *testing.T) {
	synctest.Test(t, testHeaderLimitThatLosesTheRaceWithTheResponseDoesNothing)
}

func testHeaderLimitThatLosesTheRaceWithTheResponseDoesNothing(t *testing.T) {
	for _, lim := range []stall.Limits{{Header: 5 * time.Second}, {Header: 5 * time.Second, Idle: time.Minute}} {
		p := newProvider(t)
		timers := newLateTimers()
		c := directClient(t, p, lim, timers)
		s := p.answer(&script{})
		resp := get(t, c, p.srv.URL)
		header := timers.next()
		assert.Equal(t, 5*time.Second, header.d)
		header.f() // the callback that started just before Stop
		done := readAll(resp.Body)
		sendAll(s, "data: one\n\n", "data: two\n\n")
		r := <-done
		require.NoError(t, r.err, "limits %+v", lim)
		assert.Equal(t, "data: one\n\ndata: two\n\n", string(r.b))
		require.NoError(t, resp.Body.Close())
	}
}

// An idle limit whose callback races the bytes that end its read and runs
// while the next read waits: that read is not cut, and the body reads to
// its end.
func TestIdleLimitThatLosesTheRaceWithItsBytesDoesNotCutTheNextRead(t *testing.T) {
	synctest.Test(t, testIdleLimitThatLosesTheRaceWithItsBytesDoesNotCutTheNextRead)
}

func testIdleLimitThatLosesTheRaceWithItsBytesDoesNotCutTheNextRead(t *testing.T) {
	p := newProvider(t)
	timers := newLateTimers()
	c := directClient(t, p, stall.Limits{Idle: 30 * time.Second}, timers)
	s := p.answer(&script{})
	resp := get(t, c, p.srv.URL)
	done := readAll(resp.Body)
	first := timers.next()
	s.body <- "data: one\n\n"
	timers.next() // the next read waits: the first one returned its bytes
	first.f()
	sendAll(s, "data: two\n\n")
	r := <-done
	require.NoError(t, r.err)
	assert.Equal(t, "data: one\n\ndata: two\n\n", string(r.b))
	require.NoError(t, resp.Body.Close())
}

// The consumer closes the body while a read waits and the idle limit fires
// at that moment: in either order, or both at once, the read ends with an
// error, nothing panics, hangs or leaks (goleak, -race), and a stall is
// reported only when the limit fired before the Close.
func TestIdleLimitFiringWhileTheConsumerCloses(t *testing.T) {
	for _, order := range []string{"close first", "limit first", "together"} {
		t.Run(order, func(t *testing.T) {
			for range 10 {
				synctest.Test(t, func(t *testing.T) { testIdleLimitFiringWhileTheConsumerCloses(t, order) })
			}
		})
	}
}

func testIdleLimitFiringWhileTheConsumerCloses(t *testing.T, order string) {
	p := newProvider(t)
	timers := newLateTimers()
	c := directClient(t, p, stall.Limits{Idle: 30 * time.Second}, timers)
	s := p.answer(&script{})
	resp := get(t, c, p.srv.URL)
	s.body <- keepalive
	buf := make([]byte, 64)
	n, err := resp.Body.Read(buf)
	require.NoError(t, err)
	require.Equal(t, keepalive, string(buf[:n]))
	timers.next()
	errc := make(chan error, 1)
	go func() {
		_, err := resp.Body.Read(buf)
		errc <- err
	}()
	idle := timers.next() // the second read waits
	var se *layer.StallError
	switch order {
	case "close first":
		_ = resp.Body.Close()
		idle.f()
		err := <-errc
		require.Error(t, err)
		assert.False(t, errors.As(err, &se), "a closed body is not a stall: %v", err)
	case "limit first":
		idle.f()
		err := <-errc
		require.ErrorAs(t, err, &se)
		assert.Equal(t, event.StallIdle, se.Limit)
		_ = resp.Body.Close()
	case "together":
		closed := make(chan struct{})
		go func() { _ = resp.Body.Close(); close(closed) }()
		idle.f()
		<-closed
		require.Error(t, <-errc)
	}
	// Every later read ends at once.
	_, err = resp.Body.Read(buf)
	require.Error(t, err)
	assert.NoError(t, resp.Body.Close(), "Close is idempotent")
}

// Bodies of zero bytes under an idle limit: one that ends at once (a
// Content-Length of 0, or an empty chunked body) reads as empty, never as
// a stall, also when the read's timer callback runs late.
func TestZeroByteBodiesUnderAnIdleLimit(t *testing.T) {
	synctest.Test(t, testZeroByteBodiesUnderAnIdleLimit)
}

func testZeroByteBodiesUnderAnIdleLimit(t *testing.T) {
	for _, h := range []http.Header{{"Content-Length": {"0"}}, {}} {
		p := newProvider(t)
		timers := newLateTimers()
		c := directClient(t, p, stall.Limits{Idle: 30 * time.Second}, timers)
		s := p.answer(&script{header: h})
		close(s.body)
		resp := get(t, c, p.srv.URL)
		r := <-readAll(resp.Body)
		require.NoError(t, r.err)
		assert.Empty(t, r.b)
		for len(timers.armed) > 0 {
			(<-timers.armed).f()
		}
		require.NoError(t, resp.Body.Close())
	}
}

// A stream answered with headers and a body of zero bytes that ends: an
// incomplete stream, resent like any transport failure before output, with
// no stall named. One whose zero bytes are held open: the idle limit fires
// on the first read, and the attempt is resent.
func TestZeroByteStreamsUnderAnIdleLimit(t *testing.T) {
	t.Run("ends", func(t *testing.T) { synctest.Test(t, testZeroByteStreamEnds) })
	t.Run("held", func(t *testing.T) { synctest.Test(t, testZeroByteStreamHeld) })
}

func testZeroByteStreamEnds(t *testing.T) {
	r := newRig(t, openai.New(), stall.Limits{Idle: 30 * time.Second}, retry.Policy{MaxAttempts: 2})
	close(r.p.answer(&script{header: http.Header{"Content-Length": {"0"}}}).body)
	sendAll(r.p.answer(&script{}), hello...)
	res := await(t, r.stream(context.Background()))
	require.NoError(t, res.err)
	assert.Equal(t, "Hello", res.text)
	require.Len(t, r.failures(), 1)
	f := r.failures()[0]
	assert.Empty(t, f.Stall)
	assert.Equal(t, event.CategoryTransport, f.Category)
	assert.True(t, f.Classification.Eligible)
}

func testZeroByteStreamHeld(t *testing.T) {
	r := newRig(t, openai.New(), stall.Limits{Idle: 30 * time.Second}, retry.Policy{MaxAttempts: 2})
	r.p.answer(&script{}) // headers, then nothing, held open
	sendAll(r.p.answer(&script{}), hello...)
	res := await(t, r.stream(context.Background()))
	assert.Equal(t, []time.Duration{0, 30 * time.Second}, r.eventsAt(event.AttemptStarted), "the first read was cut when it had waited the limit")
	require.NoError(t, res.err)
	assert.Equal(t, "Hello", res.text)
	require.Len(t, r.failures(), 1)
	f := r.failures()[0]
	assert.Equal(t, event.StallIdle, f.Stall)
	assert.True(t, f.Progress.HeadersReceived)
	assert.Zero(t, f.Progress.RawBytes)
	assert.Equal(t, event.Classification{Eligible: true, Reason: event.ReasonTransient}, f.Classification)
}
