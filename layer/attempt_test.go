package layer_test

import (
	"io"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/recourse-dev/recourse/layer"
)

// closeCounter is a response body that records its Close.
type closeCounter struct {
	io.Reader
	closed int
}

func (c *closeCounter) Close() error { c.closed++; return nil }

// TestCountBodyAccountsEveryByte reads two bodies of one attempt through
// CountBody: each byte is counted once as raw progress, the wrappers are
// distinct, and closing a wrapper closes its body.
func TestCountBodyAccountsEveryByte(t *testing.T) {
	a := layer.NewAttempt(layer.Identity{LogicalID: "l", AttemptID: "a", WireAttempt: 1},
		layer.RequestInfo{Operation: layer.Ordinary}, nil, nil, nil)
	first := &closeCounter{Reader: strings.NewReader("hello")}
	second := &closeCounter{Reader: strings.NewReader(" world!")}
	b1 := a.CountBody(first)
	b2 := a.CountBody(second)
	require.NotSame(t, b1, b2)

	got, err := io.ReadAll(b1)
	require.NoError(t, err)
	assert.Equal(t, "hello", string(got))
	assert.EqualValues(t, 5, a.Progress().RawBytes)
	got, err = io.ReadAll(b2)
	require.NoError(t, err)
	assert.Equal(t, " world!", string(got))
	assert.EqualValues(t, 12, a.Progress().RawBytes)

	require.NoError(t, b1.Close())
	require.NoError(t, b2.Close())
	assert.Equal(t, 1, first.closed)
	assert.Equal(t, 1, second.closed)
}
