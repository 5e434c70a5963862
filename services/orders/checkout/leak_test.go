package checkout

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests when a goroutine they started is
// still running once they end: a loop, worker or server that a Stop or
// Close should have ended but did not.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
