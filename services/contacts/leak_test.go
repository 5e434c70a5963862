package contacts

import (
	"fmt"
	"os"
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests when a goroutine they started is
// still running once they end: a loop, worker or server that a Stop or
// Close should have ended but did not. The benchmarks' database pool,
// shared by every benchmark of the run, is closed first.
func TestMain(m *testing.M) {
	code := m.Run()
	if bench != nil {
		bench.pool.Close()
	}
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	os.Exit(code)
}
