package orders

import (
	"os"
	"testing"

	"github.com/almoner/almoner/pkg/db"
)

// TestMain runs the suite with transaction tracking on: a processor call
// (or processor lookup) made inside a database transaction fails with
// db.ErrCalledInTransaction (txguard.go).
func TestMain(m *testing.M) {
	db.TrackTransactions()
	os.Exit(m.Run())
}
