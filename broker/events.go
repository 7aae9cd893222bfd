package broker

import (
	"context"
	"iter"

	"github.com/recourse-dev/recourse/chat"
	"github.com/recourse-dev/recourse/client"
	"github.com/recourse-dev/recourse/layer"
)

// GenerateStreamEvents runs one streamed completion of history as events
// (R13.7): content events as they arrive, then a done event whose
// Completion carries the finish reason, model and usage, or one error event
// whose Err has reason cancelled, interrupted_stream or request_failed and,
// when recovery ran, the typed *layer.RecoveryError (Err.Recovery). It is
// single-turn: it takes no tools, so a broker with tools yields one error
// event whose Err.Detail is client.ErrToolsNotSupported and sends nothing.
// Reasoning is not delivered (it stays in the observed progress of a
// failure). It uses the same policy (WithPolicy, else the chain's), the
// same retry notices and activity signals, and the same cancellation as
// GenerateStream. On done the assistant message is appended to history; on
// an error, or when the consumer stops ranging, nothing is.
func (b *Broker) GenerateStreamEvents(ctx context.Context, history *[]chat.Message) iter.Seq[client.StreamEvent] {
	return func(yield func(client.StreamEvent) bool) {
		fail := func(detail error) {
			yield(client.StreamEvent{Type: client.EventError, Err: &layer.StreamError{Reason: layer.StreamRequestFailed, Detail: detail}})
		}
		if history == nil {
			fail(ErrNilHistory)
			return
		}
		if len(b.tools) > 0 {
			fail(client.ErrToolsNotSupported)
			return
		}
		r := b.newRun()
		defer r.end()
		cctx, idx := r.begin(ctx)
		for ev := range b.client.StreamEvents(cctx, b.request(*history, false)) {
			switch ev.Type {
			case client.EventContent:
				r.delta(ActivityContent, idx)
			case client.EventDone:
				if ev.Completion != nil {
					msg := ev.Completion.Message.Clone()
					msg.Role = chat.Assistant
					*history = append(*history, msg)
				}
			}
			if !yield(ev) {
				return
			}
		}
	}
}
