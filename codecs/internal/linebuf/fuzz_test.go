package linebuf

import (
	"bytes"
	"errors"
	"reflect"
	"testing"
)

// outcome is what a Buffer made of one stream.
type outcome struct {
	Lines []string // the text of each line, without its terminator
	Err   error
	Rest  string // when Err is nil
}

// run writes chunks to a new Buffer, draining it after every Write, and
// checks that the bytes of the lines, the carried "\n"s and the bytes still
// held are the stream, byte for byte. When release is not set it releases
// only every other line, so that lines stay held across Writes.
func run(t *testing.T, max int, ends Ends, release bool, chunks ...[]byte) outcome {
	t.Helper()
	b := New(max, ends)
	var out outcome
	var raw, in []byte
	n := 0
	for _, c := range chunks {
		in = append(in, c...)
		b.Write(c)
		for {
			l, ok, err := b.Next()
			if err != nil {
				if !errors.Is(err, ErrTooLong) {
					t.Fatalf("Next error %v, want ErrTooLong", err)
				}
				out.Err = err
				return out
			}
			if !ok {
				break
			}
			held := b.Held()
			if l.Start < 0 || l.Start > l.End || l.End >= l.Next || l.Next > len(held) {
				t.Fatalf("Line %+v over %d held bytes", l, len(held))
			}
			if l.End-l.Start > max {
				t.Fatalf("a line of %d bytes passes the limit %d", l.End-l.Start, max)
			}
			out.Lines = append(out.Lines, string(held[l.Start:l.End]))
			if n++; release || n%2 == 0 {
				raw = append(raw, held[:l.Next]...)
				b.Release(l.Next)
			}
		}
	}
	raw = append(raw, b.Held()...)
	if !bytes.Equal(raw, in) {
		t.Fatalf("lines and held bytes are %q, want the stream %q", raw, in)
	}
	out.Rest = string(b.Rest())
	return out
}

// reference splits a whole stream by the rules, without a Buffer.
func reference(in []byte, max int, ends Ends) outcome {
	var out outcome
	for {
		i := bytes.IndexByte(in, '\n')
		if ends == CROrLF {
			if j := bytes.IndexByte(in, '\r'); j >= 0 && (i < 0 || j < i) {
				i = j
			}
		}
		if i < 0 {
			break
		}
		if i > max {
			out.Err = ErrTooLong
			return out
		}
		out.Lines = append(out.Lines, string(in[:i]))
		if bytes.HasPrefix(in[i:], []byte("\r\n")) {
			i++
		}
		in = in[i+1:]
	}
	if len(in) > max {
		out.Err = ErrTooLong
		return out
	}
	out.Rest = string(in)
	return out
}

// FuzzLineBuffer checks that the lines of a stream do not depend on how it
// is split into Writes: the stream whole, split at every byte, and byte by
// byte, with lines released at once or held, give the lines the reference
// gives, the same error, and the same incomplete rest. The seed corpus is in
// testdata/fuzz/FuzzLineBuffer.
func FuzzLineBuffer(f *testing.F) {
	f.Fuzz(func(t *testing.T, in []byte, limit uint16, cr bool) {
		if len(in) > 1<<12 {
			return // splitting at every byte is quadratic
		}
		max, ends := int(limit), LF
		if cr {
			ends = CROrLF
		}
		want := reference(in, max, ends)
		check := func(how string, got outcome) {
			t.Helper()
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("%s: got %+v\nwant %+v", how, got, want)
			}
		}
		for _, release := range []bool{true, false} {
			check("whole", run(t, max, ends, release, in))
			bytewise := make([][]byte, len(in))
			for i := range in {
				bytewise[i] = in[i : i+1]
			}
			check("byte by byte", run(t, max, ends, release, bytewise...))
		}
		for i := range len(in) + 1 {
			check("split", run(t, max, ends, true, in[:i], in[i:]))
		}
	})
}
