package linebuf

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

// line is what a test sees of one line: its text and its terminator.
type line struct{ Text, End string }

// drain returns the lines buffered in b, releasing each one when release is
// set, and the error of the last Next.
func drain(b *Buffer, release bool) ([]line, error) {
	var out []line
	for {
		l, ok, err := b.Next()
		if err != nil || !ok {
			return out, err
		}
		held := b.Held()
		out = append(out, line{string(held[l.Start:l.End]), string(held[l.End:l.Next])})
		if release {
			b.Release(l.Next)
		}
	}
}

// feed writes each chunk to b and drains it after every Write.
func feed(b *Buffer, release bool, chunks ...string) ([]line, error) {
	var out []line
	for _, c := range chunks {
		b.Write([]byte(c))
		lines, err := drain(b, release)
		out = append(out, lines...)
		if err != nil {
			return out, err
		}
	}
	return out, nil
}

func TestNext(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		ends   Ends
		max    int
		chunks []string
		want   []line
		err    error
		rest   string
	}{
		{"LF lines", LF, 10, []string{"a\nbc\n\nd"}, []line{{"a", "\n"}, {"bc", "\n"}, {"", "\n"}}, nil, "d"},
		{"LF keeps \\r in the line", LF, 10, []string{"a\r\nb\rc\n"}, []line{{"a\r", "\n"}, {"b\rc", "\n"}}, nil, ""},
		{"LF line split between Writes", LF, 10, []string{"ab", "c", "\nd"}, []line{{"abc", "\n"}}, nil, "d"},
		{"CROrLF ends", CROrLF, 10, []string{"a\r\nb\nc\rd\n\r"}, []line{{"a", "\r\n"}, {"b", "\n"}, {"c", "\r"}, {"d", "\n"}, {"", "\r"}}, nil, ""},
		{"CROrLF \\r\\r is two lines", CROrLF, 10, []string{"a\r\rb"}, []line{{"a", "\r"}, {"", "\r"}}, nil, "b"},
		{"CROrLF \\r\\n split between Writes", CROrLF, 10, []string{"a\r", "\nb\n"}, []line{{"a", "\r"}, {"b", "\n"}}, nil, ""},
		{"CROrLF \\r then a non-\\n", CROrLF, 10, []string{"a\r", "b\n"}, []line{{"a", "\r"}, {"b", "\n"}}, nil, ""},
		{"CROrLF \\r then an empty Write", CROrLF, 10, []string{"a\r", "", "\n"}, []line{{"a", "\r"}}, nil, ""},
		{"a line at the limit", LF, 3, []string{"abc\n"}, []line{{"abc", "\n"}}, nil, ""},
		{"the terminator does not count", CROrLF, 3, []string{"abc\r\n"}, []line{{"abc", "\r\n"}}, nil, ""},
		{"a complete line over the limit", LF, 3, []string{"ab\nabcd\n"}, []line{{"ab", "\n"}}, ErrTooLong, ""},
		{"an incomplete line at the limit", LF, 3, []string{"abc"}, nil, nil, "abc"},
		{"an incomplete line over the limit", CROrLF, 3, []string{"ab", "cd"}, nil, ErrTooLong, "abcd"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			for _, release := range []bool{true, false} {
				b := New(tt.max, tt.ends)
				got, err := feed(&b, release, tt.chunks...)
				if !reflect.DeepEqual(got, tt.want) || !errors.Is(err, tt.err) {
					t.Errorf("release %v: lines %q, %v; want %q, %v", release, got, err, tt.want, tt.err)
				}
				if string(b.Rest()) != tt.rest && tt.err == nil {
					t.Errorf("release %v: Rest = %q, want %q", release, b.Rest(), tt.rest)
				}
			}
		})
	}
}

