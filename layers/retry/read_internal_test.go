package retry

import (
	"bytes"
	"errors"
	"io"
	"testing"
	"testing/iotest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestR4_9_ReadUpToKeepsEveryByteUpToTheLimit: readUpTo returns a body of
// at most max bytes whole, in any split and with or without a length hint,
// across the switch from one regrown buffer to chunks; a body of max+1
// bytes or more is over, with its first bytes kept; a read error is passed
// up with what was read.
func TestR4_9_ReadUpToKeepsEveryByteUpToTheLimit(t *testing.T) {
	gen := func(n int) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(i*7 + i>>11)
		}
		return b
	}
	const max = 3*readChunk + 100
	for _, n := range []int{0, 1, 511, 512, 513, readChunk - 1, readChunk, readChunk + 1, 2*readChunk + 5, max} {
		body := gen(n)
		for _, hint := range []int64{0, int64(n), 1000} {
			for name, r := range map[string]io.Reader{
				"whole":    bytes.NewReader(body),
				"one byte": iotest.OneByteReader(bytes.NewReader(body)),
				"half":     iotest.HalfReader(bytes.NewReader(body)),
			} {
				if name == "one byte" && n > readChunk+1 {
					continue // the same splits as "half", a million reads longer
				}
				got, over, err := readUpTo(r, max, hint)
				require.NoError(t, err, "n=%d hint=%d %s", n, hint, name)
				require.False(t, over, "n=%d hint=%d %s", n, hint, name)
				require.True(t, bytes.Equal(body, got), "n=%d hint=%d %s: %d bytes back", n, hint, name, len(got))
			}
		}
	}
	for _, n := range []int{max + 1, max + readChunk, 5 * readChunk} {
		body := gen(n)
		for _, hint := range []int64{0, max} {
			got, over, err := readUpTo(iotest.HalfReader(bytes.NewReader(body)), max, hint)
			require.NoError(t, err)
			assert.True(t, over, "n=%d hint=%d", n, hint)
			require.GreaterOrEqual(t, len(got), readChunk)
			assert.True(t, bytes.Equal(body[:len(got)], got), "the first bytes are kept")
		}
	}
	boom := errors.New("boom")
	got, over, err := readUpTo(io.MultiReader(bytes.NewReader(gen(2*readChunk)), iotest.ErrReader(boom)), max, 0)
	assert.ErrorIs(t, err, boom)
	assert.False(t, over)
	assert.True(t, bytes.Equal(gen(2*readChunk), got))
}
