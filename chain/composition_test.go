package chain_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/recourse-dev/recourse/chain"
	"github.com/recourse-dev/recourse/client"
	"github.com/recourse-dev/recourse/codecs/openai"
	"github.com/recourse-dev/recourse/event"
	"github.com/recourse-dev/recourse/internal/stage/capture"
	"github.com/recourse-dev/recourse/internal/stage/progress"
	"github.com/recourse-dev/recourse/internal/stage/redirectguard"
	"github.com/recourse-dev/recourse/layer"
	"github.com/recourse-dev/recourse/layers/retry"
	"github.com/recourse-dev/recourse/layers/sender"
	"github.com/recourse-dev/recourse/recoursetest"
)

// The composition property: no chain that chain.New accepts can break the
// wire. Every chain New accepts keeps the wire invariants (one POST per
// attempt, no redirect followed, no replay after semantic output, capture
// when OnWire is set); every other chain is refused at construction with a
// *chain.CompositionError naming what is missing or misplaced.
//
// The enumeration (compSequences) is exhaustive over the built-in layers:
// every subset of {capture, progress, redirectguard, sender} in every order
// (65 sequences), the engine at every index of each or absent (326), then a
// user per-call layer absent or at every index, then a user per-attempt
// layer absent or at every index (13,700 sequences in all). Every sequence
// is checked for construction against an oracle of the test's own; every
// accepted sequence (not a deduplicated shape: all 80 of them) then runs
// the behavioural scenarios against scripted loopback servers. A second,
// construction-only family repeats one layer of every accepted sequence
// right after itself: a repeated stage or engine is refused, a repeated
// user layer is accepted.

// compKind is one kind of layer in an enumerated sequence.
type compKind int

const (
	compPerCall compKind = iota
	compEngine
	compCapture
	compProgress
	compPerAttempt
	compGuard
	compSender
)

// compKinds describes each kind: its name in Chain.Order, the position it
// must report, and its rank in the documented order (the test's own table,
// from the package documentation: per-call, retry, capture, progress,
// per-attempt, redirectguard, sender). stage marks the kinds a chain may
// hold at most once.
var compKinds = [...]struct {
	name  string
	pos   layer.Position
	rank  int
	stage bool
}{
	compPerCall:    {"percall", layer.PerCall, 1, false},
	compEngine:     {"retry", layer.Engine, 2, true},
	compCapture:    {"capture", layer.StageCapture, 3, true},
	compProgress:   {"progress", layer.StageProgress, 4, true},
	compPerAttempt: {"perattempt", layer.PerAttempt, 5, false},
	compGuard:      {"redirectguard", layer.StageRedirectGuard, 6, true},
	compSender:     {"sender", layer.StageSender, 7, true},
}

func (k compKind) String() string { return compKinds[k].name }

// compName names a sequence for messages and subtests.
func compName(seq []compKind) string {
	if len(seq) == 0 {
		return "(none)"
	}
	names := make([]string, len(seq))
	for i, k := range seq {
		names[i] = k.String()
	}
	return strings.Join(names, ",")
}

func compInsert(seq []compKind, i int, k compKind) []compKind {
	out := make([]compKind, 0, len(seq)+1)
	out = append(out, seq[:i]...)
	out = append(out, k)
	return append(out, seq[i:]...)
}

func compHas(seq []compKind, k compKind) bool { return compIndex(seq, k) >= 0 }

func compIndex(seq []compKind, k compKind) int {
	for i, x := range seq {
		if x == k {
			return i
		}
	}
	return -1
}

// compBuiltinOrders returns every ordering of every subset of the built-in
// stages: 1 + 4 + 12 + 24 + 24 = 65 sequences.
func compBuiltinOrders() [][]compKind {
	var out [][]compKind
	var rec func(prefix, rest []compKind)
	rec = func(prefix, rest []compKind) {
		out = append(out, append([]compKind(nil), prefix...))
		for i, k := range rest {
			next := append(append([]compKind(nil), rest[:i]...), rest[i+1:]...)
			rec(append(append([]compKind(nil), prefix...), k), next)
		}
	}
	rec(nil, []compKind{compCapture, compProgress, compGuard, compSender})
	return out
}

// compWithEngine returns each sequence without an engine and with the
// engine at every index.
func compWithEngine(seqs [][]compKind) [][]compKind {
	var out [][]compKind
	for _, s := range seqs {
		out = append(out, s)
		for i := 0; i <= len(s); i++ {
			out = append(out, compInsert(s, i, compEngine))
		}
	}
	return out
}

// compWithUser returns each sequence without k and with k at every index.
func compWithUser(seqs [][]compKind, k compKind) [][]compKind {
	var out [][]compKind
	for _, s := range seqs {
		out = append(out, s)
		for i := 0; i <= len(s); i++ {
			out = append(out, compInsert(s, i, k))
		}
	}
	return out
}

