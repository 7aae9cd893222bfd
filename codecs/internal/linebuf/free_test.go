package linebuf

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestR13_8_FreedBufferIsEmptyAndStaysUsable frees a Buffer that holds an
// incomplete line: it is empty afterwards, a Write into it still frames
// lines (into a new slice), and the next Buffer, which may take the freed
// slice, starts empty, with nothing of the freed stream's bytes.
func TestR13_8_FreedBufferIsEmptyAndStaysUsable(t *testing.T) {
	b := New(64, LF)
	b.Write([]byte("first\npartial"))
	l, ok, err := b.Next()
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, "first", string(b.Held()[l.Start:l.End]))
	b.Free()
	assert.Empty(t, b.Held())
	assert.Equal(t, 64, b.Limit(), "the limit survives Free")

	n := New(64, LF)
	assert.Empty(t, n.Held(), "a new Buffer starts empty")
	n.Write([]byte("next\n"))
	l, ok, err = n.Next()
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, "next", string(n.Held()[l.Start:l.End]))

	b.Write([]byte("again\n"))
	l, ok, err = b.Next()
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, "again", string(b.Held()[l.Start:l.End]), "a Write after Free frames as before")
	assert.Equal(t, "next\n", string(n.Held()), "the other Buffer is untouched")
}
