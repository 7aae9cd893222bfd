package frames

import (
	"errors"
	"testing"

	"github.com/recourse-dev/recourse/codec"
)

func TestR13_6_IndexSkipsKeepalivesAndMalformedFrames(t *testing.T) {
	var q Queue
	q.Push(codec.Frame{Keepalive: true})
	q.Push(codec.Frame{Content: "a"})
	q.Push(codec.Frame{Content: "b"})
	q.Push(codec.Frame{Err: &codec.IncompleteError{FinishReason: "length"}})
	want := []int{0, 1, 2, 3}
	for i, w := range want {
		f, ok := q.Next()
		if !ok || f.Index != w {
			t.Fatalf("frame %d: ok=%v index=%d, want %d", i, ok, f.Index, w)
		}
	}
	if _, ok := q.Next(); ok {
		t.Fatal("the queue is drained")
	}
	if !q.Ended() {
		t.Fatal("an error frame ends the stream")
	}

	var m Queue
	m.Push(codec.Frame{Err: &codec.ProtocolError{What: "x"}})
	if f, _ := m.Next(); f.Index != 0 || !errors.As(f.Err, new(*codec.ProtocolError)) || !m.Ended() {
		t.Fatalf("a malformed frame takes no index and ends the stream: %+v", f)
	}
}

func TestRawIsOwnedByItsFrame(t *testing.T) {
	var q Queue
	a := q.Raw([]byte(": keep-alive\n\n"))
	b := q.Raw([]byte(": keep-alive\n\n"))
	a = append(a, 'X')
	a[0] = '#'
	if string(b) != ": keep-alive\n\n" {
		t.Fatalf("writing to one frame's Raw changed another: %q", b)
	}
	if cap(b) != len(b) {
		t.Fatalf("cap %d != len %d: appending could overwrite a neighbour", cap(b), len(b))
	}
	big := make([]byte, 4096)
	if c := q.Raw(big); len(c) != len(big) || &c[0] == &big[0] {
		t.Fatal("a large frame is copied, not aliased")
	}
	if q.Raw(nil) != nil {
		t.Fatal("an empty Raw is nil")
	}
}

func TestKeepaliveRawAllocatesNothing(t *testing.T) {
	var q Queue
	ka := []byte(": keep-alive\n\n")
	q.Raw(ka) // the first block
	allocs := testing.AllocsPerRun(100, func() {
		for range 16 {
			_ = q.Raw(ka)
		}
		q.arena.block = q.arena.block[:0]
	})
	if allocs != 0 {
		t.Fatalf("%v allocations per 16 keepalive copies, want 0", allocs)
	}
}

// Push copies Raw, so a decoder may pass a slice of its own buffer: a later
// change to that buffer changes no queued frame. With ErrorRawOnly only
// error frames keep their Raw.
func TestPushCopiesRawAndErrorRawOnlyKeepsErrorsAlone(t *testing.T) {
	buf := []byte(": keep-alive\n\n")
	var q Queue
	q.Push(codec.Frame{Raw: buf, Keepalive: true})
	copy(buf, "XXXXXXXXXXXXXX")
	if f, _ := q.Next(); string(f.Raw) != ": keep-alive\n\n" {
		t.Fatalf("queued Raw %q changed with the decoder's buffer", f.Raw)
	}

	r := Queue{ErrorRawOnly: true}
	r.Push(codec.Frame{Raw: []byte(": ping\n\n"), Keepalive: true})
	r.Push(codec.Frame{Raw: []byte("data: {}\n\n"), Content: "a"})
	r.Push(codec.Frame{Raw: []byte("data: {\"error\":{}}\n\n"), Err: &codec.ProviderError{}})
	for i, want := range []string{"", "", "data: {\"error\":{}}\n\n"} {
		f, ok := r.Next()
		if !ok || string(f.Raw) != want || (want == "") != (f.Raw == nil) {
			t.Fatalf("frame %d: Raw %q (ok %v), want %q", i, f.Raw, ok, want)
		}
	}
}