// compSequences is the full enumeration.
func compSequences() [][]compKind {
	return compWithUser(compWithUser(compWithEngine(compBuiltinOrders()), compPerCall), compPerAttempt)
}

// compVerdict is the oracle's verdict on a sequence.
type compVerdict struct {
	ok bool
	// For a refusal: the index of the offending layer among New's
	// arguments and a fragment of the problem.
	index   int
	problem string
	// For an acceptance: the expected Chain.Order.
	order string
}

// compOracle decides, independently of package chain, whether New must
// accept seq: the arguments in non-decreasing rank, no stage or engine
// twice, capture and progress only with an engine. The first argument that
// breaks the order or repeats a stage is the one named; a stage without an
// engine is found only once every argument is seen (capture first).
func compOracle(seq []compKind) compVerdict {
	last := 0
	seen := map[compKind]bool{}
	for i, k := range seq {
		d := compKinds[k]
		if d.rank < last {
			return compVerdict{index: i, problem: "must come before the "}
		}
		last = d.rank
		if d.stage && seen[k] {
			return compVerdict{index: i, problem: "is given twice"}
		}
		seen[k] = true
	}
	engine := seen[compEngine]
	if !engine {
		for _, k := range []compKind{compCapture, compProgress} {
			if i := compIndex(seq, k); i >= 0 {
				return compVerdict{index: i, problem: "needs the retry engine above it"}
			}
		}
	}
	var order []string
	for _, k := range seq {
		if k == compPerCall {
			order = append(order, k.String())
		}
	}
	if engine {
		order = append(order, "retry", "capture", "progress")
	}
	for _, k := range seq {
		if k == compPerAttempt {
			order = append(order, k.String())
		}
	}
	order = append(order, "redirectguard", "sender")
	return compVerdict{ok: true, order: strings.Join(order, " > ")}
}

// compProbe counts what one chain did: the requests its user layers saw,
// the attempts the engine started and the snapshots its OnWire hook got.
type compProbe struct {
	calls, attempts, started, reqSnaps, respSnaps atomic.Int64
}

func (p *compProbe) onWire(_ context.Context, s layer.WireSnapshot) error {
	if s.Direction == layer.DirectionRequest {
		p.reqSnaps.Add(1)
	} else {
		p.respSnaps.Add(1)
	}
	return nil
}

func (p *compProbe) onEvent(ev event.Event) error {
	if ev.Type == event.AttemptStarted {
		p.started.Add(1)
	}
	return nil
}

// compPolicy is the enumeration's policy: three attempts, no delay (zero
// jitter and a Sleep that returns at once), an admission hook that allows,
// and the probe's hooks.
func compPolicy(p *compProbe) *retry.Policy {
	return &retry.Policy{
		MaxAttempts: 3,
		Jitter:      zeroJitter,
		Sleep:       func(ctx context.Context, _ time.Duration) error { return ctx.Err() },
		Admit:       allowHook,
		OnWire:      p.onWire,
		OnEvent:     p.onEvent,
	}
}

// compBuild returns a fresh layer of kind k wired to p.
func compBuild(t testing.TB, k compKind, p *compProbe) layer.Layer {
	t.Helper()
	switch k {
	case compPerCall:
		return layer.NewPerCall("percall", func(next http.RoundTripper) http.RoundTripper {
			return layer.RoundTripperFunc(func(r *http.Request) (*http.Response, error) {
				p.calls.Add(1)
				return next.RoundTrip(r)
			})
		})
	case compPerAttempt:
		return layer.NewPerAttempt("perattempt", func(next http.RoundTripper) http.RoundTripper {
			return layer.RoundTripperFunc(func(r *http.Request) (*http.Response, error) {
				p.attempts.Add(1)
				return next.RoundTrip(r)
			})
		})
	case compEngine:
		e, err := retry.New(openai.New(), compPolicy(p))
		require.NoError(t, err)
		return e
	case compCapture:
		return capture.New()
	case compProgress:
		return progress.New()
	case compGuard:
		return redirectguard.New()
	case compSender:
		return sender.New(nil)
	}
	t.Fatalf("unknown kind %d", k)
	return nil
}

func compLayers(t testing.TB, seq []compKind, p *compProbe) []layer.Layer {
	t.Helper()
	ls := make([]layer.Layer, len(seq))
	for i, k := range seq {
		ls[i] = compBuild(t, k, p)
	}
	return ls
}

