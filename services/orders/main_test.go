package orders

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/almoner/almoner/pkg/db"
)

// TestMain runs the suite with transaction tracking on: a processor call
// (or processor lookup) made inside a database transaction fails with
// db.ErrCalledInTransaction (txguard.go). It also fails the suite when a
// goroutine a test started (the runner, the sweeper, a server, a pool) is
// still running once the tests end: a Stop or Close that did not end it.
func TestMain(m *testing.M) {
	db.TrackTransactions()
	goleak.VerifyTestMain(m)
}
