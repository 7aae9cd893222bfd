package retry_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package if any goroutine outlives the tests (DESIGN
// invariant 5): every hook, sleep, server handler and connection a test
// starts must be gone when the tests end.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