// compCheckNew builds seq, asserts that New agrees with the oracle and
// returns whether it accepted.
func compCheckNew(t *testing.T, seq []compKind) bool {
	t.Helper()
	name := compName(seq)
	ls := compLayers(t, seq, &compProbe{})
	for i, l := range ls {
		require.Equal(t, compKinds[seq[i]].pos, l.Position(), "%s: layer %d reports its position", name, i)
	}
	want := compOracle(seq)
	ch, err := chain.New(ls...)
	if !want.ok {
		var ce *chain.CompositionError
		if !assert.ErrorAs(t, err, &ce, "%s: refused with a *chain.CompositionError", name) {
			return false
		}
		assert.Nil(t, ch, name)
		assert.Equal(t, want.index, ce.Index, "%s: the index names the offending layer (%v)", name, ce)
		assert.True(t, ce.Index >= 0 && ce.Index < len(seq), "%s: the index is in range (%v)", name, ce)
		if ce.Index >= 0 && ce.Index < len(seq) {
			assert.Equal(t, ls[ce.Index].Name(), ce.Name, "%s: the name is the offending layer's", name)
			assert.Equal(t, ls[ce.Index].Position(), ce.Position, "%s: the position is the offending layer's", name)
		}
		assert.Contains(t, ce.Problem, want.problem, "%s: %v", name, ce)
		assert.Contains(t, ce.Error(), ce.Name, name)
		return false
	}
	if !assert.NoError(t, err, "%s: accepted", name) {
		return false
	}
	assert.Equal(t, want.order, ch.Order(), "%s: every stage in its place, the missing ones installed", name)
	got := ch.Layers()
	for i, l := range ls {
		if !compKinds[seq[i]].stage {
			continue // a function layer is not comparable; the behaviour test counts its requests
		}
		found := false
		for _, g := range got {
			found = found || g == l
		}
		assert.True(t, found, "%s: stage %d (%s) is used, not replaced", name, i, l.Name())
	}
	assert.Equal(t, compHas(seq, compEngine), ch.Policy() != nil, "%s: recovers iff it has an engine", name)
	return true
}

// TestComposition_EveryBuiltInSubsetAndOrder: New agrees exactly with the
// oracle on every enumerated sequence, and on every accepted sequence with
// one of its layers repeated.
func TestComposition_EveryBuiltInSubsetAndOrder(t *testing.T) {
	require.Equal(t, 65, len(compBuiltinOrders()), "every ordering of every subset of the four stages")
	require.Equal(t, 326, len(compWithEngine(compBuiltinOrders())), "the engine at every index, or none")
	seqs := compSequences()
	require.Equal(t, 13700, len(seqs), "plus a per-call and a per-attempt layer, each absent or at every index")

	accepted, refused := 0, 0
	var acceptedSeqs [][]compKind
	for _, seq := range seqs {
		if compCheckNew(t, seq) {
			accepted++
			acceptedSeqs = append(acceptedSeqs, seq)
		} else {
			refused++
		}
	}
	// Sorted sequences only: 16 subsets with an engine and 4 (redirect
	// guard and sender only) without, each with and without each user layer.
	assert.Equal(t, 80, accepted)
	assert.Equal(t, len(seqs)-80, refused)

	dupAccepted, dupRefused := 0, 0
	for _, seq := range acceptedSeqs {
		for i, k := range seq {
			if compCheckNew(t, compInsert(seq, i+1, k)) {
				dupAccepted++
			} else {
				dupRefused++
			}
		}
	}
	assert.Equal(t, 80, dupAccepted, "a user layer may be given any number of times")
	assert.Equal(t, 208, dupRefused, "a stage or an engine given twice is refused")
	t.Logf("%d sequences: %d accepted, %d refused; %d with a repeated layer: %d accepted, %d refused",
		len(seqs), accepted, refused, dupAccepted+dupRefused, dupAccepted, dupRefused)
}

// compRig is one accepted chain built for one scenario, with its probe.
type compRig struct {
	seq   []compKind
	probe *compProbe
	ch    *chain.Chain
}

func newCompRig(t *testing.T, seq []compKind) *compRig {
	t.Helper()
	p := &compProbe{}
	ch, err := chain.New(compLayers(t, seq, p)...)
	require.NoError(t, err)
	t.Cleanup(ch.CloseIdleConnections)
	return &compRig{seq: seq, probe: p, ch: ch}
}

func (r *compRig) client(t *testing.T, s *recoursetest.Server) *client.Client {
	t.Helper()
	c, err := client.New(s.URL, r.ch)
	require.NoError(t, err)
	return c
}

// post sends body through an http.Client over the chain, as an SDK does.
func (r *compRig) post(t *testing.T, base string, body []byte) (*http.Response, error) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, base+completionsPath, bytes.NewReader(body))
	require.NoError(t, err)
	return (&http.Client{Transport: r.ch}).Do(req)
}

// users asserts that the per-attempt layer saw one request per POST and
// the per-call layer one per logical call, when the chain has them.
func (r *compRig) users(t *testing.T, posts, calls int) {
	t.Helper()
	if compHas(r.seq, compPerAttempt) {
		assert.EqualValues(t, posts, r.probe.attempts.Load(), "the per-attempt layer sees each wire attempt once")
	} else {
		assert.Zero(t, r.probe.attempts.Load())
	}
	if compHas(r.seq, compPerCall) {
		assert.EqualValues(t, calls, r.probe.calls.Load(), "the per-call layer sees each logical call once")
	} else {
		assert.Zero(t, r.probe.calls.Load())
	}
}

