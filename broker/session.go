package broker

import (
	"context"
	"iter"
	"sync"
	"sync/atomic"

	"github.com/recourse-dev/recourse/chat"
)

// Session is a chat session over a Broker: it keeps the
// conversation and runs one turn at a time. A failed turn keeps the user
// message and the completed tool history, never incomplete assistant text —
// also when the context is cancelled or the consumer of SendStream stops
// ranging — and returns the typed error; a *layer.PolicyError adds no
// assistant message. Notices never enter the session's messages.
// The messages of a turn are stored when the turn ends. Messages is safe
// to call at any time; a turn asked for while another is running returns
// ErrBusy.
type Session struct {
	b    *Broker
	busy atomic.Bool
	mu   sync.Mutex
	msgs []chat.Message
}

// NewSession returns a session over b whose conversation starts with the
// system message system (none when it is empty).
func NewSession(b *Broker, system string) *Session {
	s := &Session{b: b}
	if system != "" {
		s.msgs = []chat.Message{{Role: chat.System, Content: system}}
	}
	return s
}

// Messages returns a copy of the conversation.
func (s *Session) Messages() []chat.Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]chat.Message, len(s.msgs))
	for i, m := range s.msgs {
		out[i] = m.Clone()
	}
	return out
}

// Send adds text as a user message, runs the broker's tool loop
// (Broker.Generate) and returns the final answer's content. On failure it
// returns "" and the error; the conversation keeps the user message and
// every completed assistant and tool message.
func (s *Session) Send(ctx context.Context, text string) (string, error) {
	if !s.busy.CompareAndSwap(false, true) {
		return "", ErrBusy
	}
	defer s.busy.Store(false)
	work := s.turn(text)
	comp, err := s.b.Generate(ctx, &work)
	s.keep(work)
	if err != nil {
		return "", err
	}
	return comp.Message.Content, nil
}

// SendStream adds text as a user message and runs the broker's streaming
// tool loop (Broker.GenerateStream), yielding its content strings and, on
// failure, one error. The conversation is updated when the stream ends —
// completed, failed, cancelled or left by the consumer — with the user
// message and every completed message only.
func (s *Session) SendStream(ctx context.Context, text string) iter.Seq2[string, error] {
	return func(yield func(string, error) bool) {
		if !s.busy.CompareAndSwap(false, true) {
			yield("", ErrBusy)
			return
		}
		defer s.busy.Store(false)
		work := s.turn(text)
		defer func() { s.keep(work) }()
		for chunk, err := range s.b.GenerateStream(ctx, &work) {
			if !yield(chunk, err) {
				return
			}
		}
	}
}

// turn returns a working copy of the conversation with the user message.
func (s *Session) turn(text string) []chat.Message {
	work := s.Messages()
	return append(work, chat.Message{Role: chat.User, Content: text})
}

// keep stores the conversation of a finished turn.
func (s *Session) keep(work []chat.Message) {
	s.mu.Lock()
	s.msgs = work
	s.mu.Unlock()
}
