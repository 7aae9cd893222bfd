package ndjson

import (
	"strings"
	"testing"

	"github.com/recourse-dev/recourse/codecs/internal/linebuf"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// ln is a comparable copy of a Line.
type ln struct {
	Raw   string
	Value string
	Blank bool
}

func snapshot(l Line) ln {
	return ln{Raw: string(l.Raw), Value: string(l.Value), Blank: l.Blank}
}

// drain calls Next until it reports ok=false or an error.
func drain(t testing.TB, f *Framer) ([]ln, error) {
	t.Helper()
	var out []ln
	for {
		l, ok, err := f.Next()
		if err != nil {
			require.True(t, !ok)
			return out, err
		}
		if !ok {
			return out, nil
		}
		require.True(t, len(l.Raw) > 0 && l.Raw[len(l.Raw)-1] == '\n', "Raw must end with a newline")
		out = append(out, snapshot(l))
	}
}

// feed writes each chunk to f, draining f after every Write.
func feed(t testing.TB, f *Framer, chunks ...[]byte) ([]ln, error) {
	t.Helper()
	var out []ln
	for _, c := range chunks {
		f.Write(c)
		lines, err := drain(t, f)
		out = append(out, lines...)
		if err != nil {
			return out, err
		}
	}
	return out, nil
}

// tail returns the bytes not yet returned in a line's Raw.
func (f *Framer) tail() []byte { return f.lines.Held() }

// joinRaw concatenates the Raw of lines.
func joinRaw(lines []ln) string {
	var b strings.Builder
	for _, l := range lines {
		b.WriteString(l.Raw)
	}
	return b.String()
}

const (
	ollamaChunk = `{"model":"m","created_at":"2026-10-10T00:00:00Z","message":{"role":"assistant","content":"Hi"},"done":false}`
	ollamaDone  = `{"model":"m","created_at":"2026-10-10T00:00:01Z","message":{"role":"assistant","content":""},"done":true,"done_reason":"stop","total_duration":5191566416,"load_duration":2154458,"prompt_eval_count":26,"prompt_eval_duration":383809000,"eval_count":298,"eval_duration":4799921000}`
	ollamaError = `{"error":"an error was encountered while running the model"}`
)

func TestFramer(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want []ln
		tail string
	}{
		{
			name: "single line",
			in:   ollamaChunk + "\n",
			want: []ln{{Raw: ollamaChunk + "\n", Value: ollamaChunk}},
		},
		{
			name: "ollama stream",
			in:   ollamaChunk + "\n\n" + ollamaError + "\n" + ollamaDone + "\n",
			want: []ln{
				{Raw: ollamaChunk + "\n", Value: ollamaChunk},
				{Raw: "\n", Blank: true},
				{Raw: ollamaError + "\n", Value: ollamaError},
				{Raw: ollamaDone + "\n", Value: ollamaDone},
			},
		},
		{
			name: "crlf",
			in:   "{\"a\":1}\r\n\r\n{\"b\":2}\r\n",
			want: []ln{
				{Raw: "{\"a\":1}\r\n", Value: `{"a":1}`},
				{Raw: "\r\n", Blank: true},
				{Raw: "{\"b\":2}\r\n", Value: `{"b":2}`},
			},
		},
		{
			name: "cr is not a terminator",
			in:   "{\"a\":1}\r{\"b\":2}\n\r\r\n",
			want: []ln{
				{Raw: "{\"a\":1}\r{\"b\":2}\n", Value: "{\"a\":1}\r{\"b\":2}"},
				{Raw: "\r\r\n", Blank: true},
			},
		},
		{
			name: "surrounding whitespace trimmed",
			in:   "  \t{\"a\": 1} \t\r\n \t\r\n \v\f\n",
			want: []ln{
				{Raw: "  \t{\"a\": 1} \t\r\n", Value: `{"a": 1}`},
				{Raw: " \t\r\n", Blank: true},
				// No JSON decoder skips "\v" or "\f": such a line is not blank.
				{Raw: " \v\f\n", Value: "\v\f"},
			},
		},
		{
			name: "non-ascii space is kept",
			in:   "\u00a0x\u00a0\n",
			want: []ln{{Raw: "\u00a0x\u00a0\n", Value: "\u00a0x\u00a0"}},
		},
		{
			name: "incomplete final line",
			in:   ollamaChunk + "\n" + `{"model":"m"`,
			want: []ln{{Raw: ollamaChunk + "\n", Value: ollamaChunk}},
			tail: `{"model":"m"`,
		},
		{
			name: "empty input",
			in:   "",
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

			// Every split point yields the same lines and tail.
			for i := 0; i <= len(tt.in); i++ {
				f.Reset()
				split, err := feed(t, f, []byte(tt.in[:i]), []byte(tt.in[i:]))
				require.NoError(t, err)
				assert.Equal(t, tt.want, split, "split at %d", i)
				assert.Equal(t, tt.tail, string(f.tail()), "split at %d", i)
			}

			// One byte per Write.
			f.Reset()
			var chunks [][]byte
			for i := range len(tt.in) {
				chunks = append(chunks, []byte{tt.in[i]})
			}
			bytewise, err := feed(t, f, chunks...)
			require.NoError(t, err)
			assert.Equal(t, tt.want, bytewise)
			assert.Equal(t, tt.tail, string(f.tail()))
		})
	}
}