// wire asserts the engine's view: posts attempts started, one request
// snapshot each, and at least one response snapshot each.
func (r *compRig) wire(t *testing.T, posts int) {
	t.Helper()
	assert.EqualValues(t, posts, r.probe.started.Load(), "one attempt_started per POST")
	assert.EqualValues(t, posts, r.probe.reqSnaps.Load(), "OnWire got each request")
	assert.GreaterOrEqual(t, r.probe.respSnaps.Load(), int64(posts), "OnWire got each response")
}

func compStreamRequest(t testing.TB) []byte {
	req := canaryRequest()
	req.Stream = true
	return encoded(t, req)
}

// TestComposition_AcceptedChainsKeepTheWireInvariants runs every accepted
// enumerated sequence (all 80, see the doc comment above) against scripted
// loopback providers. With an engine: a 200 is one POST with both
// snapshots; a 307 is one POST whose Location is never contacted, through
// the native client and an http.Client; 503 then 200 is two POSTs; a
// perfect stream is one POST delivered once (native and drop-in); a stream
// cut after content is one POST and outcome interrupted. Without an engine:
// one POST per call and no redirect followed. The user layers see one
// request per wire attempt and per logical call.
func TestComposition_AcceptedChainsKeepTheWireInvariants(t *testing.T) {
	cases := 0
	for _, seq := range compSequences() {
		if !compOracle(seq).ok {
			continue
		}
		cases++
		t.Run(compName(seq), func(t *testing.T) {
			if compHas(seq, compEngine) {
				compEngineScenarios(t, seq)
			} else {
				compPlainScenarios(t, seq)
			}
		})
	}
	assert.Equal(t, 80, cases)
}

func compEngineScenarios(t *testing.T, seq []compKind) {
	events := recoursetest.OpenAIStream("Hel", "lo")

	t.Run("unary 200", func(t *testing.T) {
		r := newCompRig(t, seq)
		s := startServer(t, okStep("ok"), okStep("never"))
		comp, err := r.client(t, s).Complete(context.Background(), canaryRequest())
		require.NoError(t, err)
		assert.Equal(t, "ok", comp.Message.Content)
		assert.Equal(t, 1, s.Count(), "one POST")
		assert.EqualValues(t, 1, r.probe.respSnaps.Load(), "one response snapshot")
		r.wire(t, 1)
		r.users(t, 1, 1)
	})

	t.Run("unary 307", func(t *testing.T) {
		target := recoursetest.NewTarget()
		t.Cleanup(target.Close)
		redirect := recoursetest.Redirect(http.StatusTemporaryRedirect, target.URL+completionsPath)

		r := newCompRig(t, seq)
		s := startServer(t, redirect, okStep("never"))
		_, err := r.client(t, s).Complete(context.Background(), canaryRequest())
		re := asRecoveryError(t, err)
		assert.Equal(t, event.CategoryHTTP, re.Failure.Category)
		assert.Equal(t, http.StatusTemporaryRedirect, re.Failure.HTTPStatus)
		assert.Equal(t, 1, s.Count(), "one POST, the redirect not retried")
		r.wire(t, 1)
		r.users(t, 1, 1)

		r = newCompRig(t, seq)
		s = startServer(t, redirect, okStep("never"))
		resp, err := r.post(t, s.URL, encoded(t, canaryRequest()))
		if resp != nil {
			resp.Body.Close()
		}
		assert.Nil(t, resp, "an http.Client is never handed the redirect")
		asRecoveryError(t, err)
		assert.Equal(t, 1, s.Count(), "one POST")
		r.wire(t, 1)
		r.users(t, 1, 1)
		assert.Zero(t, target.Hits(), "the Location is never contacted")
	})

	t.Run("unary 503 then 200", func(t *testing.T) {
		r := newCompRig(t, seq)
		s := startServer(t, statusStep(503), okStep("ok"), okStep("never"))
		comp, err := r.client(t, s).Complete(context.Background(), canaryRequest())
		require.NoError(t, err)
		assert.Equal(t, "ok", comp.Message.Content)
		assert.Equal(t, 2, s.Count(), "two POSTs")
		r.wire(t, 2)
		r.users(t, 2, 1)
	})

	t.Run("perfect stream", func(t *testing.T) {
		r := newCompRig(t, seq)
		s := startServer(t, recoursetest.SSE(events...), recoursetest.SSE(events...), recoursetest.SSE(events...))
		text, comp, err := collect(t, r.client(t, s).Stream(context.Background(), canaryRequest()))
		require.NoError(t, err)
		assert.Equal(t, "Hello", text, "content delivered exactly once")
		require.NotNil(t, comp)
		assert.Equal(t, "stop", comp.FinishReason)
		assert.Equal(t, 1, s.Count(), "one POST for one perfect stream")
		r.wire(t, 1)
		r.users(t, 1, 1)
	})

	t.Run("perfect drop-in stream", func(t *testing.T) {
		r := newCompRig(t, seq)
		s := startServer(t, recoursetest.SSE(events...), recoursetest.SSE(events...), recoursetest.SSE(events...))
		resp, err := r.post(t, s.URL, compStreamRequest(t))
		require.NoError(t, err)
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		require.NoError(t, err)
		assert.Equal(t, strings.Join(events, ""), string(b), "every byte exactly once")
		assert.Equal(t, 1, s.Count(), "one POST for one perfect stream")
		r.wire(t, 1)
		r.users(t, 1, 1)
	})

	t.Run("stream cut after content", func(t *testing.T) {
		r := newCompRig(t, seq)
		cut := recoursetest.SSE(events...).Cut(len(events[0] + events[1]))
		s := startServer(t, cut, recoursetest.SSE(events...), recoursetest.SSE(events...))
		text, _, err := collect(t, r.client(t, s).Stream(context.Background(), canaryRequest()))
		re := asRecoveryError(t, err)
		assert.Equal(t, event.OutcomeInterrupted, re.Outcome)
		assert.Equal(t, event.ReasonSemanticOutput, re.Failure.Classification.Reason)
		assert.Equal(t, "Hel", text)
		assert.Equal(t, 1, s.Count(), "no replay after semantic output")
		r.wire(t, 1)
		r.users(t, 1, 1)
	})
}

