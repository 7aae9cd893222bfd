package retry_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package if any goroutine outlives the tests: a call
// releases everything it owns when it ends (R13.5, R8.2), so every hook,
// sleep, server handler and connection a test starts must be gone when the
// tests end.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