func TestPending(t *testing.T) {
	for _, tt := range []struct {
		in      string
		pending bool
	}{
		{"", false},
		{"\n", false},
		{" \r\t", false},
		{"{", true},
		{"{}\n", false},
		{"{}\n  {", true},
		{"{}\n\r", false},
	} {
		f := NewFramer(0)
		_, err := feed(t, f, []byte(tt.in))
		require.NoError(t, err)
		assert.Equal(t, tt.pending, f.Pending(), "%q", tt.in)
	}
}

func TestLongLineAcrossWrites(t *testing.T) {
	f := NewFramer(0)
	long := `{"content":"` + strings.Repeat("x", 100_000) + `"}`
	in := "{}\n" + long + "\n{}\n"
	var got []ln
	for i := 0; i < len(in); i += 1000 {
		lines, err := feed(t, f, []byte(in[i:min(i+1000, len(in))]))
		require.NoError(t, err)
		got = append(got, lines...)
	}
	require.True(t, len(got) == 3)
	assert.Equal(t, long, got[1].Value)
	assert.Equal(t, in, joinRaw(got))
}

func TestLimits(t *testing.T) {
	t.Run("line at limit", func(t *testing.T) {
		f := NewFramer(len(`{"a":1}` + "\r"))
		got, err := feed(t, f, []byte("{\"a\":1}\r\n"))
		require.NoError(t, err)
		assert.Equal(t, 1, len(got))
	})
	t.Run("line over limit", func(t *testing.T) {
		in := "{}\n{\"a\":12}\n"
		for i := 0; i <= len(in); i++ {
			f := NewFramer(len(`{"a":1}`))
			got, err := feed(t, f, []byte(in[:i]), []byte(in[i:]))
			fe := frameErr(t, err, "split at %d", i)
			assert.Equal(t, "line exceeds limit", fe.Reason)
			assert.Equal(t, "ndjson: line exceeds limit", err.Error())
			assert.Equal(t, []ln{{Raw: "{}\n", Value: "{}"}}, got, "split at %d", i)
		}
	})
	t.Run("incomplete line over limit", func(t *testing.T) {
		f := NewFramer(4)
		_, err := feed(t, f, []byte("{\"a\""))
		require.NoError(t, err)
		_, err = feed(t, f, []byte(":"))
		frameErr(t, err)
	})
	t.Run("sticky until reset", func(t *testing.T) {
		f := NewFramer(4)
		_, err := feed(t, f, []byte("{\"secret\":1}\n"))
		require.True(t, err != nil)
		assert.True(t, !strings.Contains(err.Error(), "secret"))
		f.Write([]byte("{}\n"))
		for range 3 {
			_, ok, err2 := f.Next()
			assert.True(t, !ok)
			assert.True(t, err == err2)
		}
		f.Reset()
		got, err := feed(t, f, []byte("{}\n"))
		require.NoError(t, err)
		assert.Equal(t, []ln{{Raw: "{}\n", Value: "{}"}}, got)
	})
	t.Run("default", func(t *testing.T) {
		assert.Equal(t, DefaultMaxLineBytes, NewFramer(0).lines.Limit())
		assert.Equal(t, DefaultMaxLineBytes, NewFramer(-1).lines.Limit())
	})
}