func compPlainScenarios(t *testing.T, seq []compKind) {
	t.Run("unary 200", func(t *testing.T) {
		r := newCompRig(t, seq)
		body := recoursetest.OpenAIChat("ok")
		s := startServer(t, recoursetest.JSON(200, body), okStep("never"))
		resp, err := r.post(t, s.URL, encoded(t, canaryRequest()))
		require.NoError(t, err)
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		require.NoError(t, err)
		assert.Equal(t, http.StatusOK, resp.StatusCode)
		assert.Equal(t, body, string(b))
		assert.Equal(t, 1, s.Count(), "one POST")
		r.users(t, 1, 1)
	})

	t.Run("unary 503", func(t *testing.T) {
		r := newCompRig(t, seq)
		s := startServer(t, statusStep(503), okStep("never"))
		resp, err := r.post(t, s.URL, encoded(t, canaryRequest()))
		require.NoError(t, err)
		resp.Body.Close()
		assert.Equal(t, http.StatusServiceUnavailable, resp.StatusCode, "passed through, not retried")
		assert.Equal(t, 1, s.Count(), "one POST")
		r.users(t, 1, 1)
	})

	t.Run("unary 307", func(t *testing.T) {
		target := recoursetest.NewTarget()
		t.Cleanup(target.Close)
		r := newCompRig(t, seq)
		s := startServer(t, recoursetest.Redirect(http.StatusTemporaryRedirect, target.URL+completionsPath), okStep("never"))
		resp, err := r.post(t, s.URL, encoded(t, canaryRequest()))
		if resp != nil {
			resp.Body.Close()
		}
		assert.Nil(t, resp)
		var refused *layer.RedirectError
		require.ErrorAs(t, err, &refused)
		assert.Equal(t, http.StatusTemporaryRedirect, refused.StatusCode())
		assert.Equal(t, 1, s.Count(), "one POST")
		assert.Zero(t, target.Hits(), "the Location is never contacted")
		r.users(t, 1, 1)
	})

	t.Run("drop-in stream", func(t *testing.T) {
		events := recoursetest.OpenAIStream("Hel", "lo")
		r := newCompRig(t, seq)
		s := startServer(t, recoursetest.SSE(events...), recoursetest.SSE(events...))
		resp, err := r.post(t, s.URL, compStreamRequest(t))
		require.NoError(t, err)
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		require.NoError(t, err)
		assert.Equal(t, strings.Join(events, ""), string(b))
		assert.Equal(t, 1, s.Count(), "one POST")
		r.users(t, 1, 1)
	})
}

// compChain builds a chain of the user layer u and, when pol is not nil, an
// engine with pol, each in its place; the chain installs the rest. Its
// sender's connections are closed when the test ends.
func compChain(t *testing.T, pol *retry.Policy, u layer.Layer) *chain.Chain {
	t.Helper()
	var ls []layer.Layer
	if u.Position() == layer.PerCall {
		ls = append(ls, u)
	}
	if pol != nil {
		e, err := retry.New(openai.New(), pol)
		require.NoError(t, err)
		ls = append(ls, e)
	}
	if u.Position() != layer.PerCall {
		ls = append(ls, u)
	}
	ch, err := chain.New(ls...)
	require.NoError(t, err)
	t.Cleanup(ch.CloseIdleConnections)
	return ch
}

