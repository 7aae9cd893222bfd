package sse

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// ev is a comparable copy of an Event.
type ev struct {
	Raw       string
	Data      string
	HasData   bool
	Event     string
	Comments  int
	Done      bool
	Keepalive bool
}

func snapshot(e Event) ev {
	return ev{
		Raw:       string(e.Raw),
		Data:      string(e.Data),
		HasData:   e.HasData,
		Event:     e.Event,
		Comments:  e.Comments,
		Done:      e.Done,
		Keepalive: e.Keepalive(),
	}
}

// drain calls Next until it reports ok=false or an error.
func drain(t testing.TB, f *Framer) ([]ev, error) {
	t.Helper()
	var out []ev
	for {
		e, ok, err := f.Next()
		if err != nil {
			require.True(t, !ok)
			return out, err
		}
		if !ok {
			return out, nil
		}
		require.True(t, len(e.Raw) > 0, "empty Raw")
		out = append(out, snapshot(e))
	}
}

// feed writes each chunk to f, draining f after every Write.
func feed(t testing.TB, f *Framer, chunks ...[]byte) ([]ev, error) {
	t.Helper()
	var out []ev
	for _, c := range chunks {
		f.Write(c)
		evs, err := drain(t, f)
		out = append(out, evs...)
		if err != nil {
			return out, err
		}
	}
	return out, nil
}

// tail returns the bytes not yet returned in an event's Raw.
func (f *Framer) tail() []byte { return f.lines.Held() }

// joinRaw concatenates the Raw of evs.
func joinRaw(evs []ev) string {
	var b strings.Builder
	for _, e := range evs {
		b.WriteString(e.Raw)
	}
	return b.String()
}