func TestReset(t *testing.T) {
	f := NewFramer(0)
	_, err := feed(t, f, []byte("{}\n{\"partial\""))
	require.NoError(t, err)
	require.True(t, f.Pending())
	f.Reset()
	assert.True(t, !f.Pending())
	assert.Equal(t, 0, len(f.tail()))
	got, err := feed(t, f, []byte("{}\n"))
	require.NoError(t, err)
	assert.Equal(t, []ln{{Raw: "{}\n", Value: "{}"}}, got)

	// Reset releases a buffer grown for a long line.
	_, err = feed(t, f, []byte(strings.Repeat("x", 2<<20)+"\n"))
	require.NoError(t, err)
	f.Reset()
	assert.True(t, cap(f.tail()) <= linebuf.RetainSize)
}

func TestWriteDoesNotRetain(t *testing.T) {
	f := NewFramer(0)
	p := []byte(`{"a":1}`)
	f.Write(p)
	copy(p, "XXXXXXX")
	f.Write([]byte("\n"))
	l, ok, err := f.Next()
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, `{"a":1}`, string(l.Value))
}

func TestRawIsCapped(t *testing.T) {
	f := NewFramer(0)
	f.Write([]byte("{}\n[]\n"))
	l, ok, err := f.Next()
	require.NoError(t, err)
	require.True(t, ok)
	_ = append(l.Raw, 'X')
	_ = append(l.Value, 'X')
	l, ok, err = f.Next()
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, "[]\n", string(l.Raw))
}

// TestR13_3_FinalReturnsTheUnterminatedLastLine: at the end of a stream
// Final returns the buffered line left without its "\n" — its exact bytes,
// its trimmed value — once, so that a decoder can frame a final line the
// provider did not terminate; whitespace alone is nothing, and after a
// sticky error there is no final line.
func TestR13_3_FinalReturnsTheUnterminatedLastLine(t *testing.T) {
	f := NewFramer(0)
	f.Write([]byte(ollamaChunk + "\n" + ollamaDone + " \r"))
	line, ok, err := f.Next()
	require.NoError(t, err)
	require.True(t, ok, "the terminated line")
	assert.Equal(t, ollamaChunk+"\n", string(line.Raw))
	_, ok, err = f.Next()
	require.NoError(t, err)
	assert.True(t, !ok, "no second terminated line")
	last, ok := f.Final()
	require.True(t, ok, "the unterminated line")
	assert.Equal(t, ollamaDone+" \r", string(last.Raw))
	assert.Equal(t, ollamaDone, string(last.Value))
	assert.True(t, !last.Blank)
	_, ok = f.Final()
	assert.True(t, !ok, "Final returns the line once")

	f = NewFramer(0)
	f.Write([]byte(ollamaChunk + "\n \t\r"))
	_, _, _ = f.Next()
	_, ok = f.Final()
	assert.True(t, !ok, "trailing whitespace is no line")

	f = NewFramer(4)
	f.Write([]byte("0123456789"))
	_, _, err = f.Next()
	frameErr(t, err)
	_, ok = f.Final()
	assert.True(t, !ok, "no final line after a sticky error")
}
