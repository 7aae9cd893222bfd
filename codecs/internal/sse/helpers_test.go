package sse

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// frameErr stops the test unless err is a *FrameError, which it returns.
func frameErr(t testing.TB, err error, msgAndArgs ...any) *FrameError {
	t.Helper()
	var fe *FrameError
	require.ErrorAs(t, err, &fe, msgAndArgs...)
	return fe
}