func TestFramer(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want []ev
		tail string
	}{
		{
			name: "single data line",
			in:   "data: hello\n\n",
			want: []ev{{Raw: "data: hello\n\n", Data: "hello", HasData: true}},
		},
		{
			name: "data without space",
			in:   "data:hello\n\n",
			want: []ev{{Raw: "data:hello\n\n", Data: "hello", HasData: true}},
		},
		{
			name: "only one space removed",
			in:   "data:  two\n\n",
			want: []ev{{Raw: "data:  two\n\n", Data: " two", HasData: true}},
		},
		{
			name: "multiple data lines joined",
			in:   "data: a\ndata:b\ndata\ndata: c\n\n",
			want: []ev{{Raw: "data: a\ndata:b\ndata\ndata: c\n\n", Data: "a\nb\n\nc", HasData: true}},
		},
		{
			name: "empty data",
			in:   "data\n\ndata:\n\n",
			want: []ev{
				{Raw: "data\n\n", HasData: true},
				{Raw: "data:\n\n", HasData: true},
			},
		},
		{
			name: "crlf",
			in:   "data: a\r\ndata: b\r\n\r\ndata: c\r\n\r\n",
			want: []ev{
				{Raw: "data: a\r\ndata: b\r\n\r\n", Data: "a\nb", HasData: true},
				{Raw: "data: c\r\n\r\n", Data: "c", HasData: true},
			},
		},
		{
			name: "cr",
			in:   "data: a\rdata: b\r\rdata: c\r\r",
			want: []ev{
				{Raw: "data: a\rdata: b\r\r", Data: "a\nb", HasData: true},
				{Raw: "data: c\r\r", Data: "c", HasData: true},
			},
		},
		{
			name: "mixed terminators",
			in:   "data: a\rdata: b\r\ndata: c\n\r\n: x\r\r\n",
			want: []ev{
				{Raw: "data: a\rdata: b\r\ndata: c\n\r\n", Data: "a\nb\nc", HasData: true},
				{Raw: ": x\r\r\n", Comments: 1, Keepalive: true},
			},
		},
		{
			name: "cr then lf is one terminator",
			in:   "data: a\r\n\n",
			want: []ev{{Raw: "data: a\r\n\n", Data: "a", HasData: true}},
		},
		{
			name: "lf then cr is two terminators",
			in:   "data: a\n\rdata: b\n\n",
			want: []ev{
				{Raw: "data: a\n\r", Data: "a", HasData: true},
				{Raw: "data: b\n\n", Data: "b", HasData: true},
			},
		},
		{
			name: "comment keepalive",
			in:   ": keep-alive\n\n",
			want: []ev{{Raw: ": keep-alive\n\n", Comments: 1, Keepalive: true}},
		},
		{
			name: "comments within data event",
			in:   ":a\ndata: x\n:b\n\n",
			want: []ev{{Raw: ":a\ndata: x\n:b\n\n", Data: "x", HasData: true, Comments: 2}},
		},
		{
			name: "empty comment",
			in:   ":\n\n",
			want: []ev{{Raw: ":\n\n", Comments: 1, Keepalive: true}},
		},
		{
			name: "whitespace-prefixed lines",
			in:   "  data: {\"a\":1}\n\t: ping\n \tevent: x\n\n",
			want: []ev{{Raw: "  data: {\"a\":1}\n\t: ping\n \tevent: x\n\n", Data: `{"a":1}`, HasData: true, Event: "x", Comments: 1}},
		},
		{
			name: "whitespace-only line dispatches",
			in:   "data: a\n  \t\ndata: b\n \n",
			want: []ev{
				{Raw: "data: a\n  \t\n", Data: "a", HasData: true},
				{Raw: "data: b\n \n", Data: "b", HasData: true},
			},
		},
		{
			name: "space before colon is part of the name",
			in:   "data :x\n\n",
			want: []ev{{Raw: "data :x\n\n", Keepalive: true}},
		},
		{
			name: "done with space",
			in:   "data: [DONE]\n\n",
			want: []ev{{Raw: "data: [DONE]\n\n", Data: "[DONE]", HasData: true, Done: true}},
		},
		{
			name: "done without space",
			in:   "data:[DONE]\n\n",
			want: []ev{{Raw: "data:[DONE]\n\n", Data: "[DONE]", HasData: true, Done: true}},
		},
		{
			name: "done with surrounding whitespace",
			in:   "data:  [DONE] \t\n\n",
			want: []ev{{Raw: "data:  [DONE] \t\n\n", Data: " [DONE] \t", HasData: true, Done: true}},
		},
		{
			name: "not done",
			in:   "data: [DONE]x\n\ndata: [done]\n\nevent: [DONE]\n\n",
			want: []ev{
				{Raw: "data: [DONE]x\n\n", Data: "[DONE]x", HasData: true},
				{Raw: "data: [done]\n\n", Data: "[done]", HasData: true},
				{Raw: "event: [DONE]\n\n", Event: "[DONE]"},
			},
		},
		{
			name: "event error with data",
			in:   "event: error\ndata: {\"error\":{\"message\":\"x\"}}\n\n",
			want: []ev{{Raw: "event: error\ndata: {\"error\":{\"message\":\"x\"}}\n\n", Data: `{"error":{"message":"x"}}`, HasData: true, Event: "error"}},
		},
		{
			name: "last event field wins",
			in:   "event: a\nevent:b\n\n",
			want: []ev{{Raw: "event: a\nevent:b\n\n", Event: "b"}},
		},
		{
			name: "event without colon is empty",
			in:   "event\n\n",
			want: []ev{{Raw: "event\n\n", Keepalive: true}},
		},
		{
			name: "id retry and unknown fields are ignored",
			in:   "id: 7\nretry: 1000\nfoo: bar\ndata: x\n\nid: 8\n\n",
			want: []ev{
				{Raw: "id: 7\nretry: 1000\nfoo: bar\ndata: x\n\n", Data: "x", HasData: true},
				{Raw: "id: 8\n\n", Keepalive: true},
			},
		},
		{
			name: "stray blank lines join the next event",
			in:   "\n\r\n  \n\rdata: x\n\n\n\n",
			want: []ev{{Raw: "\n\r\n  \n\rdata: x\n\n", Data: "x", HasData: true}},
			tail: "\n\n",
		},
		{
			name: "byte order mark",
			in:   bom + "data: x\n\n" + bom + "data: y\n\n",
			want: []ev{
				{Raw: bom + "data: x\n\n", Data: "x", HasData: true},
				{Raw: bom + "data: y\n\n", Keepalive: true},
			},
		},
		{
			name: "incomplete event is pending",
			in:   "data: x\n\ndata: y\n",
			want: []ev{{Raw: "data: x\n\n", Data: "x", HasData: true}},
			tail: "data: y\n",
		},
		{
			name: "openai stream",
			in: "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hel\"},\"finish_reason\":null}]}\n\n" +
				": keep-alive\n\n" +
				"data: [DONE]\n\n",
			want: []ev{
				{
					Raw:     "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hel\"},\"finish_reason\":null}]}\n\n",
					Data:    `{"id":"c1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"Hel"},"finish_reason":null}]}`,
					HasData: true,
				},
				{Raw: ": keep-alive\n\n", Comments: 1, Keepalive: true},
				{Raw: "data: [DONE]\n\n", Data: "[DONE]", HasData: true, Done: true},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := NewFramer(0)
			got, err := feed(t, f, []byte(tt.in))
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
			assert.Equal(t, tt.tail, string(f.tail()))
			assert.Equal(t, tt.in, joinRaw(got)+string(f.tail()))

			// Every split point yields the same events and tail.
			for i := 0; i <= len(tt.in); i++ {
				f.Reset()
				split, err := feed(t, f, []byte(tt.in[:i]), []byte(tt.in[i:]))
				require.NoError(t, err)
				sameEvents(t, tt.want, split, []byte(tt.in), i, "split at %d", i)
				assert.Equal(t, tt.in, joinRaw(split)+string(f.tail()), "split at %d", i)
			}

			// One byte per Write.
			f.Reset()
			var chunks [][]byte
			for i := range len(tt.in) {
				chunks = append(chunks, []byte{tt.in[i]})
			}
			bytewise, err := feed(t, f, chunks...)
			require.NoError(t, err)
			sameSemantics(t, tt.want, bytewise)
			assert.Equal(t, tt.in, joinRaw(bytewise)+string(f.tail()))
		})
	}
}

