package retry

// stream_read.go holds the drop-in byte view of a recovering stream: Read and the in-band error frame that ends it.

import (
	"errors"
	"io"

	"github.com/recourse-dev/recourse/codec"
	"github.com/recourse-dev/recourse/event"
	"github.com/recourse-dev/recourse/layer"
)

// Read returns the exact bytes of whole frames (drop-in use). The frames
// without evidence that open the stream are held until its first frame
// with evidence or its terminal frame, and a resend drops them, so that
// the reader sees one preamble (R13.9). Three deliberate exceptions to
// the exact bytes: NDJSON blank keepalive lines are left out (they
// mean nothing, and the official Ollama client fails on them); an in-band
// provider error frame that ended the stream is handed over before the
// typed error, so the client reports the provider's error itself; and
// otherwise, when the stream ends with a *layer.RecoveryError other than a
// cancellation and the codec is a codec.ErrorFramer, its in-band error
// frame carrying the error's safe text comes before the read error, so a
// client that ignores its reader's error still fails. A cancelled stream
// returns the *layer.RecoveryError alone, which unwraps to the context's
// error (R9.1).
func (b *streamBody) Read(p []byte) (int, error) {
	if !b.enter() {
		return 0, b.closedErr()
	}
	n, err := b.read(p)
	if b.leave() {
		return 0, errClosed
	}
	return n, err
}

func (b *streamBody) read(p []byte) (int, error) {
	for len(b.raw) == 0 {
		f, err := b.next()
		if err != nil {
			if held := b.takeHeld(); len(held) > 0 && !b.cancelled(err) {
				// The stream ends: a held preamble comes before what ends
				// it, as the provider sent it, but abort wins over it
				// (R13.5).
				b.raw = held
				break
			}
			if len(b.tail) > 0 && err != io.EOF {
				b.raw, b.tail = b.tail, nil
				b.framed = true
				break
			}
			if fr := b.errorFrame(err); fr != nil {
				b.raw = fr
				break
			}
			return 0, err
		}
		if f.Keepalive && b.c.d.facts.HideKeepalives {
			continue
		}
		sem := f.Semantic()
		sem.CompletedToolCalls = 0
		b.a.Deliver(sem)
		b.raw = f.Raw
	}
	n := copy(p, b.raw)
	b.raw = b.raw[n:]
	return n, nil
}

// cancelled reports whether the stream's final error err is its
// cancellation: the call ended cancelled, or the reader closed the body.
func (b *streamBody) cancelled(err error) bool {
	var re *layer.RecoveryError
	return b.state.Load() >= closing || errors.Is(err, errClosed) ||
		(errors.As(err, &re) && re.Outcome == event.OutcomeCancelled)
}

// errorFrame returns the codec's in-band error frame for the stream's final
// error err, once, or nil: none after a provider's own error frame, after
// Close, for an error that is not a *layer.RecoveryError, or for a
// cancellation — the caller who cancelled reads its context's error, which
// the *layer.RecoveryError unwraps to, as it would without recourse (R9.1).
func (b *streamBody) errorFrame(err error) []byte {
	var re *layer.RecoveryError
	if b.framed || b.state.Load() >= closing || !errors.As(err, &re) || re.Outcome == event.OutcomeCancelled {
		return nil
	}
	ef, ok := b.c.t.l.codec.(codec.ErrorFramer)
	if !ok {
		return nil
	}
	b.framed = true
	return ef.ErrorFrame(re.Error())
}