// compWireModes are the OnWire settings of the adversarial cases: with and
// without a hook. Without one, capture captures nothing; the attempt must
// begin all the same, or an answer a per-attempt layer makes itself is
// mistaken for a cancellation.
var compWireModes = []struct {
	name   string
	onWire bool
}{{"OnWire", true}, {"no OnWire", false}}

// compPolicyWire is compPolicy with or without its OnWire hook.
func compPolicyWire(p *compProbe, onWire bool) *retry.Policy {
	pol := compPolicy(p)
	if !onWire {
		pol.OnWire = nil
	}
	return pol
}

// TestComposition_PerAttemptLayerSendingTwiceIsRefused: a per-attempt layer
// that calls next twice gets layer.ErrSecondSend on the second call; the
// engine sees the attempt fail and the server sees exactly the POSTs the
// engine started (one per attempt, never two), unary and streaming.
func TestComposition_PerAttemptLayerSendingTwiceIsRefused(t *testing.T) {
	for _, streaming := range []bool{false, true} {
		for _, mode := range compWireModes {
			t.Run(fmt.Sprintf("streaming=%v/%s", streaming, mode.name), func(t *testing.T) {
				p := &compProbe{}
				pol := compPolicyWire(p, mode.onWire)
				var calls, refused atomic.Int64
				twice := layer.NewPerAttempt("twice", func(next http.RoundTripper) http.RoundTripper {
					return layer.RoundTripperFunc(func(r *http.Request) (*http.Response, error) {
						calls.Add(1)
						resp, err := next.RoundTrip(r)
						if err == nil {
							io.Copy(io.Discard, resp.Body)
							resp.Body.Close()
						}
						resp, err = next.RoundTrip(r)
						if errors.Is(err, layer.ErrSecondSend) {
							refused.Add(1)
						}
						return resp, err
					})
				})
				ch := compChain(t, pol, twice)
				events := recoursetest.OpenAIStream("Hel", "lo")
				ok := okStep("ok")
				if streaming {
					ok = recoursetest.SSE(events...)
				}
				s := startServer(t, repeat(ok, 10)...)
				c, err := client.New(s.URL, ch)
				require.NoError(t, err)

				if streaming {
					_, _, err = collect(t, c.Stream(context.Background(), canaryRequest()))
				} else {
					_, err = c.Complete(context.Background(), canaryRequest())
				}

				re := asRecoveryError(t, err)
				assert.ErrorIs(t, event.Inspect(&re.Failure).Cause, layer.ErrSecondSend, "the refusal reaches the engine as the attempt's failure")
				assert.Equal(t, calls.Load(), refused.Load(), "every second send was refused")
				assert.EqualValues(t, p.started.Load(), s.Count(), "the server sees only the POSTs the engine started")
				assert.EqualValues(t, calls.Load(), s.Count(), "one POST per attempt")
				assert.LessOrEqual(t, s.Count(), 3, "never more than MaxAttempts")
			})
		}
	}
}

// TestComposition_SyntheticRedirectIsNeverFollowed: a layer that returns a
// 307 itself, below the redirect guard's reach, never makes an http.Client
// follow it: a per-attempt layer's redirect is refused by the engine and,
// without an engine, by the chain's edge; a per-call layer's by the edge.
// Nothing is sent to the provider or the Location.
func TestComposition_SyntheticRedirectIsNeverFollowed(t *testing.T) {
	target := recoursetest.NewTarget()
	t.Cleanup(target.Close)
	synthetic := func(r *http.Request) (*http.Response, error) {
		if r.Body != nil {
			r.Body.Close()
		}
		return &http.Response{
			StatusCode: http.StatusTemporaryRedirect,
			Status:     "307 Temporary Redirect",
			Proto:      "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
			Header:  http.Header{"Location": {target.URL + completionsPath}},
			Body:    io.NopCloser(strings.NewReader("")),
			Request: r,
		}, nil
	}
	redirecting := func(mk func(string, layer.Func) layer.Layer) layer.Layer {
		return mk("redirecting", func(http.RoundTripper) http.RoundTripper { return layer.RoundTripperFunc(synthetic) })
	}

	type row struct {
		name   string
		engine bool
		onWire bool
		l      layer.Layer
	}
	rows := []row{
		{"per-attempt, engine, OnWire", true, true, redirecting(layer.NewPerAttempt)},
		{"per-attempt, engine, no OnWire", true, false, redirecting(layer.NewPerAttempt)},
		{"per-attempt, no engine", false, false, redirecting(layer.NewPerAttempt)},
		{"per-call, engine", true, true, redirecting(layer.NewPerCall)},
		{"per-call, no engine", false, false, redirecting(layer.NewPerCall)},
	}
	for _, tc := range rows {
		t.Run(tc.name, func(t *testing.T) {
			p := &compProbe{}
			var pol *retry.Policy
			if tc.engine {
				pol = compPolicyWire(p, tc.onWire)
			}
			ch := compChain(t, pol, tc.l)
			s := startServer(t, okStep("never"))
			req, err := http.NewRequest(http.MethodPost, s.URL+completionsPath, bytes.NewReader(encoded(t, canaryRequest())))
			require.NoError(t, err)

			resp, err := (&http.Client{Transport: ch}).Do(req)

			if resp != nil {
				resp.Body.Close()
			}
			assert.Nil(t, resp, "the client is never handed the redirect")
			require.Error(t, err)
			if tc.engine && tc.l.Position() == layer.PerAttempt {
				re := asRecoveryError(t, err)
				assert.Equal(t, event.OutcomeInterrupted, re.Outcome)
				assert.Equal(t, event.CategoryHTTP, re.Failure.Category)
				assert.Equal(t, http.StatusTemporaryRedirect, re.Failure.HTTPStatus)
				assert.False(t, re.Failure.Classification.Eligible)
				assert.EqualValues(t, 1, p.started.Load(), "the layer's answer is one attempt")
				assert.NotErrorIs(t, err, context.Canceled)
			} else {
				var refused *layer.RedirectError
				require.ErrorAs(t, err, &refused)
				assert.Equal(t, http.StatusTemporaryRedirect, refused.StatusCode())
			}
			assert.Zero(t, s.Count(), "nothing reached the provider")
			assert.Zero(t, target.Hits(), "the Location is never contacted")
		})
	}
}