// sameEvents checks that got, the events of in written in two parts split at
// at, equals want, the events of in written at once. The only permitted
// difference is documented: when the first Write ends between the "\r" and
// "\n" of an event's terminating blank line, that event's Raw ends at the
// "\r" and the "\n" moves to the front of the next event's Raw.
func sameEvents(t testing.TB, want, got []ev, in []byte, at int, msgAndArgs ...any) {
	t.Helper()
	if at > 0 && at < len(in) && in[at-1] == '\r' && in[at] == '\n' {
		want = append([]ev(nil), want...)
		end := 0
		for k := range want {
			end += len(want[k].Raw)
			if end == at+1 {
				want[k].Raw = want[k].Raw[:len(want[k].Raw)-1]
				if k+1 < len(want) {
					want[k+1].Raw = "\n" + want[k+1].Raw
				}
				break
			}
		}
	}
	assert.Equal(t, want, got, msgAndArgs...)
}

// sameSemantics checks that got equals want, ignoring Raw.
func sameSemantics(t testing.TB, want, got []ev, msgAndArgs ...any) {
	t.Helper()
	strip := func(evs []ev) []ev {
		out := make([]ev, len(evs))
		for i, e := range evs {
			e.Raw = ""
			out[i] = e
		}
		return out
	}
	assert.Equal(t, strip(want), strip(got), msgAndArgs...)
}

func TestCRAtWriteBoundary(t *testing.T) {
	t.Run("non-blank line", func(t *testing.T) {
		f := NewFramer(0)
		got, err := feed(t, f, []byte("data: a\r"), []byte("\ndata: b\r"), []byte("\n\r\n"))
		require.NoError(t, err)
		assert.Equal(t, []ev{{Raw: "data: a\r\ndata: b\r\n\r\n", Data: "a\nb", HasData: true}}, got)
		assert.Equal(t, 0, len(f.tail()))
	})
	t.Run("terminating blank line dispatches without waiting", func(t *testing.T) {
		f := NewFramer(0)
		f.Write([]byte("data: a\r\n\r"))
		e, ok, err := f.Next()
		require.NoError(t, err)
		require.True(t, ok)
		assert.Equal(t, ev{Raw: "data: a\r\n\r", Data: "a", HasData: true}, snapshot(e))
		assert.True(t, !f.Pending())

		// The "\n" completes the terminator; it is no extra blank line and
		// is accounted at the front of the next event.
		got, err := feed(t, f, []byte("\n"))
		require.NoError(t, err)
		assert.Equal(t, 0, len(got))
		assert.True(t, !f.Pending())
		got, err = feed(t, f, []byte("data: b\r\n\r\n"))
		require.NoError(t, err)
		assert.Equal(t, []ev{{Raw: "\ndata: b\r\n\r\n", Data: "b", HasData: true}}, got)
	})
	t.Run("cr then non-lf", func(t *testing.T) {
		f := NewFramer(0)
		got, err := feed(t, f, []byte("data: a\r"), []byte("\r"), []byte("data: b\r"), []byte("\r"))
		require.NoError(t, err)
		assert.Equal(t, []ev{
			{Raw: "data: a\r\r", Data: "a", HasData: true},
			{Raw: "data: b\r\r", Data: "b", HasData: true},
		}, got)
	})
	t.Run("carried lf does not count against the limit", func(t *testing.T) {
		f := NewFramer(len("data: b\r\n"))
		got, err := feed(t, f, []byte("data: a\r\n\r"), []byte("\ndata: b\r\n\r\n"))
		require.NoError(t, err)
		assert.Equal(t, 2, len(got))
	})
}

