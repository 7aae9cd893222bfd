package broker

import (
	"context"
	"errors"
	"iter"
	"strings"
	"time"

	"github.com/recourse-dev/recourse/chat"
	"github.com/recourse-dev/recourse/client"
	"github.com/recourse-dev/recourse/codec"
	"github.com/recourse-dev/recourse/event"
	"github.com/recourse-dev/recourse/layer"
	"github.com/recourse-dev/recourse/layers/retry"
)

// errNoCompletion ends a stream that stopped without a terminal chunk and
// without an error (a chain would never do that).
var errNoCompletion = errors.New("broker: the stream ended without a completion")

// GenerateStream runs the same tool loop as Generate over streamed
// completions (Client.Stream) and yields the content strings as they
// arrive. Tool calls are taken only from the completion of the accepted
// terminal chunk; fragments are never executed. On failure it yields one
// error and stops; a consumer that stops ranging stops the run. In every
// case the history keeps everything completed and never an unfinished
// assistant message.
//
// With WithContinuation, a stream that breaks after it started is continued:
// the blocks the protocol had closed — reasoning once content or a
// tool call started, text once a tool call started — are appended as a
// partial assistant message (never an unfinished block, never a tool call;
// closed reasoning alone makes a message without content, which the
// OpenAI and oMLX codecs leave out of the request and Ollama's sends as
// thinking),
// and the next request of the loop continues from that history, after the
// admission and backoff of a retry, within the budget, announced with a
// ContinuationNotice. A break before any block closed commits nothing and
// sends the same conversation again (reason ReasonRestart). Only breaks of
// the transport (an interrupted *layer.RecoveryError with semantic output,
// category transport or client_timeout) are continued; a length finish, an
// in-band provider error or a malformed stream ends the run as without
// continuation. A partial message committed for a continuation holds
// closed blocks only, so it stays in the history when a later completion
// of the run fails.
func (b *Broker) GenerateStream(ctx context.Context, history *[]chat.Message) iter.Seq2[string, error] {
	return func(yield func(string, error) bool) {
		if history == nil {
			yield("", ErrNilHistory)
			return
		}
		r := b.newRun()
		defer r.end()
		rounds, conts := 0, 0
		var dec *retry.Decider // the decision plane of the answer's continuations
		for {
			cctx, idx := r.begin(ctx)
			var blocks tracker
			var comp *chat.Completion
			var serr error
			for ch, err := range b.client.Stream(cctx, b.request(*history, true), client.WithReasoning(), client.WithToolFragments()) {
				if err != nil {
					serr = err
					break
				}
				if ch.Reasoning != "" {
					blocks.add(blockReasoning, ch.Reasoning)
					r.delta(ActivityReasoning, idx)
				}
				if ch.ReasoningSignature != "" {
					blocks.sign(ch.ReasoningSignature)
				}
				if ch.Content != "" {
					blocks.add(blockText, ch.Content)
					r.delta(ActivityContent, idx)
				}
				if len(ch.ToolCallFragments) > 0 {
					blocks.add(blockTool, "")
					r.delta(ActivityToolCall, idx)
				}
				if ch.Content != "" && !yield(ch.Content, nil) {
					return
				}
				if ch.Done {
					comp = ch.Completion
				}
			}
			if serr == nil && comp == nil {
				serr = errNoCompletion
			}
			if serr != nil {
				partial, err := b.continuation(ctx, idx, conts, &dec, &blocks, serr)
				if err != nil {
					yield("", err)
					return
				}
				conts++
				if partial != nil {
					*history = append(*history, *partial)
				}
				continue
			}
			if dec != nil {
				dec.Succeeded() // the continuation worked: refunded
			}
			conts, dec = 0, nil
			done, err := b.completed(ctx, r, idx, history, comp, &rounds)
			if err != nil {
				yield("", err)
				return
			}
			if done {
				return
			}
		}
	}
}

// continuable returns the RecoveryError of a stream that broke after it
// started, when continuation may apply to it, or nil.
func continuable(err error) *layer.RecoveryError {
	var re *layer.RecoveryError
	if !errors.As(err, &re) || re.Outcome != event.OutcomeInterrupted {
		return nil
	}
	f := re.Failure
	if f.Classification.Reason != event.ReasonSemanticOutput {
		return nil
	}
	if f.Category != event.CategoryTransport && f.Category != event.CategoryClientTimeout {
		return nil // length finishes, in-band provider errors, malformed streams
	}
	return re
}