func TestCarried(t *testing.T) {
	t.Parallel()
	b := New(10, CROrLF)
	b.Write([]byte("a\r"))
	l, ok, _ := b.Next()
	b.Release(l.Next)
	if !ok || b.Carried() != 0 {
		t.Fatalf("Next = %v, %v; Carried = %d before the \\n", l, ok, b.Carried())
	}
	b.Write([]byte("\nb"))
	if _, ok, _ := b.Next(); ok || b.Carried() != 1 || string(b.Held()) != "\nb" || string(b.Rest()) != "b" {
		t.Fatalf("after \\nb: ok %v, Carried %d, Held %q, Rest %q", ok, b.Carried(), b.Held(), b.Rest())
	}
	b.Write([]byte("\n"))
	l, ok, _ = b.Next()
	if !ok || l != (Line{Start: 1, End: 2, Next: 3}) {
		t.Fatalf("Next = %+v, %v", l, ok)
	}
	b.Release(l.Next)
	if b.Carried() != 0 {
		t.Errorf("Carried = %d after Release", b.Carried())
	}

	// A "\r\n" split inside held bytes carries nothing: the "\n" follows
	// a line the owner still holds.
	b = New(10, CROrLF)
	b.Write([]byte("a\r"))
	b.Next()
	b.Write([]byte("\n"))
	b.Next()
	if b.Carried() != 0 || string(b.Rest()) != "" {
		t.Errorf("held: Carried = %d, Rest = %q", b.Carried(), b.Rest())
	}
}

func TestSkip(t *testing.T) {
	t.Parallel()
	b := New(2, LF)
	b.Write([]byte("\xEF\xBB\xBFab\n"))
	b.Skip(3)
	l, ok, err := b.Next()
	if !ok || err != nil || l != (Line{Start: 3, End: 5, Next: 6}) {
		t.Errorf("Next = %+v, %v, %v; the skipped bytes count neither as line nor against the limit", l, ok, err)
	}
}

// TestWriteCompacts checks that Write moves held bytes to the front rather
// than growing the buffer, and that line offsets survive the move.
func TestWriteCompacts(t *testing.T) {
	t.Parallel()
	b := New(1<<20, LF)
	line := strings.Repeat("x", 1000) + "\n"
	b.Write([]byte(line + line + line + line[:500]))
	for range 3 {
		l, _, _ := b.Next()
		b.Release(l.Next)
	}
	c := cap(b.buf)
	b.Write([]byte(strings.Repeat("y", c-len(b.buf)+1))) // does not fit behind the released bytes
	if cap(b.buf) != c {
		t.Errorf("cap grew from %d to %d", c, cap(b.buf))
	}
	if got := string(b.Held()); !strings.HasPrefix(got, line[:500]+"y") {
		t.Errorf("Held starts %q", got[:510])
	}
	b.Write([]byte("\n"))
	l, ok, err := b.Next()
	if !ok || err != nil || l.Start != 0 || l.Next != len(b.Held()) {
		t.Errorf("Next = %+v, %v, %v over %d held bytes", l, ok, err, len(b.Held()))
	}
}

func TestReset(t *testing.T) {
	t.Parallel()
	b := New(3<<20, CROrLF)
	b.Write([]byte("ab\r"))
	b.Next()
	b.Reset()
	if len(b.Held()) != 0 || b.Limit() != 3<<20 {
		t.Fatalf("after Reset: Held %q, Limit %d", b.Held(), b.Limit())
	}
	// The pending "\r" is forgotten: "\n" is a line of its own.
	if got, err := feed(&b, true, "\n"); err != nil || !reflect.DeepEqual(got, []line{{"", "\n"}}) {
		t.Errorf("after Reset: %q, %v", got, err)
	}
	if c := cap(b.buf); c != initialSize {
		t.Errorf("cap = %d, want the initial %d kept", c, initialSize)
	}
	b.Write(make([]byte, 2<<20))
	b.Reset()
	if c := cap(b.buf); c > RetainSize {
		t.Errorf("cap = %d after Reset, want at most %d", c, RetainSize)
	}
}

func TestSteadyStateAllocs(t *testing.T) {
	for _, ends := range []Ends{LF, CROrLF} {
		b := New(1<<10, ends)
		p := []byte(`{"message":{"content":"Hel"}}` + "\r\n")
		allocs := testing.AllocsPerRun(1000, func() {
			b.Write(p)
			l, ok, err := b.Next()
			if !ok || err != nil {
				panic("no line")
			}
			b.Release(l.Next)
		})
		if allocs != 0 {
			t.Errorf("ends %d: %v allocations per line, want 0", ends, allocs)
		}
	}
}
