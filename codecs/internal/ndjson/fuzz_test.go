package ndjson

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
)

// fuzzSeeds are real-shaped Ollama stream fragments.
var fuzzSeeds = []string{
	ollamaChunk + "\n",
	"\n",
	ollamaError + "\n",
	ollamaDone + "\n",
	ollamaChunk + "\r\n \r\n\t" + ollamaDone + "  \n",
}

// FuzzFramer checks that framing never panics, that the Raw of the lines plus
// the buffered tail reproduces the input exactly, that splitting the input
// into two Writes does not change the lines, and that the result agrees with
// a whole-input reference implementation of the rules.
func FuzzFramer(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add([]byte(s), uint(len(s)/2), uint16(0))
	}
	f.Fuzz(func(t *testing.T, in []byte, split uint, limit uint16) {
		at := int(split % uint(len(in)+1))
		whole := NewFramer(int(limit))
		lines1, err1 := feed(t, whole, in)
		halves := NewFramer(int(limit))
		lines2, err2 := feed(t, halves, in[:at], in[at:])

		if (err1 == nil) != (err2 == nil) {
			t.Fatalf("split at %d changes the error: %v vs %v", at, err1, err2)
		}
		assert.Equal(t, lines1, lines2, "split at %d", at)
		if err1 != nil {
			frameErr(t, err1)
			frameErr(t, err2)
			return
		}
		assert.Equal(t, string(in), joinRaw(lines1)+string(whole.tail()), "one Write")
		assert.Equal(t, string(in), joinRaw(lines2)+string(halves.tail()), "split at %d", at)

		// Reference: every "\n"-terminated piece is a line.
		var ref []ln
		pieces := bytes.SplitAfter(in, []byte("\n"))
		for _, p := range pieces[:len(pieces)-1] {
			v := bytes.Trim(p, " \t\r\n")
			ref = append(ref, ln{Raw: string(p), Value: string(v), Blank: len(v) == 0})
		}
		assert.Equal(t, ref, lines1, "reference")
		refTail := pieces[len(pieces)-1]
		assert.Equal(t, string(refTail), string(whole.tail()), "reference tail")
		pending := len(bytes.Trim(refTail, " \t\r\n")) > 0
		assert.Equal(t, pending, whole.Pending(), "Pending")
		assert.Equal(t, pending, halves.Pending(), "Pending after split at %d", at)

		// At the end of the stream Final takes the pending line, once.
		for _, fr := range []*Framer{whole, halves} {
			last, ok := fr.Final()
			assert.Equal(t, pending, ok, "Final")
			if ok {
				assert.Equal(t, string(refTail), string(last.Raw), "Final Raw")
				assert.Equal(t, string(bytes.Trim(refTail, " \t\r\n")), string(last.Value), "Final Value")
				assert.True(t, !last.Blank, "a pending line is not blank")
			}
			_, again := fr.Final()
			assert.True(t, !again, "Final reports the pending line once")
			assert.True(t, !fr.Pending(), "nothing is pending after Final")
		}
	})
}