// continuation decides what follows the break serr of completion idx, the
// done-th continuation in a row having been sent already. It returns the
// error that ends the run, or the partial assistant message to commit
// (nil for a restart) once the continuation's admission and backoff passed.
// The admission, the delay, the budget and deadline and the sleep are the
// engine's decision plane (*retry.Decider), run for the answer's
// continuations in a row under the broker's policy or the chain's; the
// notice is given when the delay is scheduled, before the sleep. Nothing is
// committed when it returns an error.
func (b *Broker) continuation(ctx context.Context, idx, done int, dec **retry.Decider, blocks *tracker, serr error) (*chat.Message, error) {
	re := continuable(serr)
	if b.cont.Max <= 0 || re == nil {
		return nil, serr
	}
	stop := func(o event.Outcome, cause error) error {
		return &ContinuationError{Outcome: o, Completion: idx, Continuations: done, Max: b.cont.Max, Err: re, cause: cause}
	}
	if err := ctx.Err(); err != nil {
		return nil, stop(event.OutcomeCancelled, err)
	}
	if done >= b.cont.Max {
		return nil, stop(event.OutcomeExhausted, nil)
	}
	if *dec == nil {
		p := retry.Policy{}
		if b.policy != nil {
			p = *b.policy
		} else if cp := b.client.Chain().Policy(); cp != nil {
			p = *cp
		}
		var facts codec.Facts
		if c := b.client.Chain().Codec(); c != nil {
			facts = c.Facts()
		}
		d, err := p.NewDecider(facts, b.cont.Max)
		if err != nil {
			return nil, err
		}
		// A continuation withdraws from the chain's retry quota like a
		// resend (its request deposits like any call).
		d.Bind(b.client.Gate(b.model))
		*dec = d
	}
	d := *dec
	d.Failed()
	attempt := done + 1
	partial, discarded := blocks.partial()
	reason := re.Failure.Text()
	if partial == nil {
		reason = ReasonRestart
	}
	f := re.Failure
	// The continuation is announced when its delay is scheduled, before the
	// sleep; the decision plane's other events belong to the chain's
	// observers, not to continuations. The continuation is a new completion:
	// its first wire attempt is 1, its backoff that of the attempt-th resend.
	emit := func(typ event.Type, _ *event.Failure, delay time.Duration, _ int) error {
		if typ == event.DelayScheduled && b.notify != nil {
			b.notify(Notice{Event: EventContinuation, Continuation: &ContinuationNotice{
				Completion: idx, Attempt: attempt, Max: b.cont.Max, Reason: reason, Wait: delay, Discarded: discarded,
			}})
		}
		return nil
	}
	o, err := d.Resend(ctx, &f, attempt, 1, emit)
	if err != nil {
		return nil, err
	}
	switch o {
	case "":
		return partial, nil
	case event.OutcomeCancelled:
		return nil, stop(o, ctx.Err())
	case event.OutcomeInterrupted:
		var cause error
		if ev := event.Inspect(&f); ev != nil {
			cause = ev.DelayCause
		}
		return nil, stop(o, cause)
	case event.OutcomeQuotaExhausted:
		err := stop(o, nil).(*ContinuationError)
		err.Quota = d.Refusal()
		return nil, err
	default:
		return nil, stop(o, nil)
	}
}

// blockKind is the kind of a streamed block.
type blockKind int

const (
	blockReasoning blockKind = iota
	blockText
	blockTool
)

// block is one run of deltas of one kind.
type block struct {
	kind   blockKind
	text   strings.Builder
	closed bool
	// signature is the provider's signature of a reasoning block it
	// closed itself (R22.7), or "".
	signature string
}

// tracker follows the blocks of one streamed completion and knows which
// ones the protocol has closed: reasoning closes when content or a tool
// call starts, text closes when a tool call starts, and a terminal frame
// would close everything (but then the completion is used as it is).
type tracker struct {
	blocks  []*block
	content int // content bytes delivered to the consumer
}

// closes reports whether a delta of kind next closes an open block of kind open.
func closes(next, open blockKind) bool {
	switch open {
	case blockReasoning:
		return next == blockText || next == blockTool
	case blockText:
		return next == blockTool
	}
	return false
}

// add records a delta of kind k.
func (t *tracker) add(k blockKind, s string) {
	if k == blockText {
		t.content += len(s)
	}
	var cur *block
	for _, bl := range t.blocks {
		if bl.closed {
			continue
		}
		if closes(k, bl.kind) {
			bl.closed = true
		} else if bl.kind == k {
			cur = bl
		}
	}
	if cur == nil {
		cur = &block{kind: k}
		t.blocks = append(t.blocks, cur)
	}
	cur.text.WriteString(s)
}

// sign closes the open reasoning block with the provider's signature: the
// provider closed it, and its text goes back only with that signature
// (R22.7).
func (t *tracker) sign(sig string) {
	for i := len(t.blocks) - 1; i >= 0; i-- {
		if bl := t.blocks[i]; bl.kind == blockReasoning && !bl.closed {
			bl.closed, bl.signature = true, sig
			return
		}
	}
}

// partial returns the assistant message of the closed reasoning and text
// blocks (nil when no block closed) and the delivered content bytes it
// leaves out. Tool calls are never part of it.
func (t *tracker) partial() (*chat.Message, int) {
	var content, reasoning strings.Builder
	var signature string
	signed := 0
	for _, bl := range t.blocks {
		if !bl.closed {
			continue
		}
		switch bl.kind {
		case blockReasoning:
			reasoning.WriteString(bl.text.String())
			signed++
			signature = bl.signature
		case blockText:
			content.WriteString(bl.text.String())
		}
	}
	discarded := t.content - content.Len()
	if content.Len() == 0 && reasoning.Len() == 0 {
		return nil, discarded
	}
	// Closed reasoning alone is committed too: the history keeps
	// it. A codec that cannot send reasoning back leaves such a message out
	// of the request, so no provider sees an empty assistant turn; Ollama
	// sends it as the message's thinking.
	msg := &chat.Message{Role: chat.Assistant, Content: content.String(), Reasoning: reasoning.String()}
	if signed == 1 {
		// One closed reasoning block keeps its signature; joined blocks
		// have none that covers them.
		msg.ReasoningSignature = signature
	}
	return msg, discarded
}