func TestPending(t *testing.T) {
	for _, tt := range []struct {
		in      string
		pending bool
	}{
		{"", false},
		{"\n\r\n", false},
		{"  \t", false},
		{"d", true},
		{"data: x", true},
		{"data: x\n", true},
		{": c\n", true},
		{"id: 1\n", true},
		{"data: x\n\n", false},
		{"data: x\n\n  ", false},
		{"data: x\n\n\n\n", false},
	} {
		f := NewFramer(0)
		_, err := feed(t, f, []byte(tt.in))
		require.NoError(t, err)
		assert.Equal(t, tt.pending, f.Pending(), "%q", tt.in)
	}
}

func TestEventStringReused(t *testing.T) {
	f := NewFramer(0)
	f.Write([]byte("event: delta\ndata: 1\n\nevent: delta\ndata: 2\n\n"))
	e1, ok, err := f.Next()
	require.True(t, ok)
	require.NoError(t, err)
	e2, ok, err := f.Next()
	require.True(t, ok)
	require.NoError(t, err)
	assert.Equal(t, "delta", e1.Event)
	assert.Equal(t, "delta", e2.Event)
	assert.Equal(t, "2", string(e2.Data))
	assert.Equal(t, 0, int(testing.AllocsPerRun(100, func() {
		f.Write([]byte("event: delta\ndata: 3\n\n"))
		if _, ok, _ := f.Next(); !ok {
			panic("no event")
		}
	})))
}

func TestDataSurvivesCompaction(t *testing.T) {
	// A multi-line event whose lines straddle Writes and compactions.
	f := NewFramer(0)
	in := "data: 0123456789\n\n" + strings.Repeat("data: abcdefghij\n", 2000) + "\n"
	want := strings.TrimSuffix(strings.Repeat("abcdefghij\n", 2000), "\n")
	var got []ev
	for i := 0; i < len(in); i += 7 {
		evs, err := feed(t, f, []byte(in[i:min(i+7, len(in))]))
		require.NoError(t, err)
		got = append(got, evs...)
	}
	require.True(t, len(got) == 2)
	assert.Equal(t, "0123456789", got[0].Data)
	assert.Equal(t, want, got[1].Data)
	assert.Equal(t, in, joinRaw(got))
}

func TestLimits(t *testing.T) {
	t.Run("event at limit", func(t *testing.T) {
		in := "data: 1234\ndata: 5678\n" // 22 bytes, excluding the blank line
		f := NewFramer(len(in))
		got, err := feed(t, f, []byte(in+"\n"))
		require.NoError(t, err)
		assert.Equal(t, 1, len(got))
	})
	t.Run("event over limit", func(t *testing.T) {
		in := "data: 1234\ndata: 5678\n"
		for i := 0; i <= len(in)+1; i++ {
			f := NewFramer(len(in) - 1)
			full := in + "\n"
			_, err := feed(t, f, []byte(full[:i]), []byte(full[i:]))
			fe := frameErr(t, err, "split at %d", i)
			assert.Equal(t, "event exceeds limit", fe.Reason)
			assert.Equal(t, "sse: event exceeds limit", err.Error())
		}
	})
	t.Run("incomplete event over limit", func(t *testing.T) {
		f := NewFramer(10)
		_, err := feed(t, f, []byte("data: 1\ndata: 2\n"))
		fe := frameErr(t, err)
		assert.Equal(t, "event exceeds limit", fe.Reason)
	})
	t.Run("stray blank lines count", func(t *testing.T) {
		f := NewFramer(10)
		_, err := feed(t, f, []byte(strings.Repeat("\n", 11)))
		fe := frameErr(t, err)
		assert.Equal(t, "event exceeds limit", fe.Reason)
	})
	t.Run("line over limit", func(t *testing.T) {
		f := NewFramer(10)
		_, err := feed(t, f, []byte("data: 12345"))
		fe := frameErr(t, err)
		assert.Equal(t, "line exceeds limit", fe.Reason)
	})
	t.Run("whitespace line over limit", func(t *testing.T) {
		f := NewFramer(10)
		_, err := feed(t, f, []byte("data: 1\n"+strings.Repeat(" ", 11)))
		fe := frameErr(t, err)
		assert.Equal(t, "line exceeds limit", fe.Reason)
	})
	t.Run("whitespace terminator is not counted", func(t *testing.T) {
		f := NewFramer(len("data: 1\n"))
		got, err := feed(t, f, []byte("data: 1\n    "), []byte("\n"))
		require.NoError(t, err)
		assert.Equal(t, 1, len(got))
	})
	t.Run("sticky until reset", func(t *testing.T) {
		f := NewFramer(10)
		_, err := feed(t, f, []byte("data: 0123456789\n\n"))
		require.True(t, err != nil)
		f.Write([]byte("data: x\n\n"))
		for range 3 {
			_, ok, err2 := f.Next()
			assert.True(t, !ok)
			assert.True(t, err == err2)
		}
		frameErr(t, err)
		assert.True(t, !strings.Contains(err.Error(), "0123"))

		f.Reset()
		got, err := feed(t, f, []byte("data: x\n\n"))
		require.NoError(t, err)
		assert.Equal(t, []ev{{Raw: "data: x\n\n", Data: "x", HasData: true}}, got)
	})
	t.Run("default", func(t *testing.T) {
		assert.Equal(t, DefaultMaxEventBytes, NewFramer(0).max)
		assert.Equal(t, DefaultMaxEventBytes, NewFramer(-1).max)
	})
}