// TestComposition_SyntheticStreamIsSemanticOutput: a per-attempt layer that
// answers a stream itself, with content and then EOF without the terminal
// frame, sits below progress: its content is semantic output, so the call
// ends interrupted with the content delivered once and nothing replayed.
func TestComposition_SyntheticStreamIsSemanticOutput(t *testing.T) {
	events := recoursetest.OpenAIStream("Hel", "lo")
	for _, mode := range compWireModes {
		t.Run(mode.name, func(t *testing.T) {
			p := &compProbe{}
			pol := compPolicyWire(p, mode.onWire)
			var calls atomic.Int64
			faulty := layer.NewPerAttempt("faulty", func(http.RoundTripper) http.RoundTripper {
				return layer.RoundTripperFunc(func(r *http.Request) (*http.Response, error) {
					calls.Add(1)
					if r.Body != nil {
						r.Body.Close()
					}
					return &http.Response{
						StatusCode: http.StatusOK,
						Status:     "200 OK",
						Proto:      "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
						Header:        http.Header{"Content-Type": {recoursetest.ContentTypeSSE}},
						Body:          io.NopCloser(strings.NewReader(events[0] + events[1])),
						ContentLength: -1,
						Request:       r,
					}, nil
				})
			})
			ch := compChain(t, pol, faulty)
			s := startServer(t, recoursetest.SSE(events...))
			c, err := client.New(s.URL, ch)
			require.NoError(t, err)

			text, _, err := collect(t, c.Stream(context.Background(), canaryRequest()))

			re := asRecoveryError(t, err)
			assert.Equal(t, event.OutcomeInterrupted, re.Outcome)
			assert.Equal(t, event.ReasonSemanticOutput, re.Failure.Classification.Reason)
			assert.Equal(t, int64(3), re.Failure.Progress.Observed.ContentBytes, "progress counted the layer's content")
			assert.Equal(t, "Hel", text, "delivered once")
			assert.EqualValues(t, 1, calls.Load(), "no replay after semantic output")
			assert.EqualValues(t, 1, p.started.Load(), "the layer's answer is one attempt")
			assert.Equal(t, 1, re.Failure.Identity.WireAttempt)
			assert.Zero(t, s.Count(), "nothing reached the provider")
			if mode.onWire {
				assert.EqualValues(t, 1, p.reqSnaps.Load(), "capture saw the request")
				assert.GreaterOrEqual(t, p.respSnaps.Load(), int64(1), "capture saw the layer's answer")
			}
		})
	}
}

// TestComposition_PerAttemptFaultIsAnAttempt: a per-attempt fault injector
// that answers the first attempt with a 503 itself and passes the next one
// on makes two attempts, the first of which never reaches the provider: an
// eligible failure that is retried, with or without an OnWire hook (not a
// cancellation nobody asked for).
func TestComposition_PerAttemptFaultIsAnAttempt(t *testing.T) {
	for _, mode := range compWireModes {
		t.Run(mode.name, func(t *testing.T) {
			p := &compProbe{}
			var calls atomic.Int64
			fault := layer.NewPerAttempt("fault", func(next http.RoundTripper) http.RoundTripper {
				return layer.RoundTripperFunc(func(r *http.Request) (*http.Response, error) {
					if calls.Add(1) > 1 {
						return next.RoundTrip(r)
					}
					if r.Body != nil {
						r.Body.Close()
					}
					body := recoursetest.OpenAIError("server_error", "server_error", "injected")
					return &http.Response{
						StatusCode: http.StatusServiceUnavailable,
						Status:     "503 Service Unavailable",
						Proto:      "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
						Header:        http.Header{"Content-Type": {recoursetest.ContentTypeJSON}},
						Body:          io.NopCloser(strings.NewReader(body)),
						ContentLength: int64(len(body)),
						Request:       r,
					}, nil
				})
			})
			ch := compChain(t, compPolicyWire(p, mode.onWire), fault)
			s := startServer(t, okStep("ok"), okStep("never"))
			c, err := client.New(s.URL, ch)
			require.NoError(t, err)

			comp, err := c.Complete(context.Background(), canaryRequest())

			require.NoError(t, err)
			assert.Equal(t, "ok", comp.Message.Content)
			assert.EqualValues(t, 2, calls.Load())
			assert.EqualValues(t, 2, p.started.Load(), "the injected failure is an attempt")
			assert.Equal(t, 1, s.Count(), "one POST: the first attempt never left")
			if mode.onWire {
				assert.EqualValues(t, 2, p.reqSnaps.Load())
				assert.EqualValues(t, 2, p.respSnaps.Load(), "the injected answer is captured like a provider's")
			}
		})
	}
}

// foreignLayer is a layer of a type outside this module that claims any
// position it is given.
type foreignLayer struct {
	name string
	pos  layer.Position
}

func (f foreignLayer) Name() string                                  { return f.name }
func (f foreignLayer) Position() layer.Position                      { return f.pos }
func (f foreignLayer) Wrap(next http.RoundTripper) http.RoundTripper { return next }

// TestComposition_ForeignStageIsRefused: only this module's engine and
// stages may take their positions; a foreign type claiming one, a position
// outside the known ones and a nil layer are refused with a
// *chain.CompositionError naming the layer and its index.
func TestComposition_ForeignStageIsRefused(t *testing.T) {
	engine, err := retry.New(openai.New(), compPolicy(&compProbe{}))
	require.NoError(t, err)
	rows := []struct {
		name    string
		layers  []layer.Layer
		index   int
		lname   string
		pos     layer.Position
		problem string
	}{
		{"foreign engine", []layer.Layer{foreignLayer{"fake-retry", layer.Engine}}, 0, "fake-retry", layer.Engine,
			"claims a position only the chain's own engine may take"},
		{"foreign sender", []layer.Layer{engine, foreignLayer{"fake-sender", layer.StageSender}}, 1, "fake-sender", layer.StageSender,
			"claims a position only the chain's own sender may take"},
		{"foreign sender without engine", []layer.Layer{foreignLayer{"fake-sender", layer.StageSender}}, 0, "fake-sender", layer.StageSender,
			"claims a position only the chain's own sender may take"},
		{"foreign capture", []layer.Layer{engine, foreignLayer{"fake-capture", layer.StageCapture}}, 1, "fake-capture", layer.StageCapture,
			"claims a position only the chain's own capture may take"},
		{"foreign progress", []layer.Layer{engine, foreignLayer{"fake-progress", layer.StageProgress}}, 1, "fake-progress", layer.StageProgress,
			"claims a position only the chain's own progress may take"},
		{"foreign redirect guard", []layer.Layer{engine, foreignLayer{"fake-guard", layer.StageRedirectGuard}}, 1, "fake-guard", layer.StageRedirectGuard,
			"claims a position only the chain's own redirect guard may take"},
		{"unknown position 0", []layer.Layer{foreignLayer{"zero", 0}}, 0, "zero", 0, "has an unknown position"},
		{"unknown position above sender", []layer.Layer{engine, foreignLayer{"below", layer.StageSender + 1}}, 1, "below", layer.StageSender + 1,
			"has an unknown position"},
		{"nil", []layer.Layer{engine, nil}, 1, "", 0, "is nil"},
	}
	for _, tc := range rows {
		t.Run(tc.name, func(t *testing.T) {
			ch, err := chain.New(tc.layers...)
			assert.Nil(t, ch)
			var ce *chain.CompositionError
			require.ErrorAs(t, err, &ce)
			assert.Equal(t, tc.index, ce.Index)
			assert.Equal(t, tc.lname, ce.Name)
			assert.Equal(t, tc.pos, ce.Position)
			assert.Equal(t, tc.problem, ce.Problem)
		})
	}

	// A foreign sender also cannot slip in after a real one.
	_, err = chain.New(engine, sender.New(nil), foreignLayer{"fake-sender", layer.StageSender})
	var ce *chain.CompositionError
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, 2, ce.Index)
	assert.Equal(t, "fake-sender", ce.Name)
}