func TestReset(t *testing.T) {
	f := NewFramer(0)
	_, err := feed(t, f, []byte("\xEF\xBB\xBFdata: x\n\ndata: partial\r"))
	require.NoError(t, err)
	require.True(t, f.Pending())

	f.Reset()
	assert.True(t, !f.Pending())
	assert.Equal(t, 0, len(f.tail()))
	// The pending "\r" is forgotten, and a byte order mark is skipped again.
	got, err := feed(t, f, []byte("\n\xEF\xBB\xBFdata: y\n\n"))
	require.NoError(t, err)
	assert.Equal(t, []ev{{Raw: "\n\xEF\xBB\xBFdata: y\n\n", Keepalive: true}}, got)

	f.Reset()
	got, err = feed(t, f, []byte("\xEF\xBB\xBFdata: y\n\n"))
	require.NoError(t, err)
	assert.Equal(t, []ev{{Raw: "\xEF\xBB\xBFdata: y\n\n", Data: "y", HasData: true}}, got)

	// Reset releases a buffer grown for a large event.
	f.Reset()
	_, err = feed(t, f, []byte("data: "+strings.Repeat("x", 2<<20)+"\n\n"))
	require.NoError(t, err)
	f.Reset()
	assert.True(t, cap(f.tail()) <= retainBufferSize)
}

func TestWriteDoesNotRetain(t *testing.T) {
	f := NewFramer(0)
	p := []byte("data: abc\n")
	f.Write(p)
	copy(p, "XXXXXXXXXX")
	f.Write([]byte("\n"))
	e, ok, err := f.Next()
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, "abc", string(e.Data))
}

func TestRawIsCapped(t *testing.T) {
	f := NewFramer(0)
	f.Write([]byte("data: a\n\ndata: b\n\n"))
	e, ok, err := f.Next()
	require.NoError(t, err)
	require.True(t, ok)
	_ = append(e.Raw, 'X')
	_ = append(e.Data, 'X')
	e, ok, err = f.Next()
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, "data: b\n\n", string(e.Raw))
}

// reference frames in as a whole, with a direct transcription of the rules in
// the package documentation, ignoring limits. It returns the events and the
// unframed tail.
func reference(in []byte) ([]ev, []byte) {
	var out []ev
	start, pos := 0, 0
	if bytes.HasPrefix(in, []byte(bom)) {
		pos = len(bom)
	}
	var (
		cur     ev
		data    []string
		content bool
	)
	for pos < len(in) {
		i := bytes.IndexAny(in[pos:], "\r\n")
		if i < 0 {
			break
		}
		line := in[pos : pos+i]
		pos += i + 1
		if in[pos-1] == '\r' && pos < len(in) && in[pos] == '\n' {
			pos++
		}
		line = bytes.TrimLeft(line, " \t")
		switch {
		case len(line) == 0:
			if !content {
				continue
			}
			cur.Raw = string(in[start:pos])
			cur.HasData = data != nil
			cur.Data = strings.Join(data, "\n")
			cur.Done = cur.HasData && strings.Trim(cur.Data, " \t\r\n") == "[DONE]"
			cur.Keepalive = !cur.HasData && cur.Event == ""
			out = append(out, cur)
			start, cur, data, content = pos, ev{}, nil, false
		case line[0] == ':':
			content = true
			cur.Comments++
		default:
			content = true
			name, value, found := bytes.Cut(line, []byte(":"))
			if found {
				value = bytes.TrimPrefix(value, []byte(" "))
			}
			switch string(name) {
			case "data":
				data = append(data, string(value))
			case "event":
				cur.Event = string(value)
			}
		}
	}
	return out, in[start:]
}
